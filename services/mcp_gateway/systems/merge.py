"""Re-importing a document: how an imported draft updates the stored tool of the same name (pure).

The import owns the imported fields of a DRAFT, except the wording a reviewer gave (`edited`, aurora
tools edit); a tool under review, published or deprecated is never touched by an import, and
neither is a tool of another system or a hand-written one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from services.mcp_gateway.pool.wording import apply_wording
from shared.contracts.tooldef import ToolDefinition


@dataclass(frozen=True)
class MergeDecision:
    action: Literal["create", "update", "unchanged", "kept"]
    tool: ToolDefinition | None  # what to store (None: leave the stored tool as it is)
    reason: str


_IMPORTED_FIELDS = ("system", "description", "input_schema", "output_schema", "execution", "side_effect",
                    "missing", "source")


def plan_merge(existing: ToolDefinition | None, imported: ToolDefinition, *,
               fields: tuple[str, ...] = _IMPORTED_FIELDS, origin: str = "OpenAPI") -> MergeDecision:
    """What re-importing `imported` does to the stored tool of the same name: a DRAFT imported from
    the same system's `origin` takes the changed `fields`; anything else stays as it is."""
    if existing is None:
        return MergeDecision("create", imported, "new draft")
    if existing.source != imported.source or existing.system != imported.system:
        return MergeDecision("kept", None, f"left as is: not imported from system {imported.system}'s {origin}")
    if existing.state != "DRAFT":
        return MergeDecision("kept", None, f"left as is: {existing.state}")
    imported = apply_wording(imported, existing.edited)  # a reviewer's wording stands over the document's
    changes = {f: getattr(imported, f) for f in fields if getattr(existing, f) != getattr(imported, f)}
    if not changes:
        return MergeDecision("unchanged", existing, "unchanged")
    updated = existing.model_copy(update={**changes, "version": existing.version + 1,
                                          "changed_at": imported.changed_at, "changed_by": imported.changed_by})
    return MergeDecision("update", updated, f"updated to version {updated.version}: {', '.join(sorted(changes))}")


def merge_draft(existing: ToolDefinition | None, imported: ToolDefinition) -> ToolDefinition | None:
    """The definition to store after a re-import, or None when a non-DRAFT tool must stay as it is."""
    return plan_merge(existing, imported).tool
