"""Event-bridge settings from the environment, validated before the bridge connects."""

from __future__ import annotations

import os
from collections.abc import Mapping

from services.event_bridge.bridge import BridgeConfig
from shared.config.settings import read_int


def load_event_bridge_settings(env: Mapping[str, str] | None = None) -> BridgeConfig:
    """AURORA_BRIDGE_BATCH (signals fetched at once, 256)."""
    env = os.environ if env is None else env
    return BridgeConfig(batch=read_int(env, "AURORA_BRIDGE_BATCH", 256, minimum=1))
