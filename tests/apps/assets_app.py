"""Test MCP app over stdio: an asset register (8 records, read-only) for the cross-system relay.

`search_assets(device_name)` finds candidate assets linked to a device name (an empty list when
none is); `get_asset_profile(asset_code)` answers one asset's profile. With `ASSETS_CALL_LOG`
set, every call is appended to that file (one JSON line: tool, arguments), so a test can count
the calls that really reached the app.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)

ASSETS: list[dict[str, Any]] = [
    {"assetCode": "AS-0001", "name": "Circulation pump P-101", "device_name": "Pump P-101", "site": "Plant A",
     "location": "Hall 2, line 3", "owner": "Maintenance team A", "model": "KSB Etanorm 80", "installed": "2019-04-02"},
    {"assetCode": "AS-0002", "name": "Circulation pump P-102", "device_name": "Pump P-102", "site": "Plant A",
     "location": "Hall 2, line 4", "owner": "Maintenance team A", "model": "KSB Etanorm 80", "installed": "2019-04-02"},
    {"assetCode": "AS-0003", "name": "Compressor C-3", "device_name": "Compressor C-3", "site": "Plant A",
     "location": "Hall 1", "owner": "Utilities", "model": "Atlas Copco GA 37", "installed": "2020-01-15"},
    {"assetCode": "AS-0004", "name": "Conveyor belt B-7", "device_name": "Conveyor B-7", "site": "Plant B",
     "location": "Packing", "owner": "Logistics", "model": "Interroll 1700", "installed": "2021-06-30"},
    {"assetCode": "AS-0005", "name": "Boiler K-1", "device_name": "Boiler K-1", "site": "Plant B",
     "location": "Boiler house", "owner": "Utilities", "model": "Viessmann Vitomax", "installed": "2018-10-10"},
    {"assetCode": "AS-0006", "name": "Chiller CH-2", "device_name": "Chiller CH-2", "site": "Plant B",
     "location": "Roof", "owner": "Utilities", "model": "Carrier 30XA", "installed": "2022-03-01"},
    {"assetCode": "AS-0007", "name": "Mixer M-4", "device_name": "Mixer M-4", "site": "Plant A",
     "location": "Hall 3", "owner": "Production", "model": "Ekato Paravisc", "installed": "2017-07-07"},
    {"assetCode": "AS-0008", "name": "Press PR-1", "device_name": "Press PR-1", "site": "Plant B",
     "location": "Hall 5", "owner": "Production", "model": "Schuler MSD 400", "installed": "2016-02-20"},
]

def _called(tool: str, **arguments: Any) -> None:
    path = os.environ.get("ASSETS_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


server = MCPServer("aurora-test-assets", version="0.1.0", instructions="Asset register (test data).")


@server.tool(annotations=READ)
def search_assets(device_name: str) -> dict[str, Any]:
    """Assets linked to the device named `device_name`: `items` (assetCode, name), maybe empty."""
    _called("search_assets", device_name=device_name)
    items = [{"assetCode": a["assetCode"], "name": a["name"]} for a in ASSETS if a["device_name"] == device_name]
    return {"items": items, "count": len(items)}


@server.tool(annotations=READ)
def get_asset_profile(asset_code: str) -> dict[str, Any]:
    """The profile of asset `asset_code`: name, site, location, owner, model, install date."""
    _called("get_asset_profile", asset_code=asset_code)
    for asset in ASSETS:
        if asset["assetCode"] == asset_code:
            return asset
    raise ToolError(f"no asset {asset_code!r}")


if __name__ == "__main__":
    anyio.run(server.run_stdio_async)
