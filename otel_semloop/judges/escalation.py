"""When to ask the judge: ``never``, ``undecided``, ``always``, or a sample rate.

A judge call costs time and money; most traces need none. The deterministic detectors
decide a trace when they find a conclusive loop with proof of no progress (``loop``: a
judge cannot make it less severe, so asking changes nothing) or find no evidence at all
(a clean ``no_loop``: no warning, and deepeval's lexical metric silent too). Everything in
between is *undecided* and worth a judge's reading: a ``suspected`` loop, a warning, or
a lexical sub-signal that fired (a template-worded but productive run, a paraphrase).

``undecided`` judges only those. A rate ``r`` in (0, 1) judges the undecided ones and a
fraction ``r`` of the others, picked by a hash of the trace id (so every replica and every
rerun picks the same traces). ``always`` is rate 1; ``never`` judges nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from otel_semloop.errors import ConfigError
from otel_semloop.verdict import Label, Verdict

__all__ = ["Escalation", "is_undecided"]


def is_undecided(verdict: Verdict) -> bool:
    """True when the deterministic verdict leaves the trace undecided (see the module doc)."""
    if verdict.label is Label.LOOP or verdict.label is Label.UNSCORED:
        return False
    if verdict.label is Label.SUSPECTED or verdict.findings:
        return True
    lexical = verdict.lexical
    return lexical is not None and any(value < 1.0 for value in lexical.breakdown.values())


@dataclass(frozen=True, slots=True)
class Escalation:
    mode: str = "undecided"
    rate: float = 0.0

    @classmethod
    def parse(cls, value: str | float | None) -> Escalation:
        if value is None or value == "":
            return cls()
        if isinstance(value, str):
            word = value.strip().lower()
            if word in ("never", "undecided", "always"):
                return cls(word, {"never": 0.0, "undecided": 0.0, "always": 1.0}[word])
            try:
                value = float(word)
            except ValueError:
                raise ConfigError(
                    f"escalate must be never, undecided, always or a rate in [0, 1], not {value!r}"
                ) from None
        rate = float(value)
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"escalation rate must be in [0, 1], not {rate}")
        if rate == 1.0:
            return cls("always", 1.0)
        return cls("rate" if rate > 0 else "undecided", rate)

    def should_judge(self, trace_id: str, deterministic: Verdict) -> bool:
        if self.mode == "never" or deterministic.label is Label.UNSCORED:
            return False
        if self.mode == "always":
            return True
        if is_undecided(deterministic):
            return True
        if self.rate <= 0.0:
            return False
        digest = hashlib.sha256(trace_id.encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.rate
