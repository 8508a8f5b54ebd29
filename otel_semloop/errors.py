"""One exception hierarchy, rooted in :class:`SemloopError`; subclasses say what failed."""

from __future__ import annotations


class SemloopError(Exception):
    """Base class of every error otel-semloop raises on purpose."""


class ConfigError(SemloopError, ValueError):
    """A constructor argument or ``SEMLOOP_*`` environment variable has a bad value."""


class OTLPDecodeError(SemloopError, ValueError):
    """Input is not valid OTLP. ``where`` names the place (file:line, field path)."""

    def __init__(self, message: str, where: str = "") -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class StartupError(SemloopError):
    """The service cannot start on what it finds (a durable queue emptied, replaced or
    corrupt): one line saying what and what to do; ``serve`` exits 2."""


class LoopDetected(SemloopError):
    """Raised by the live guard in the agent's own thread to stop a looping run.

    ``finding`` is the conclusive finding and ``action`` the policy's action.
    """

    def __init__(self, finding: object, action: object) -> None:
        self.finding = finding
        self.action = action
        describe = getattr(finding, "describe", None)
        super().__init__(describe() if callable(describe) else str(finding))
