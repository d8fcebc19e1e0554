"""NATS as every service uses it: the connection, the consumer loop and consumer names, KV watches
and mirrors, publishing with acknowledgements, and the guards on what a subscription accepts."""
