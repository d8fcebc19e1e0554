"""One driver per target kind: playbook and llm agents, message pipelines."""
