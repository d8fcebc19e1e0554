"""The tool pool: tool definitions, their lifecycle, agents' available sets, approvals, audit."""
