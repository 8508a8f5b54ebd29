"""First-look batches: situations written blind, before they are ever scored.

Each ``batchN/situations.py`` keeps its own registry (never the corpus's own), made with
:func:`bench.corpus.situations.registrar`, names the renderings it is written in
(``CONVENTIONS``), and the generator (``python -m bench.corpus.generate --batch
bench/corpus/first_look/batchN``) writes the batch's traces, labels and README beside it.
"""
