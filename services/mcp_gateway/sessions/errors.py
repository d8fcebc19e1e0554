"""What a caller of an app session sees when a call cannot be answered."""

from __future__ import annotations

from shared.errors import AuroraError


class SessionUnavailable(AuroraError):
    """The app has no live session (not connected, restarting, or it died during the call)."""


class CallInterrupted(SessionUnavailable):
    """The app went away after the call was sent to it: it may or may not have run."""


class CallTimedOut(AuroraError):
    """The app did not answer within the call's timeout."""


class InitializeFailed(AuroraError):
    """`refused`: the app answered no (its process is restarted); `undelivered`: no process got
    the `initialize` (the session waits for one, `connecting`: the app itself failed nothing)."""

    def __init__(self, reason: str, *, refused: bool = False, undelivered: bool = False) -> None:
        super().__init__(reason)
        self.refused = refused
        self.undelivered = undelivered
