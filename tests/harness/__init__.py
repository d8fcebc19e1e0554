"""Test harness: a real nats-server per test and real service processes."""
