"""`aurora console`: a local web page for operators, acting as the person signed in to it.

- `sessions.py` — sign-in and sign-out: one session per person, each with their own NATS connection;
- `platform.py` — the NATS side of one session: every read and decision the page needs, as its person;
- `views.py` — pure functions rendering what was read as escaped HTML (Jinja2, autoescape);
- `routes.py` — the Starlette app: sign-in, pages, fragments, server-sent events, the POSTs;
- `guard.py` — who may talk to it: loopback binding, Host and Origin checks, the session's token;
- `server.py` — binding the socket and running uvicorn.
"""
