"""Whether and how a step failed: :func:`classify_failure` and what a failure says.

:func:`classify_failure` says whether a step failed and how: ``transient`` (429, 5xx,
timeouts: retrying may help), ``permanent`` (401, 403, 404, invalid arguments: retrying
the same call cannot help) or ``other``, with a low-cardinality class label (an exception
type, an HTTP status, or a digest of the masked first line of the message).
:func:`failure_identity` is what a failed tool step's message says, as compared across
calls. Pure functions of the step, like everything in
:mod:`otel_semloop.detectors.normalize`, whose masks they use.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from otel_semloop.detectors.normalize import digest, normalize_result
from otel_semloop.model import Step, StepKind

__all__ = [
    "PERMANENT_STATUSES",
    "TRANSIENT_STATUSES",
    "Failure",
    "FailureKind",
    "classify_failure",
    "failure_identity",
]


class FailureKind(str, enum.Enum):
    TRANSIENT = "transient"
    PERMANENT = "permanent"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Failure:
    """How a step failed: its kind and a low-cardinality class label (an exception type,
    an HTTP status, or a digest of the masked first line of the message)."""

    kind: FailureKind
    label: str


#: HTTP statuses worth retrying (OTLP's own retry list plus 408/425/500 and Anthropic's
#: 529 "overloaded").
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 529})
#: HTTP statuses that the same request will keep getting.
PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 405, 422})

_STATUS = re.compile(
    r"(?:\bstatus(?:[ _-]?code)?|\bhttp(?:/\d(?:\.\d)?)?|\berror(?:[ _-]?code)?|\bcode|^)\W{0,3}([45]\d\d)\b",
    re.IGNORECASE,
)
_TRANSIENT_WORDS = re.compile(
    r"rate.?limit|too.?many.?requests|time.?out|timed.?out|temporar|unavailable|overload|"
    r"connection.?(?:reset|refused|error|aborted)|econnreset|etimedout|"
    r"deadline.?exceeded|resource.?exhausted|internal.?server|bad.?gateway|throttl",
    re.IGNORECASE,
)
#: "Try again" alone: a rate limit says it, and so does a validation error ("fix the
#: errors and try again"); it makes a failure transient only when nothing says permanent.
_RETRY_WORDS = re.compile(r"try.?again", re.IGNORECASE)
_PERMANENT_WORDS = re.compile(
    r"unauthori[sz]ed|forbidden|permission.?denied|access.?denied|authenticat|"
    r"invalid.?(?:argument|request|param|input|api.?key|value)|validation.?error|bad.?request|"
    r"not.?found.?error|notfound|unprocessable|schema",
    re.IGNORECASE,
)
#: A tool result starting with one of these words is a failure even when the span's status
#: says nothing: many tools report errors as text.
_ERROR_RESULT = re.compile(r"^\s*(?:error|exception|traceback|fatal)\b", re.IGNORECASE)
#: The characters :data:`_ERROR_RESULT` can match first after the blanks (``\s`` is what
#: ``str.lstrip`` strips, and these six are all that match ``e``, ``t`` or ``f`` ignoring
#: case): a result starting otherwise, nearly every one, is not matched against it (a
#: third of a tool step's failure check). ``tests/detectors/test_fast_paths.py`` checks both
#: over every code point.
_ERROR_FIRST = frozenset("eEtTfF")
#: Characters of an error message inspected: the class is in the first line.
_ERROR_CHARS = 300
#: A tool result that reports a failure in another shape than a leading ``error`` word: an
#: HTTP error status with its reason phrase (``429 Too Many Requests``, ``HTTP/1.1 503
#: Service Unavailable``), or a JSON object whose first key is ``error``/``errors``
#: holding something (``{"error": {"code": 429, ...}}``). A leading number alone is not
#: enough (``404 files found``, ``500 rows exported`` are answers).
_ERROR_DOCUMENT = re.compile(
    r"""^\s*(?:
        (?:http/[\d.]+\s+)?[45]\d\d\s*[:-]?\s*(?:too\s+many\s+requests|rate.?limit|service\s+unavailable|
            bad\s+gateway|gateway\s+time-?out|internal\s+server\s+error|not\s+found|unauthori[sz]ed|
            forbidden|bad\s+request|request\s+time-?out|quota)
        |\{\s*"errors?"\s*:\s*(?:\{|\[\s*[{"]|"[^"]|true)
    )""",
    re.IGNORECASE | re.VERBOSE,
)
#: The characters :data:`_ERROR_DOCUMENT` can match first after the blanks.
_DOCUMENT_FIRST = frozenset("{45hH")


def classify_failure(step: Step, result_text: str = "") -> Failure | None:
    """How ``step`` failed, or None when it did not.

    A step failed when its span says so (``is_error``) or, for a tool, when its result
    text starts with ``error``, ``exception``, ``traceback`` or ``fatal``, with an HTTP
    error status and its reason phrase, or is a JSON object led by an ``error`` key
    (:data:`_ERROR_DOCUMENT`; a decoded object: one holding a non-empty ``error``). The
    kind comes
    from an HTTP status in the type or message, then from words ("rate limit", "timed
    out" are transient; "unauthorized", "invalid argument", "validation error" are
    permanent; a bare "try again" is transient only when nothing says permanent); the
    first match wins in that order, and anything else is ``other``.
    """
    failed = step.is_error
    if not failed and step.kind is StepKind.TOOL and result_text:
        first = result_text.lstrip()[:1]
        if first in _ERROR_FIRST:
            failed = _ERROR_RESULT.match(result_text) is not None
        elif first in _DOCUMENT_FIRST:
            result = step.tool_result
            if isinstance(result, dict):  # (its text has sorted keys: ask the object)
                failed = bool(result.get("error") or result.get("errors"))
            else:
                failed = _ERROR_DOCUMENT.match(result_text) is not None
    if not failed:
        return None
    error_type = step.error_type.rsplit(".", 1)[-1].strip()
    message = (step.error_message or result_text or "")[:_ERROR_CHARS]
    text = f"{error_type} {message}"
    status_match = _STATUS.search(error_type) or _STATUS.search(message)
    status = int(status_match.group(1)) if status_match else None
    if status in TRANSIENT_STATUSES:
        kind = FailureKind.TRANSIENT
    elif status in PERMANENT_STATUSES:
        kind = FailureKind.PERMANENT
    elif _TRANSIENT_WORDS.search(text):
        kind = FailureKind.TRANSIENT
    elif _PERMANENT_WORDS.search(text):
        kind = FailureKind.PERMANENT
    elif _RETRY_WORDS.search(text):
        kind = FailureKind.TRANSIENT
    else:
        kind = FailureKind.OTHER
    if error_type or status is not None:
        label = " ".join(part for part in (error_type, f"http {status}" if status else "") if part)
    else:
        first_line = normalize_result(message.split("\n", 1)[0])
        label = f"message {digest(first_line):016x}"
    return Failure(kind, label)


def failure_identity(step: Step, result_text: str | None, failure: Failure) -> tuple[str, bool]:
    """What a failed tool step's failure *says*, as compared across calls, and whether the
    message names the tool that was called.

    The text is the masked, case-folded start of its message (the error text on the span,
    or the result text that reported it), or its class label when there is no message. Two
    calls that differ in their arguments but fail with this same text failed the same way.
    The called tool's own name is masked in it (``search_docs is not a valid tool, try one
    of [...]``): a message about the name itself, the same for ``search_docs`` and
    ``searchDocs``, says the calls under different names failed the same way too."""
    message = step.error_message or result_text or ""
    if not message:
        return failure.label, False
    message = message[:_ERROR_CHARS]
    name = step.name
    named = len(name) >= 3 and name.casefold() in message.casefold()
    if named:
        message = re.sub(re.escape(name), "<tool>", message, flags=re.IGNORECASE)
    return normalize_result(message), named
