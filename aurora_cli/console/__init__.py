"""`aurora console`: a local web page for operators, served with the operator's own NATS credentials.

- `platform.py` — the NATS side: one connection, every read and decision the page needs;
- `views.py` — pure functions rendering what was read as escaped HTML (Jinja2, autoescape);
- `routes.py` — the Starlette app: pages, fragments, server-sent events, the two POSTs;
- `guard.py` — who may talk to it: loopback binding, Host and Origin checks, the page token;
- `server.py` — binding the socket and running uvicorn.
"""
