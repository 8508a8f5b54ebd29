"""The one home for secret redaction and control-character cleaning.

Trace text is untrusted: span names, tool names, ``error.type`` values, arguments and
results are written by the agent (and by whatever it read). Copied elsewhere verbatim:

* **Secrets leak** into ``semloop.reason``, the evaluation event, a log line or a judge
  request. :func:`redact` replaces what looks like a secret with ``[REDACTED:<kind>]``
  before any text leaves the process or lands in an attribute or a log line.
* **Output is forged**: a newline in a tool name writes a fake log line, an ANSI escape
  recolours a terminal. :func:`clean_control` escapes every control character (C0, DEL,
  C1) and the Unicode bidirectional overrides (``"a\\nb"`` shows as ``a\\nb``).

:func:`safe_text` does both; front doors call it on text they copy out of a trace.
Redaction errs toward hiding (a 40-character random token after ``token=`` is hidden even
if harmless); secrets with no recognisable shape or label (a bare password word) are not
caught. Patterns are extensible: :meth:`Redactor.add` on :data:`DEFAULT_REDACTOR`, or a
:class:`Redactor` of your own. Cost: one linear pass of each pattern, skipped for text
without any marker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_REDACTOR",
    "Pattern",
    "Redactor",
    "clean_control",
    "redact",
    "redact_value",
    "safe_text",
]


@dataclass(frozen=True, slots=True)
class Pattern:
    """One kind of secret: ``regex`` finds it; group ``secret`` (or the whole match) is
    replaced by ``[REDACTED:<kind>]``, so labels such as ``password=`` stay readable."""

    kind: str
    regex: re.Pattern[str]

    def sub(self, text: str) -> str:
        marker = f"[REDACTED:{self.kind}]"
        if "secret" not in self.regex.groupindex:
            return self.regex.sub(marker, text)

        def replace(match: re.Match[str]) -> str:
            start, end = match.span("secret")
            whole_start = match.start()
            value = match.group(0)
            return value[: start - whole_start] + marker + value[end - whole_start :]

        return self.regex.sub(replace, text)


def _p(kind: str, pattern: str, flags: int = 0) -> Pattern:
    return Pattern(kind, re.compile(pattern, flags))


#: An unlabelled AWS secret access key (see its entry in :data:`DEFAULT_PATTERNS`).
AWS_SECRET_KEY = (
    r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]{0,39}[0-9])(?=[A-Za-z0-9/+]{0,39}[a-z])"
    r"(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
_AWS_SECRET_SHAPE = re.compile(AWS_SECRET_KEY)

#: The default patterns, most specific first (a bearer token is hidden as such before the
#: generic ``key=value`` rule sees it).
DEFAULT_PATTERNS: tuple[Pattern, ...] = (
    # Private key blocks (PEM).
    _p("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"),
    # URL userinfo: scheme://user:password@host -> the password only.
    _p("url_password", r"(?i)\b[a-z][a-z0-9+.-]{0,20}://[^\s/:@]{0,128}:(?P<secret>[^\s/@]{1,256})@"),
    # Authorization headers and bearer/basic tokens.
    _p("bearer", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"),
    _p("bearer", r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:[a-z]+\s+)?(?P<secret>[^\s\"',;]{6,})"),
    # JSON web tokens.
    _p("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
    # Provider keys with a recognisable prefix: OpenAI/Anthropic-style sk-..., GitHub, Slack,
    # AWS access key ids, Google API keys, Stripe, Hugging Face.
    _p("api_key", r"\b(?:sk|rk|pk)-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_-]{16,}"),
    _p("api_key", r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    _p("api_key", r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    _p("api_key", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    # An AWS access key id ends where letters and digits end (``AKIA..._prod`` too: ``\b``
    # sees no boundary before ``_``).
    _p("api_key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    _p("api_key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    _p("api_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    _p("api_key", r"\bhf_[A-Za-z0-9]{30,}\b"),
    # Labelled secrets: password=..., "api_key": "...", secret: ..., token=..., and the
    # same URL-encoded (password%3D..., %22token%22%3A%22...): the value runs to the next
    # separator, encoded or not (%26 &, %2C ,, %3B ;, %22 ", %27 ').
    _p(
        "credential",
        r"(?i)(?:pass(?:word|wd)?|pwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|"
        r"access[_-]?token|refresh[_-]?token|client[_-]?secret|private[_-]?key|token)"
        r"(?:[\"']|%2[27])?\s*(?:[:=]|%3[ADad])\s*(?:[\"']|%2[27])?"
        r"(?P<secret>(?!\d{1,7}\b)[^\s\"',;&}%]{3,}(?:%(?!2[267Cc]|3[Bb])[0-9A-Fa-f]{2}[^\s\"',;&}%]*)*)",
    ),
    # An unlabelled AWS secret access key: exactly 40 characters of its alphabet
    # (``A-Za-z0-9/+``), not part of a longer run of them nor followed by base64 padding
    # (``=``), with an upper-case letter, a lower-case letter and a digit. Hex digests
    # (SHA-1 is 40 hex characters) are single-case, so they are kept; so are words,
    # numbers, UUIDs and longer base64 data. A 40-character mixed-case identifier with a
    # digit is hidden too: redaction errs toward hiding.
    _p("aws_secret", AWS_SECRET_KEY),
    # E-mail addresses (personal data, not a secret, but never worth sending out).
    _p("email", r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,24}\b"),
)

#: What must be present, in any case, for a default pattern to match (other than an AWS
#: secret key): clean text skips the patterns.
_MARKERS = (
    "-----begin", "://", "bearer", "authorization", "token", "eyj", "sk-", "rk-", "pk-",
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "akia", "asia", "aiza",
    "_live_", "_test_", "hf_", "pass", "pwd", "secret", "key", "@",
)  # fmt: skip


def _may_hold_secret(text: str) -> bool:
    """Whether a default pattern can match: a marker occurs, or a run shaped as an
    unlabelled AWS secret key (which has no marker). Text that is not ASCII always runs
    the patterns (their case-insensitive matching folds characters ``str.lower`` keeps)."""
    if not text.isascii():
        return True
    lowered = text.lower()
    if any(marker in lowered for marker in _MARKERS):
        return True
    return len(text) >= 40 and _AWS_SECRET_SHAPE.search(text) is not None


class Redactor:
    """An ordered list of :class:`Pattern`; :meth:`redact` applies them all in order."""

    __slots__ = ("_extra", "patterns")

    def __init__(self, patterns: Iterable[Pattern] = DEFAULT_PATTERNS) -> None:
        self.patterns: list[Pattern] = list(patterns)
        self._extra = False

    def add(self, kind: str, pattern: str | re.Pattern[str]) -> None:
        """Add a pattern (a named group ``secret`` limits what is hidden)."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.patterns.append(Pattern(kind, regex))
        self._extra = True

    def redact(self, text: str) -> str:
        if not text or (not self._extra and self.patterns and not _may_hold_secret(text)):
            return text
        for pattern in self.patterns:
            text = pattern.sub(text)
        return text


#: The process-wide redactor every front door and the judge use.
DEFAULT_REDACTOR = Redactor()


def redact(text: str, redactor: Redactor | None = None) -> str:
    """``text`` with every recognisable secret replaced by ``[REDACTED:<kind>]``."""
    return (redactor or DEFAULT_REDACTOR).redact(text)


def redact_value(value: Any, redactor: Redactor | None = None) -> Any:
    """A JSON-like value (dicts, lists, strings, scalars) with every string redacted.

    Keys are redacted too (a secret can be a key). Non-string scalars are kept.
    """
    r = redactor or DEFAULT_REDACTOR
    if isinstance(value, str):
        return r.redact(value)
    if isinstance(value, Mapping):
        return {r.redact(str(k)): redact_value(v, r) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, r) for v in value]
    return value


# C0 controls, DEL, C1 controls, and the Unicode bidi embedding/override/isolate marks
# (they reorder what a terminal or a log viewer shows: "Trojan Source").
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def clean_control(text: str) -> str:
    """``text`` with control characters escaped (``"\\n"`` becomes the two characters
    ``\\`` ``n``): safe for one log line and for a terminal."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def safe_text(text: Any, limit: int | None = None, redactor: Redactor | None = None) -> str:
    """What may be copied out of a trace into an attribute, an event or a log line:
    ``str(text)`` redacted, control characters escaped, and cut to ``limit`` characters
    (marked with ``…``) when given."""
    out = clean_control(redact(text if isinstance(text, str) else str(text), redactor))
    if limit is not None and len(out) > limit:
        out = out[: max(0, limit - 1)] + "…"
    return out
