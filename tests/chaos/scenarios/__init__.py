"""One module per family of faults; each exposes `SCENARIOS: list[Scenario]`."""
