"""Each agent as an A2A v1.0 server (`/agents/<id>/a2a`, its card under `/agents/<id>/.well-known/`):
A2A messages become `a2a.message.received` events, A2A tasks are Aurora's tasks (docs/guides/a2a.md)."""
