"""Settings a service reads once at start-up: the environment, env files, and `apps/config.yml`."""
