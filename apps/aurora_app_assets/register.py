"""The asset register's 8 records, linked to device names (pure; no HTTP).

`Pump P-101` is linked to two assets (the pump and its drive motor: a search must ask which),
`Fan F-9` to none (a search finds nothing, and nothing is invented), the rest to one each.
"""

from __future__ import annotations

from typing import Any

ASSETS: tuple[dict[str, Any], ...] = (
    {"assetCode": "AS-0001", "name": "Circulation pump P-101 (pump body)", "deviceName": "Pump P-101",
     "site": "Plant A", "location": "Hall 2, line 3", "owner": "Maintenance team A", "model": "KSB Etanorm 80",
     "installed": "2019-04-02"},
    {"assetCode": "AS-0002", "name": "Drive motor of pump P-101", "deviceName": "Pump P-101", "site": "Plant A",
     "location": "Hall 2, line 3", "owner": "Electrical team", "model": "Siemens 1LE1 15 kW",
     "installed": "2021-09-14"},
    {"assetCode": "AS-0003", "name": "Screw compressor C-3", "deviceName": "Compressor C-3", "site": "Plant A",
     "location": "Hall 1", "owner": "Utilities", "model": "Atlas Copco GA 37", "installed": "2020-01-15"},
    {"assetCode": "AS-0004", "name": "Conveyor belt B-7", "deviceName": "Conveyor B-7", "site": "Plant B",
     "location": "Packing", "owner": "Logistics", "model": "Interroll 1700", "installed": "2021-06-30"},
    {"assetCode": "AS-0005", "name": "Boiler K-1", "deviceName": "Boiler K-1", "site": "Plant B",
     "location": "Boiler house", "owner": "Utilities", "model": "Viessmann Vitomax", "installed": "2018-10-10"},
    {"assetCode": "AS-0006", "name": "Chiller CH-2", "deviceName": "Chiller CH-2", "site": "Plant B",
     "location": "Roof", "owner": "Utilities", "model": "Carrier 30XA", "installed": "2022-03-01"},
    {"assetCode": "AS-0007", "name": "Mixer M-4", "deviceName": "Mixer M-4", "site": "Plant A",
     "location": "Hall 3", "owner": "Production", "model": "Ekato Paravisc", "installed": "2017-07-07"},
    {"assetCode": "AS-0008", "name": "Press PR-1", "deviceName": "Press PR-1", "site": "Plant B",
     "location": "Hall 5", "owner": "Production", "model": "Schuler MSD 400", "installed": "2016-02-20"},
)


def search(device_name: str) -> dict[str, Any]:
    """Candidates linked to the device name (exact, case-insensitive): `items` of assetCode and name."""
    wanted = device_name.strip().casefold()
    items = [{"assetCode": a["assetCode"], "name": a["name"]} for a in ASSETS if a["deviceName"].casefold() == wanted]
    return {"deviceName": device_name, "items": items, "count": len(items)}


def profile(asset_code: str) -> dict[str, Any] | None:
    return next((dict(a) for a in ASSETS if a["assetCode"] == asset_code), None)
