"""Judge backends: System One, OpenAI-compatible chat completions, scripted, local offline."""

from otel_semloop.judges.backends.scripted import ScriptedBackend, by_kind

__all__ = ["ScriptedBackend", "by_kind"]
