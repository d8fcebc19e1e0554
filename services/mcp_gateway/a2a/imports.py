"""Importing a card again: how a drafted skill updates the stored tool of the same name (pure).

As for OpenAPI imports (`systems/merge.py`): the import owns a DRAFT's imported fields but not a
reviewer's wording; a tool under review, published or deprecated, another system's tool and a
hand-written one are left as they are.
"""

from __future__ import annotations

from services.mcp_gateway.systems.merge import MergeDecision, plan_merge
from shared.contracts.tooldef import ToolDefinition

_IMPORTED_FIELDS = ("system", "description", "input_schema", "execution", "missing", "capability", "source")


def plan_skill_merge(existing: ToolDefinition | None, imported: ToolDefinition) -> MergeDecision:
    """What importing the skill `imported` again does to the stored tool of the same name. The
    side effect is the reviewer's to set: an import never changes it back (not among the fields)."""
    return plan_merge(existing, imported, fields=_IMPORTED_FIELDS, origin="Agent Card")
