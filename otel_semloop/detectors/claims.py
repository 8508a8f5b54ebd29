"""What an assistant text asserts: its figures and the names it uses, wording aside.

Two texts that say the same thing in different words share what they assert: the same
numbers (``$12,480``, ``12480 dollars`` and ``12,480.00`` are one figure), the same
names (``North``, ``Acme Corp``) and the same files (``backend/schema.sql``), while their
other words change. :func:`claims` reads
them; the restatement signal (:mod:`otel_semloop.detectors.text`) compares them between
consecutive assistant messages. Pure functions of the text, like
:mod:`otel_semloop.detectors.normalize`; only hashes are returned.
"""

from __future__ import annotations

import re

__all__ = ["MAX_CLAIM_CHARS", "claims", "conclusion", "declares_done"]

#: Characters of a text read for claims: a conclusion is stated early, and the bound keeps
#: the cost O(1) for a huge output.
MAX_CLAIM_CHARS = 4000

#: A figure: digits with thousands separators and decimals, not part of a word or an id
#: (``gpt-4o``, ``v2``, ``req_8f3a``).
_NUMBER = re.compile(r"(?<![\w.\-/])\d(?:[\d,]*\d)?(?:\.\d+)?(?![\w\-/]|\.\d)")
#: A file or a path (``schema.sql``, ``.env``, ``src/app/main.py``, ``inventory-api/``).
#: (An extension of two characters or more: ``e.g`` and ``i.e`` are no files.)
_PATH = re.compile(
    r"(?<![\w./-])(?:[\w.-]+/)+[\w.-]*|(?<![\w./-])[\w-]*\.[A-Za-z][A-Za-z0-9]{1,7}(?![\w/])"
)
#: A name: a capitalised word (``North``, ``Acme``, ``USD``) of two letters or more.
_NAME = re.compile(r"\b[A-Z][A-Za-z]+\b")
#: What may precede a sentence's first word (its capital says nothing then).
_SENTENCE_START = re.compile(r"(?:^|[.!?\n]|\n\s*[-*\d.)]+)[\s\"'(\[*_]*$")


def claims(text: str) -> frozenset[int]:
    """Hashes of the figures, files and names ``text`` asserts (see the module doc). A
    figure is its value (separators and trailing zeros dropped); a file is its path and its
    last part; a name is a capitalised word that does not start a sentence, case-folded."""
    text = text[:MAX_CLAIM_CHARS]
    found: set[int] = set()
    for match in _NUMBER.finditer(text):
        found.add(_figure(match.group()))
    for match in _PATH.finditer(text):
        path = match.group().rstrip(".").casefold()
        if len(path) > 2:
            # The path and its last part: "schema.sql" restates "backend/schema.sql".
            found.add(hash(("path", path)))
            found.add(hash(("path", path.rstrip("/").rsplit("/", 1)[-1])))
    for match in _NAME.finditer(text):
        start = match.start()
        if _SENTENCE_START.search(text, max(0, start - 8), start) is not None:
            continue
        found.add(hash(("name", match.group().casefold())))
    return frozenset(found)


#: A figure given as the result: after ``=`` or after "answer", "total", "result", "sum",
#: "equals", "comes to" (``= 45``, ``The answer is 45``, ``Final answer: 45``).
_CONCLUDED = re.compile(
    r"(?:=|\b(?:answer|total|result|sum|equals|comes\s+to)\b(?:\s+(?:is|are|was|of))?\s*:?)"
    r"\s*[$\u20ac\u00a3]?\s*(\d(?:[\d,]*\d)?(?:\.\d+)?)(?![\w\-/]|\.\d)",
    re.IGNORECASE,
)


def conclusion(text: str) -> int | None:
    """The hash of the figure ``text`` concludes with (the last one given as a result:
    ``... = 45``, "The answer is 45", "Final answer: 45"; as :func:`claims` reads a
    figure), or None when it gives none. Working that reaches the same result by another
    route (``9 + 8 + ... + 1 = 45`` after ``10 x 9 / 2 = 45``) concludes the same."""
    results = _CONCLUDED.findall(text[:MAX_CLAIM_CHARS])
    return _figure(results[-1]) if results else None


def _figure(number: str) -> int:
    """A figure's hash: its value, separators and trailing zeros dropped."""
    figure = number.replace(",", "")
    if "." in figure:
        figure = figure.rstrip("0").rstrip(".")
    return hash(("figure", figure.lstrip("0") or "0"))


#: A statement that the work is over: done, nothing left, waiting for the next instruction.
_DONE = re.compile(
    r"\b(?:task|work|request|job|everything|implementation|change|changes)\s+(?:is|are|has been|have been)\s+"
    r"(?:now\s+|already\s+)?(?:complete|completed|done|finished)\b"
    r"|^\W*(?:all\s+)?(?:done|finished|complete)\b|^\W*\w+\s+(?:complete|completed|finished|done)\b"
    r"|\b(?:is|are)\s+(?:all\s+)?(?:complete|completed|finished|done)\b"
    r"|\bnothing\s+(?:further|more|else|left|remains|remaining|is\s+pending)\b"
    r"|\bno\s+(?:further|more|additional|remaining|unfinished)\s+(?:action|actions|work|changes|steps)\b"
    r"|\b(?:ready|wait|waiting)\s+for\s+(?:your\s+|the\s+)?(?:next|further|new)\s+(?:instruction|request|task)s?\b"
    r"|\bi\s+have\s+(?:completed|finished)\b",
    re.IGNORECASE,
)


def declares_done(text: str) -> bool:
    """True when an assistant text says the work is over ("The task is complete.",
    "Nothing further to change.", "I'll wait for your next instruction."), whatever else
    it says: said again and again with nothing between, the run cannot end."""
    return _DONE.search(text[:MAX_CLAIM_CHARS]) is not None
