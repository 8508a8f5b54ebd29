"""Judge configuration shared by every front door: the same names in rescore, serve and the
processor, each with a ``SEMLOOP_JUDGE*`` variable (``judge`` is ``SEMLOOP_JUDGE``, the
prices ``SEMLOOP_JUDGE_INPUT_PRICE`` and ``SEMLOOP_JUDGE_OUTPUT_PRICE``, the others
``SEMLOOP_JUDGE_<OPTION>``; ``docs/judge.md`` lists them with their defaults).

Read by :mod:`otel_semloop.settings` like every other configuration: a bad value raises
:class:`~otel_semloop.errors.ConfigError` at construction naming the variable or option,
and the order is defaults, then variables, then explicit options (flags). The backend name
also accepts ``jev``, ``systemone`` and ``off``. Keys come from the environment only
(``TYPESAFE_API_KEY``, ``OPENAI_API_KEY``), never from a flag, so they stay out of the
process list and shell history.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_semloop.errors import ConfigError
from otel_semloop.judges.escalation import Escalation
from otel_semloop.settings import load, setting, validate

if TYPE_CHECKING:
    from otel_semloop.judges.judge import Judge

# The judge itself (asyncio, sqlite3) is imported where one is made, not with the flags and
# settings every rescore and serve reads (see otel_semloop.judges).

__all__ = ["BACKENDS", "ENV_PREFIX", "Backend", "JudgeSettings", "make_judge", "scorer_with_judge"]

#: Prefix of the judge's environment variables (the backend itself is ``SEMLOOP_JUDGE``).
ENV_PREFIX = "SEMLOOP_JUDGE_"


class Backend(enum.Enum):
    """The judge backends by name; other spellings people use are accepted too."""

    SYSTEM_ONE = "system-one"
    OPENAI = "openai"
    LOCAL = "local"
    NONE = "none"

    @classmethod
    def _missing_(cls, value: object) -> Backend | None:
        word = str(value).strip().lower()
        word = {"systemone": "system-one", "system_one": "system-one", "jev": "system-one"}.get(word, word)
        word = {"off": "none", "": "none"}.get(word, word)
        return next((member for member in cls if member.value == word), None)


BACKENDS = tuple(member.value for member in Backend)


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """The judge options (see the module doc), read like every other configuration by
    :mod:`otel_semloop.settings`: a bad value raises :class:`ConfigError` at construction,
    naming the variable or option it came from. ``judge`` is kept as the backend's name."""

    judge: str = setting("none", kind="choice", choices=Backend, env="SEMLOOP_JUDGE")
    escalate: str = setting("undecided", kind="str")
    model: str | None = setting(None, kind="str", optional=True)
    base_url: str | None = setting(None, kind="str", optional=True)
    timeout: float = setting(10.0, kind="float", above=0)
    concurrency: int = setting(8, kind="int", minimum=1)
    cache: str | None = setting(None, kind="str", optional=True)
    input_usd_per_million: float = setting(0.0, kind="float", minimum=0, env="SEMLOOP_JUDGE_INPUT_PRICE")
    output_usd_per_million: float = setting(0.0, kind="float", minimum=0, env="SEMLOOP_JUDGE_OUTPUT_PRICE")

    def __post_init__(self) -> None:
        object.__setattr__(self, "escalate", _escalation_text(self.escalate))
        validate(self, "JudgeSettings.")
        object.__setattr__(self, "judge", Backend(self.judge).value)
        Escalation.parse(self.escalate)

    @property
    def enabled(self) -> bool:
        return self.judge != "none"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> JudgeSettings:
        """Defaults, then ``SEMLOOP_JUDGE*`` variables, then ``overrides`` that are not None."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if "escalate" in given:
            given["escalate"] = _escalation_text(given["escalate"])
        return load(cls, prefix=ENV_PREFIX, environ=environ, layers=[("", given)], label="judge: ")


def _escalation_text(value: Any) -> Any:
    """A sample rate given as a number, as the text the setting holds (``0.25``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}"
    return value


def make_judge(settings: JudgeSettings, backend: Any = None) -> Judge | None:
    """The configured :class:`Judge`, or None for ``none``. ``backend`` overrides the
    named one (tests, the benchmark's scripted oracle)."""
    if backend is None:
        if not settings.enabled:
            return None
        backend = _backend(settings)
    from otel_semloop.judges.cache import AnswerCache
    from otel_semloop.judges.judge import Judge

    cache = AnswerCache(settings.cache) if settings.cache else AnswerCache()
    return Judge(backend, cache=cache, timeout=settings.timeout)


def _backend(settings: JudgeSettings) -> Any:
    if settings.judge in (Backend.SYSTEM_ONE.value, Backend.OPENAI.value):
        try:
            import httpx  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"the {settings.judge} judge needs httpx: pip install 'otel-semloop[judge]'"
            ) from None
    options = {
        "base_url": settings.base_url,
        "model": settings.model,
        "timeout": settings.timeout,
        "max_concurrency": settings.concurrency,
    }
    if settings.judge == "system-one":
        from otel_semloop.judges.backends.system_one import SystemOneBackend

        return SystemOneBackend(**options)
    if settings.judge == "openai":
        from otel_semloop.judges.backends.openai import OpenAIBackend

        return OpenAIBackend(
            input_usd_per_million=settings.input_usd_per_million,
            output_usd_per_million=settings.output_usd_per_million,
            **options,
        )
    from otel_semloop.judges.backends.local import LocalBackend

    return LocalBackend()


def scorer_with_judge(
    judge: Any,
    base: Any = None,
    *,
    budget_seconds: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> Any:
    """The scorer a front door uses for its ``judge`` option: ``base`` (default
    :class:`~otel_semloop.scoring.Scorer`) with the judge, or ``base`` itself when none is
    configured.

    ``judge`` is None (read ``SEMLOOP_JUDGE*``; nothing is sent unless it names a judge), a
    backend name (``"local"``, ``"system-one"``, ``"openai"``, ``"none"``; the other options
    from the environment), a :class:`JudgeSettings`, a :class:`~otel_semloop.judges.judge.Judge`,
    or a backend object. ``budget_seconds`` is the front door's scoring budget: the judged
    scorer stops waiting for the judge just before it ends, so the deterministic verdict
    goes out in time.
    """
    from otel_semloop.judges.judge import Judge
    from otel_semloop.judges.scorer import JudgedScorer
    from otel_semloop.scoring import Scorer

    base = base if base is not None else Scorer()
    if isinstance(judge, JudgeSettings):
        settings = judge
    else:
        settings = JudgeSettings.from_env(environ, judge=judge if isinstance(judge, str) else None)
    if not isinstance(judge, Judge):
        backend = None if judge is None or isinstance(judge, (str, JudgeSettings)) else judge
        judge = make_judge(settings, backend)
        if judge is None:
            return base
    return JudgedScorer(judge, base=base, escalate=settings.escalate, budget_seconds=budget_seconds)


def add_judge_arguments(parser: Any) -> None:
    """The judge flags every command shares (``rescore``, ``serve``); each defaults to its
    ``SEMLOOP_JUDGE*`` variable. Keys are read from the environment only."""
    group = parser.add_argument_group("semantic judge (nothing is sent unless --judge names one)")
    group.add_argument(
        "--judge",
        choices=BACKENDS,
        help="ask a decision model about each agent trace, one request per trace: system-one "
        "(TYPESAFE_API_KEY, TYPESAFE_BASE_URL), openai (OPENAI_API_KEY, OPENAI_BASE_URL; any "
        "compatible server), local (offline embeddings, the local-judge extra) or none (default; "
        "SEMLOOP_JUDGE)",
    )
    group.add_argument(
        "--escalate",
        metavar="never|undecided|always|RATE",
        help="which traces the judge reads: undecided (default: those the detectors leave "
        "undecided), always, never, or a rate in (0, 1) that also samples the rest by trace id",
    )
    group.add_argument("--judge-model", metavar="NAME", help="model name")
    group.add_argument("--judge-base-url", metavar="URL", help="judge endpoint base URL")
    group.add_argument("--judge-timeout", type=float, metavar="SECONDS", help="per request (default 10)")
    group.add_argument("--judge-concurrency", type=int, metavar="N", help="requests in flight (8)")
    group.add_argument(
        "--judge-cache",
        metavar="FILE",
        help="keep answers in this SQLite file (hashes and answers only) so rescoring costs nothing",
    )


def settings_from_args(args: Any, environ: Mapping[str, str] | None = None) -> JudgeSettings:
    """:class:`JudgeSettings` from :func:`add_judge_arguments` flags over ``SEMLOOP_JUDGE*``."""
    return JudgeSettings.from_env(
        environ,
        judge=getattr(args, "judge", None),
        escalate=getattr(args, "escalate", None),
        model=getattr(args, "judge_model", None),
        base_url=getattr(args, "judge_base_url", None),
        timeout=getattr(args, "judge_timeout", None),
        concurrency=getattr(args, "judge_concurrency", None),
        cache=getattr(args, "judge_cache", None),
    )
