"""A retriever's answer read as the documents it returned, whatever their order and scores.

A retrieval-augmented agent that rewrites its question and retrieves again gets back the
same documents when the index holds nothing better: in another order, each with another
relevance score (a re-embedded query, a jittered ranker). Those are the same answer; a
retrieval that brings one new document is a new one. :func:`as_document_set` gives the
text a result is compared by (:class:`~otel_semloop.detectors.call_progress.ResultRead`).
A pure function of the text, like :mod:`otel_semloop.detectors.normalize`.
"""

from __future__ import annotations

import json
import re

__all__ = ["as_document_set"]

#: The fields a retriever scores its documents with: volatile between two retrievals of
#: the same documents (a re-embedded query, a jittered ranker), never what a document says.
_RELEVANCE_KEYS = frozenset(
    {
        "score",
        "_score",
        "relevance",
        "relevance_score",
        "similarity",
        "similarity_score",
        "distance",
        "rank",
        "certainty",
    }
)
#: A cheap look for a relevance field before a result is parsed as JSON at all.
_RELEVANCE_FIELD = re.compile(
    r'"(?:_?score|relevance(?:_score)?|similarity(?:_score)?|distance|rank|certainty)"\s*:'
)
#: A document's text is at least this long: shorter values are names and figures (a
#: leaderboard's players and points), not retrieved passages.
_DOCUMENT_MIN_CHARS = 40
#: A retrieval larger than this is left as it is (parsing it costs more than it tells).
_DOCUMENTS_MAX_CHARS = 200_000


def as_document_set(raw: str) -> str:
    """A retriever's answer read as the set of documents it returned: when ``raw`` is a
    JSON list of at least two documents (objects with a text of
    :data:`_DOCUMENT_MIN_CHARS` or more) scored by a relevance field, at the top or under
    one key, the documents without their scores, in a fixed order. The same documents
    brought back in another order with other scores are the same answer; a retrieval that
    brings one new document is a new answer. Any other result is returned as it is (a
    list of players and their points is not a retrieval)."""
    if len(raw) > _DOCUMENTS_MAX_CHARS or not _RELEVANCE_FIELD.search(raw):
        return raw
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(value, dict):
        lists = [(key, item) for key, item in value.items() if isinstance(item, list)]
        if len(lists) != 1:
            return raw
        key, documents = lists[0]
        rest = {k: v for k, v in value.items() if k != key}
    else:
        key, documents, rest = None, value, {}
    unscored = _unscored(documents)
    if unscored is None:
        return raw
    if key is None:
        return json.dumps(unscored, ensure_ascii=False)
    return json.dumps({**rest, key: unscored}, sort_keys=True, ensure_ascii=False)


def _unscored(documents: object) -> list[str] | None:
    """The documents of a scored retrieval without their relevance fields, sorted; None
    when ``documents`` is not such a list (see :func:`as_document_set`)."""
    if not isinstance(documents, list) or len(documents) < 2:
        return None
    unscored: list[str] = []
    scored = False
    for document in documents:
        if not isinstance(document, dict):
            return None
        if not any(isinstance(v, str) and len(v) >= _DOCUMENT_MIN_CHARS for v in document.values()):
            return None
        kept = {k: v for k, v in document.items() if k.casefold() not in _RELEVANCE_KEYS}
        scored = scored or len(kept) < len(document)
        unscored.append(json.dumps(kept, sort_keys=True, ensure_ascii=False))
    return sorted(unscored) if scored else None
