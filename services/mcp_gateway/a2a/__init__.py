"""Remote A2A agents as tools in the pool: the Agent Card read into an `a2a` System and one DRAFT
tool per skill (`card`, `imports`), and a call of such a tool as an A2A conversation followed to
its end (`executor`, over `remote_task`, with the official `a2a-sdk` client)."""
