"""Runner tests against a real nats-server and the real service processes."""
