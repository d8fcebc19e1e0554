"""`make chaos`: the real processes under load while faults are injected, one table of outcomes."""
