"""The runner: pulls runs, drives agents and pipelines, keeps durable tasks (`python -m services.runner`).

Any number of runner processes share one durable pull consumer on the runs queue (`worker`).
Each run becomes a task in KV under its run id, created once (at the run's first durable change:
a run that ends at once is one revision) and changed only by compare-and-set (`tasks`,
`statemachine`); the task, not the run message, is the truth. A run is driven by its
target's driver (`drivers/`: playbook, llm, the message pipeline), every tool call goes through
the gateway (`toolclient`, `steps`), and the final answer is delivered with `event_reply` only
when the run has a reply target (`executor`).

What makes a crash harmless: reads and model turns may be repeated, so they are written with the
next durable change; a write is claimed before its call — in an llm run (and for a call made again
after a recorded outcome) by its `started` record, in a playbook or a pipeline's text stages by
the gateway's call ledger alone: a write's first call has the same call id in every attempt, so a
resumed attempt that makes it again gets the ledger's answer (never sent: it runs; sent: its
result; sent with other arguments: refused, the task `unverified`). A task resumed from its log
(another runner, after the ack wait) reuses every recorded outcome and looks up each write left
`started` (or in doubt at the gateway) — the ledger under that call id, its audit, then the
step's read-back — and is `unverified`, saying what to check, only when none knows (`recovery`). Approvals: a
write answered `needs_approval` parks the task (`awaiting_approval`) and acks the run;
`TaskExecutor.resume_task` continues it with the granted approval. A task is taken from the runner
running it only when the message that started or resumed it came again (that runner stopped
acking it); any other resume of a running task leaves it to its runner.
"""
