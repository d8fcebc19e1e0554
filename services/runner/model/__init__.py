"""An llm agent's model: the OpenAI-compatible Chat Completions client, and the skills put in its
system message."""
