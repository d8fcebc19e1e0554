"""The asset register demo system: a plain HTTP service with its own OpenAPI document."""
