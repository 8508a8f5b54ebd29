"""The per-step facts' shortcuts give exactly what the plain code gives.

Each test keeps the plain computation as it was written before the shortcut (the original
patterns, copied here) and compares it with the fast function on generated input that
favours the edges where a shortcut could go wrong: keys in other cases, keys inside longer
words, digits after letters, dots and slashes, other scripts' letters that fold to ASCII
under IGNORECASE (the Kelvin sign, the long s, the dotless i).
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import arguments as arguments_module

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
