"""Importing a card again: how a drafted skill updates the stored tool of the same name (pure).

As for OpenAPI imports (`systems/merge.py`): the import owns a DRAFT's imported fields but not a
reviewer's wording; a tool under review, published or deprecated, another system's tool and a
hand-written one are left as they are.
"""

from __future__ import annotations

from services.mcp_gateway.pool.wording import apply_wording
from services.mcp_gateway.systems.merge import MergeDecision
from shared.contracts.tooldef import ToolDefinition

_IMPORTED_FIELDS = ("system", "description", "input_schema", "execution", "missing", "capability", "source")


def plan_skill_merge(existing: ToolDefinition | None, imported: ToolDefinition) -> MergeDecision:
    """What importing the skill `imported` again does to the stored tool of the same name. The
    side effect is the reviewer's to set: an import never changes it back."""
    if existing is None:
        return MergeDecision("create", imported, "new draft")
    if existing.source != "a2a" or existing.system != imported.system:
        return MergeDecision("kept", None, f"left as is: not imported from system {imported.system}'s Agent Card")
    if existing.state != "DRAFT":
        return MergeDecision("kept", None, f"left as is: {existing.state}")
    imported = apply_wording(imported, existing.edited)
    changes = {f: getattr(imported, f) for f in _IMPORTED_FIELDS if getattr(existing, f) != getattr(imported, f)}
    if not changes:
        return MergeDecision("unchanged", existing, "unchanged")
    updated = existing.model_copy(update={**changes, "version": existing.version + 1,
                                          "changed_at": imported.changed_at, "changed_by": imported.changed_by})
    return MergeDecision("update", updated, f"updated to version {updated.version}: {', '.join(sorted(changes))}")
