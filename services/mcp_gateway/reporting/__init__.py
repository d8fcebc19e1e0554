"""What the gateway reports, off the call path: audit records and `tool.*` events (`reports`),
its own `system.*` and `approval.*` events (`platform_events`), sent through ordered outboxes."""
