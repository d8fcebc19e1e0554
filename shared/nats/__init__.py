"""The NATS client as every service uses it: the connection, publishing with acknowledgements, the
guards on what a subscription accepts, admin endpoints. Below `jetstream/`, which builds on it."""
