"""Aurora's processes, one package each; they share only `shared/` and NATS."""
