"""The router: picks exactly one pipeline or agent for every event and dispatches a run."""
