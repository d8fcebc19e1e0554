"""Fakes the test suite talks to over real protocols (only an OpenAI-compatible HTTP server)."""
