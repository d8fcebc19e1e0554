"""The scheduler: `schedule.triggered` events from `kind: Schedule`, on JetStream timers."""
