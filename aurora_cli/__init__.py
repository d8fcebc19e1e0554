"""The `aurora` operator CLI and the local (no Docker) stack launcher."""
