"""A run's steps: tool steps through the gateway (`tool_steps`), their results in the step log,
secret arguments sealed in it, and waiting for a target that is not there (`retry`)."""
