"""The asset register's HTTP routes (Starlette); the data is `register`'s."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from . import register

OPENAPI = Path(__file__).with_name("openapi.yaml")


async def search(request: Request) -> Response:
    name = request.query_params.get("deviceName", "")
    if not name.strip():
        return JSONResponse({"error": "query parameter deviceName is required, e.g. ?deviceName=Pump%20P-101"},
                            status_code=400)
    return JSONResponse(register.search(name))


async def profile(request: Request) -> Response:
    code = request.path_params["assetCode"]
    found = register.profile(code)
    if found is None:
        return JSONResponse({"error": f"no asset {code!r}"}, status_code=404)
    return JSONResponse(found)


async def openapi(_: Request) -> Response:
    return PlainTextResponse(OPENAPI.read_text(encoding="utf-8"), media_type="application/yaml")


async def healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok", "assets": len(register.ASSETS)})


def asgi_app() -> Starlette:
    return Starlette(routes=[
        Route("/assets", search), Route("/assets/{assetCode}", profile),
        Route("/openapi.yaml", openapi), Route("/healthz", healthz),
    ])
