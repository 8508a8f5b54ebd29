"""The per-step facts' shortcuts give exactly what the plain code gives.

Each test keeps the plain computation as it was written before the shortcut (the original
patterns, copied here) and compares it with the fast function on generated input that
favours the edges where a shortcut could go wrong: keys in other cases, keys inside longer
words, digits after letters, dots and slashes, other scripts' letters that fold to ASCII
under IGNORECASE (the Kelvin sign, the long s, the dotless i).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import arguments as arguments_module
from otel_semloop.detectors import call_identity
from otel_semloop.detectors.arguments import SHELL_ARGUMENT_NAMES, canonical_string

# -- canonical arguments: flat dicts in one loop, exact types before the Mapping ABC --------


def plain_canonical_value(value: Any, volatile: Collection[str], depth: int, shell: bool) -> Any:
    if depth >= call_identity._MAX_ARG_DEPTH:
        return value
    if isinstance(value, str):
        return canonical_string(value, shell=shell) if value else value
    if isinstance(value, Mapping):
        out = {}
        changed = False
        for k, v in value.items():
            lowered = k.lower() if isinstance(k, str) else k
            if lowered in volatile:
                changed = True
                continue
            if isinstance(v, (str, Mapping, list, tuple)):
                new = plain_canonical_value(v, volatile, depth + 1, shell or lowered in SHELL_ARGUMENT_NAMES)
                changed = changed or new is not v
            else:
                new = v
            out[k] = new
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [plain_canonical_value(v, volatile, depth + 1, shell) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def plain_canonical_args(arguments: Any, volatile: Collection[str], shell: bool) -> str:
    if isinstance(arguments, str):
        return canonical_string(arguments.strip(), shell=shell)
    value = plain_canonical_value(arguments, volatile, 0, shell)
    try:
        options = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
        return orjson.dumps(value, option=options, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


class Label(str):
    """A str subclass (a value an SDK may pass through): the general path handles it."""


ARG_KEYS = st.sampled_from(
    ["path", "Path", "limit", "command", "CMD", "query", "url", "request_id", "Request_ID", "nonce", "x"]
) | st.integers(-3, 3)
ARG_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "src/app.py",
        "./src/",
        "ls -la /tmp",
        "ls -l -a /tmp",
        "grep -rn 'a b' .",
        "https://Example.com/a/?utm_source=x&b=2#frag",
        "2024-05-01",
        "05/01/2024",
        "May 1, 2024",
        "20240501",
        "v2 build 1234",
        "caf\u00e9 \u0663\u0664\u0665\u0666",
        "\u0661\u0662\u0663\u0664",
    ]
) | st.text(max_size=12)
ARG_SCALARS = (
    ARG_STRINGS
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
    | ARG_STRINGS.map(Label)
)
ARG_VALUES = st.recursive(
    ARG_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ARG_KEYS, inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=600, deadline=None)
@given(
    st.dictionaries(ARG_KEYS, ARG_VALUES, max_size=5) | st.dictionaries(ARG_KEYS, ARG_SCALARS, max_size=4),
    st.booleans(),
    st.sampled_from(["usual", "x"]),
)
@example({"command": "ls -l -a /tmp", "path": "./src/"}, False, "usual")
@example({"path": "src/a.py", "limit": 50}, False, "usual")
@example({"request_id": "r1", "q": "x"}, False, "usual")
@example({"n": 2**65}, False, "usual")
@example({"url": "https://Example.com/a/?utm_source=x&b=2#frag", "q": "x"}, False, "usual")
@example({"when": "May 1, 2024"}, False, "usual")
def test_flat_arguments_fast_path_is_exact(arguments: dict[Any, Any], shell: bool, volatile: str) -> None:
    names = call_identity.DEFAULT_VOLATILE_ARGS | ({"x"} if volatile == "x" else set())
    fast = call_identity.canonical_args(arguments, names, shell=shell)
    assert fast == plain_canonical_args(arguments, names, shell)


# -- shell commands: words without shlex when nothing needs quoting -----------------------

#: Characters where a plain split and shlex could part: its blanks, other Unicode spaces
#: (not blanks to shlex), operator characters, the word characters it adds in punctuation
#: mode, and the quoting characters that must send a command to shlex.
SHELL_TEXT = st.text(
    alphabet=st.sampled_from(list("ab-./~*?=_1 \t\r\n\u00a0\u2003();<>|&'\"\\#ßé")), max_size=60
)


@settings(max_examples=1500, deadline=None)
@given(SHELL_TEXT)
@example("ls -la /tmp|grep  x&&echo ok;(cd a)>b")
@example("echo a#b")
@example("a\u00a0b\u2003c")
def test_shell_segments_split_like_shlex(command: str) -> None:
    try:
        expected = arguments_module._shlex_words(command)
    except ValueError:
        expected = None
    segments = arguments_module._shell_segments(command)
    if expected is None:
        assert segments is None
        return
    assert segments is not None
    assert [word for segment in segments for word in segment] == expected
