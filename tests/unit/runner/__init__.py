"""Unit tests of the runner: pure parts, no NATS."""
