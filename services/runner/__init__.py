"""The runner: pulls runs, drives agents and pipelines, keeps durable tasks (`python -m services.runner`)."""
