"""The gateway's MCP client sessions: one per app instance (`session`), what a session's changes
mean to the rest of the gateway (`listener`), a call on one connection attempt and what its
failures mean (`calls`), how a session's waits end (`waits`), and the errors callers see (`errors`)."""
