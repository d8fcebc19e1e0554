"""Serve the asset register: `python -m apps.aurora_app_assets [--host H] [--port P]`.

`GET /assets?deviceName=…`, `GET /assets/{assetCode}`, its OpenAPI document at
`GET /openapi.yaml` and `GET /healthz`. Aurora reaches it as an HTTP system whose tools come
from that document (OpenAPI import, review, publish: deploy/demo/assets-tools.yml).
"""

from __future__ import annotations

import argparse
import os

import uvicorn

from .http import asgi_app

DEFAULT_PORT = 8766


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default=os.environ.get("AURORA_ASSETS_HOST") or "127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("AURORA_ASSETS_PORT") or DEFAULT_PORT))
    parser.add_argument("--log-level", default="warning", help="uvicorn log level")
    args = parser.parse_args()
    uvicorn.run(asgi_app(), host=args.host, port=args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
