"""Approvals: the store in KV (`store`), who may decide (`deciders`), and the question asked in
the chat the event came from (`in_chat`). The step that asks is `calls/approval_gate.py`."""
