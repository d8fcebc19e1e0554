"""Durable tasks: the store in KV (`store`, compare-and-set only), its pure state changes
(`statemachine`), the `task.*` events, what waits resume on (`resumer`, `approval_decisions`,
`interactions`), a resumed task's recovery (`recovery`, `call_audit`), and the notices at its end."""
