"""First-look batches: situations written blind, before they are ever scored.

Each ``batchN/situations.py`` keeps its own registry (never the corpus's own), made with
:func:`registrar`, and the generator (``python -m bench.corpus.generate --batch
bench/corpus/first_look/batchN``) writes the batch's traces, labels and README beside it.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.corpus.kit import Kit
from bench.corpus.runs import Run
from bench.corpus.situations import Situation

Build = Callable[[Kit], Run]


def registrar(
    registry: dict[str, Situation],
) -> Callable[..., Callable[[Build], Build]]:
    """A ``situation(...)`` decorator like the corpus's, registering into ``registry``."""

    def situation(
        id: str,
        label: str,
        title: str,
        sources: tuple[str, ...],
        why: str,
        lookalike_of: tuple[str, ...] = (),
    ) -> Callable[[Build], Build]:
        def register(build: Build) -> Build:
            if id in registry:
                raise ValueError(f"duplicate situation {id}")
            registry[id] = Situation(id, label, title, sources, why, build, lookalike_of)
            return build

        return register

    return situation
