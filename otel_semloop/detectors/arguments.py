"""Argument equivalence: when two spellings of a tool argument name the same thing.

Agents rarely repeat a call byte for byte: a URL gains a tracking parameter or loses its
fragment, a date is written ``2024-05-01`` one time and ``May 1, 2024`` the next, a shell
command's flags are merged (``ls -la``) or split (``ls -l -a``). Comparing the raw text
would call each of these a new action and hide the loop. This module rewrites a string
argument into a canonical spelling before the detectors digest it
(:func:`otel_semloop.detectors.call_identity.canonical_args`) and gives shell commands a looser
similarity form for near-duplicates (:func:`shell_near_form`).

Rules (each errs toward "different" when unsure: a canonical form only merges spellings
that cannot mean different things)
    URLs
        ``scheme://host/path?query#fragment`` becomes lower-case scheme and host (a
        leading ``www.`` and the default port dropped), the path without a trailing
        slash, and the query parameters as a sorted set without tracking parameters
        (``utm_*``, ``gclid``, ``fbclid``, ...). The fragment is dropped: it never reaches
        the server. Parameter *values* are kept: ``?page=2`` is a different read.
    Dates
        ``2024-05-01``, ``2024/05/01``, ``2024.05.01``, ``20240501`` (as a whole value),
        ``05/01/2024`` (month first when the first field is at most 12, as US tools write
        it; day first otherwise), ``May 1, 2024``, ``1 May 2024`` and ``1st of May 2024``
        all become ``2024-05-01``. Only valid calendar dates are rewritten.
    Shell commands
        (argument names ``command``, ``cmd``, ``script``, ``shell``, ``bash``, or any
        argument of a tool whose name says shell/bash/terminal/exec/command) are split
        like a shell would (quotes honoured); blanks are collapsed, and in each pipeline
        segment the short flags are merged into one sorted set (``-la`` = ``-al`` =
        ``-l -a``) and long flags sorted. The near form (:func:`shell_near_form`) keeps
        only the programs and their operands: two commands that differ only in flags are
        near-duplicates.

What a call does, read from its name and command line
    :func:`empty_means_none_found` (a question, whose empty answer is "nothing found"),
    :func:`writes_tool` (a write, whose short answer acknowledges it),
    :func:`sets_value` (a write of a value, which the same call again cannot change) and
    :func:`is_wait_call` (a sleep: neither work nor a repeat) read the same tool names and
    shell pipelines as the rules above.

Cost
    O(length of the value) per string; a string is only parsed when a cheap substring
    test says it could be a URL, a date or a command.

Size: one concern, the spellings of one call's arguments and what its name and command
line say it does; the shell splitting those share is what makes it one module.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Mapping
from datetime import date
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = [
    "SHELL_ARGUMENT_NAMES",
    "asks_tool",
    "canonical_date_text",
    "canonical_shell",
    "canonical_string",
    "canonical_url",
    "empty_means_none_found",
    "is_shell_tool",
    "is_wait_call",
    "is_wait_tool",
    "sets_value",
    "shell_near_form",
    "writes_tool",
]

#: Query parameters that identify a campaign or a click, never the resource.
TRACKING_PARAMS = frozenset(
    {
        "gclid", "fbclid", "msclkid", "dclid", "yclid", "mc_cid", "mc_eid", "_ga", "_gl",
        "ref", "ref_src", "igshid", "si", "spm",
    }
)  # fmt: skip
_TRACKING_PREFIXES = ("utm_",)
_DEFAULT_PORTS = {"http": "80", "https": "443"}

#: Argument names whose value is a shell command line.
SHELL_ARGUMENT_NAMES = frozenset({"command", "cmd", "script", "shell", "bash", "commandline", "command_line"})
_SHELL_TOOL = re.compile(r"shell|bash|terminal|exec|command|run_cmd|powershell|zsh|\bsh\b", re.IGNORECASE)
#: Command lines longer than this are compared as text: a script, not a command.
_MAX_SHELL_CHARS = 2000
_SHELL_OPERATORS = frozenset({"|", "||", "&&", ";", "&"})

_NEEDS_QUOTES = re.compile(r"[\s'\"|&;]")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$", re.IGNORECASE)

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"),
            ("may",), ("jun", "june"), ("jul", "july"), ("aug", "august"),
            ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATE_YMD = re.compile(r"\b(\d{4})([-/.])(\d{1,2})\2(\d{1,2})\b")
_DATE_NUMERIC_MDY = re.compile(r"\b(\d{1,2})([-/.])(\d{1,2})\2(\d{4})\b")
_DATE_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(\d{{4}})\b", re.IGNORECASE)
_DATE_DAY_FIRST = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_HINT = re.compile(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s", re.IGNORECASE)
_DATE_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})$")


def canonical_string(value: str, *, shell: bool = False) -> str:
    """``value`` in its canonical spelling: a URL, a value holding dates, or (``shell``)
    a command line rewritten as described in the module doc; anything else unchanged."""
    if shell:
        return canonical_shell(value)
    if "://" in value and _URL.match(value.strip()):
        return canonical_url(value.strip())
    return canonical_date_text(value)  # the very same string when it holds no date


def canonical_url(url: str) -> str:
    """The URL as scheme, host, path and a sorted set of non-tracking parameters."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().removeprefix("www.")
    if port is not None and str(port) != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    path = parts.path.rstrip("/") if len(parts.path) > 1 else ""
    params = sorted(
        {
            (key, value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
            if key.lower() not in TRACKING_PARAMS and not key.lower().startswith(_TRACKING_PREFIXES)
        }
    )
    query = f"?{urlencode(params)}" if params else ""
    return f"{scheme}://{host}{path}{query}"


def _month(name: str) -> int:
    token = name.lower().rstrip(".")
    return _MONTHS.get(token) or _MONTHS[token[:3]]


def _iso(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


#: Every date spelling holds a four-digit year: text without four digits in a row is left
#: as it is without trying the patterns (a character-set scan in C).
_FOUR_DIGITS = re.compile(r"\d\d\d\d")


def _has_four_digits(text: str) -> bool:
    return _FOUR_DIGITS.search(text) is not None


def canonical_date_text(text: str) -> str:
    """``text`` with every date spelling listed in the module doc rewritten as ISO."""
    if not _has_four_digits(text):
        return text
    compact = _DATE_COMPACT.match(text.strip())
    if compact:
        iso = _iso(int(compact.group(1)), int(compact.group(2)), int(compact.group(3)))
        return iso if iso is not None else text

    def ymd(match: re.Match[str]) -> str:
        return _iso(int(match.group(1)), int(match.group(3)), int(match.group(4))) or match.group()

    def mdy(match: re.Match[str]) -> str:
        first, second, year = int(match.group(1)), int(match.group(3)), int(match.group(4))
        month, day = (first, second) if first <= 12 else (second, first)
        return _iso(year, month, day) or match.group()

    def month_first(match: re.Match[str]) -> str:
        return _iso(int(match.group(3)), _month(match.group(1)), int(match.group(2))) or match.group()

    def day_first(match: re.Match[str]) -> str:
        return _iso(int(match.group(3)), _month(match.group(2)), int(match.group(1))) or match.group()

    if "-" in text or "/" in text or "." in text:
        text = _DATE_YMD.sub(ymd, text)
        text = _DATE_NUMERIC_MDY.sub(mdy, text)
    if _MONTH_HINT.search(text):
        text = _DATE_MONTH_FIRST.sub(month_first, text)
        text = _DATE_DAY_FIRST.sub(day_first, text)
    return text


def is_shell_tool(name: str) -> bool:
    """True when a tool's name says it runs shell commands."""
    return bool(_SHELL_TOOL.search(name))


#: What ``shlex`` (POSIX mode, ``punctuation_chars=True``, ``whitespace_split``) interprets
#: beyond blanks and operators: quotes, the escape and the comment character.
_QUOTING = re.compile(r"""['"\\#]""")
#: Its words when none of those occur: a run of operator characters, or a run of anything
#: but its blanks (space, tab, CR, LF; not other Unicode spaces) and operator characters.
_PLAIN_WORD = re.compile(r"[();<>|&]+|[^ \t\r\n();<>|&]+")


def _shlex_words(command: str) -> list[str]:
    """The command's words as a POSIX shell splits them (quotes and escapes honoured,
    ``#`` starting a comment, runs of ``();<>|&`` as words of their own); ValueError on
    an unbalanced quote or a trailing escape."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _shell_segments(command: str) -> list[list[str]] | None:
    """The command split into pipeline segments of words, or None when it cannot be
    split (unbalanced quotes, too long)."""
    if len(command) > _MAX_SHELL_CHARS:
        return None
    if _QUOTING.search(command) is None:
        # Nothing for shlex to interpret: its words are the runs between its blanks, with
        # each run of operator characters a word of its own (shlex is ~100x dearer).
        words = _PLAIN_WORD.findall(command)
    else:
        try:
            words = _shlex_words(command)
        except ValueError:
            return None
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SHELL_OPERATORS:
            segments.append([word])
            segments.append([])
        else:
            segments[-1].append(word)
    return [s for s in segments if s]


def _segment_form(words: list[str], *, keep_flags: bool) -> str:
    if len(words) == 1 and words[0] in _SHELL_OPERATORS:
        return words[0]
    short: set[str] = set()
    long: list[str] = []
    operands: list[str] = []
    for index, word in enumerate(words):
        if index > 0 and word.startswith("--") and len(word) > 2:
            long.append(word)
        elif index > 0 and word.startswith("-") and len(word) > 1 and word[1:].isalpha():
            short.update(word[1:])
        else:
            operand = word.rstrip("/") if len(word) > 1 else word
            operand = operand.removeprefix("./") if len(operand) > 2 else operand
            operands.append(shlex.quote(operand) if _NEEDS_QUOTES.search(operand) else operand)
    if not keep_flags:
        return " ".join(operands)
    flags = (f"-{''.join(sorted(short))}",) if short else ()
    return " ".join([*operands[:1], *flags, *sorted(long), *operands[1:]])


#: What a shell word can hold for the shell forms to rewrite it: quoting and comments,
#: operators (see :func:`_shell_segments`).
_SHELL_SPECIAL = re.compile(r"['\"\\#();<>|&]")


def _shell_as_is(command: str) -> bool:
    """True when both shell forms of ``command`` are ``command`` itself (most arguments
    of a shell tool are a path or a few plain words): printable ASCII (no blank but the
    space, which ``_NEEDS_QUOTES`` would quote inside a word) without quoting or operator
    characters, words separated by single spaces, and no word a flag (`` -``), ending in
    ``/`` or starting with ``./`` (what :func:`_segment_form` rewrites). Then the words
    are ``command.split(" ")``, one segment, each an operand kept as it is. A few scans
    in C, against splitting and re-joining the words in Python. Sufficient, not
    necessary: False only means "rewrite"."""
    return (
        command.isascii()
        and command.isprintable()
        and len(command) <= _MAX_SHELL_CHARS
        and _SHELL_SPECIAL.search(command) is None
        and "  " not in command
        and " -" not in command
        and "/ " not in command
        and " ./" not in command
        and not command.startswith((" ", "./"))
        and not command.endswith((" ", "/"))
    )


def canonical_shell(command: str) -> str:
    """The command line with its flags merged and sorted per pipeline segment (see module doc)."""
    if _shell_as_is(command):
        return command
    segments = _shell_segments(command)
    if segments is None:
        return " ".join(command.split())
    return " ".join(_segment_form(words, keep_flags=True) for words in segments)


def shell_near_form(command: str) -> str:
    """The command line's programs and operands only: commands that differ in flags alone
    share it."""
    if _shell_as_is(command):
        return command
    segments = _shell_segments(command)
    if segments is None:
        return " ".join(command.split())
    return " ".join(_segment_form(words, keep_flags=False) for words in segments)


#: Programs whose empty output means "nothing found" (a search, a listing, a read), not
#: "done": ``grep`` printing nothing answered the question with no.
QUERY_PROGRAMS = frozenset(
    {"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "locate", "ls", "cat", "head", "tail",
     "which", "whereis", "jq", "wc"}
)  # fmt: skip
#: ``git`` subcommands that ask (``git mv``, ``git add`` print nothing when they worked).
GIT_QUERIES = frozenset({"grep", "log", "ls-files", "show", "diff", "status", "blame", "branch", "tag"})
#: Tool names that ask a question (whose empty result is an answer, not an acknowledgement).
_QUERY_TOOL = re.compile(r"search|find|query|lookup|grep|list|retriev|fetch|get|read|look|check|scan", re.I)


def empty_means_none_found(name: str, arguments: Any, *, shell: bool) -> bool:
    """True when an *empty* result of this call is an answer ("nothing found") rather than
    an acknowledgement ("done"): a shell command whose pipeline runs a search, listing or
    read program (``grep``, ``rg``, ``find``, ``ls``, ``cat``...; not ``mv``, ``mkdir``),
    or a tool named like a question (``search_*``, ``find_*``, ``get_*``, ``list_*``...).
    Only called for empty results: a few string operations."""
    command = None
    if isinstance(arguments, str) and shell:
        command = arguments
    elif isinstance(arguments, Mapping):
        for key, value in arguments.items():
            if isinstance(value, str) and (shell or str(key).lower() in SHELL_ARGUMENT_NAMES):
                command = value
                break
    if command is not None:
        segments = _shell_segments(command) or [command.split()]
        return any(_asks(words) for words in segments)
    return bool(_QUERY_TOOL.search(name))


def _asks(words: list[str]) -> bool:
    """True when one pipeline segment runs a search, listing or read program."""
    if not words or words[0] in _SHELL_OPERATORS:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program == "git":
        return len(words) > 1 and words[1] in GIT_QUERIES
    return program in QUERY_PROGRAMS


#: Tool names that only wait (a sleep between polls or retries): ``sleep``, ``wait``,
#: ``time_sleep``, ``delay``, ``pause``, ``backoff`` as a whole word of the name (not
#: ``wait_for_job``'s ``wait`` followed by what it waits on: that call answers something).
_WAIT_TOOL = re.compile(
    r"^(?:[a-z]+[_.-])?(?:sleep|wait|delay|pause|backoff)(?:[_.-]?(?:seconds|ms|s))?$", re.IGNORECASE
)
#: Programs a shell command may run and still only wait.
_WAIT_PROGRAMS = frozenset({"sleep", "timeout", "true"})


@functools.lru_cache(maxsize=256)
def is_wait_tool(name: str) -> bool:
    """Whether ``name`` is a tool named like a sleep (:data:`_WAIT_TOOL`); tool names
    repeat (every tool step asks), the match is remembered."""
    return _WAIT_TOOL.match(name) is not None


def is_wait_call(name: str, arguments: Any, *, shell: bool) -> bool:
    """True when the call only lets time pass: a tool named like a sleep (``sleep``,
    ``wait``, ``time_sleep``, ``delay``...) or a shell command that runs nothing but
    ``sleep``. A wait reports nothing about the world: it is neither new work nor a repeat,
    and it neither starts nor ends a failure storm."""
    if is_wait_tool(name):
        return True
    if not shell:
        return False
    command = None
    if isinstance(arguments, str):
        command = arguments
    elif isinstance(arguments, Mapping):
        for key, value in arguments.items():
            if isinstance(value, str) and str(key).lower() in SHELL_ARGUMENT_NAMES:
                command = value
                break
    if not command:
        return False
    segments = _shell_segments(command)
    if not segments:
        return False
    programs = [
        words[0].rsplit("/", 1)[-1] for words in segments if words and words[0] not in _SHELL_OPERATORS
    ]
    return bool(programs) and all(program in _WAIT_PROGRAMS for program in programs)


#: Tool names that write or change something (their short answer acknowledges the write).
_WRITE_TOOL = re.compile(
    r"save|write|update|upsert|insert|set|add|create|delete|remove|send|post|put|patch|label|tag|"
    r"move|rename|upload|assign|close|comment|edit|append|store|submit|publish|mark|apply|commit|"
    r"push|merge|archive|enable|disable|schedule|notify|reply|invite|register",
    re.I,
)


def writes_tool(name: str) -> bool:
    """True when a tool's name says it writes or changes something (``save_draft``,
    ``add_labels``, ``send_message``) and does not say it asks (``get_*``, ``search_*``):
    a short answer from such a call acknowledges what was written, whatever its words."""
    return bool(_WRITE_TOOL.search(name)) and not _QUERY_TOOL.search(name)


#: Tool names that set a value (a field, a record, a file, a flag) rather than add one
#: more thing: setting the same value again changes nothing (not ``send``, ``add``,
#: ``append``, ``post``: each call of those adds a message, an item, a line).
_SET_TOOL = re.compile(
    r"set|update|upsert|save|store|write|record|rename|mark|assign|label|tag|enable|disable", re.I
)


def sets_value(name: str) -> bool:
    """True when a tool's name says it sets a value (``set_email``, ``update_record``,
    ``save_draft``, ``mark_done``) and does not say it asks: the same call made again
    with the same arguments can only be acknowledged the same way, and learns nothing."""
    return bool(_SET_TOOL.search(name)) and not _QUERY_TOOL.search(name)


def asks_tool(name: str) -> bool:
    """True when a tool's name says it asks a question (``search_*``, ``get_*``,
    ``list_*``, ``read_*``...): the same short answer to different questions is evidence;
    from a tool that does not ask (``think``, ``click``, ``fill``), it acknowledges."""
    return bool(_QUERY_TOOL.search(name))
