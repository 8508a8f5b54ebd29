"""The worker pool's process-level set-up: what the reading process does before its workers
fork and undoes when they are gone."""

from __future__ import annotations

import gc

from otel_semloop.batch.tasks import Pool
from otel_semloop.batch.worker import ScorerSpec


def test_the_pool_freezes_the_collector_while_it_runs_and_unfreezes_on_close():
    before = gc.get_freeze_count()
    pool = Pool(2, ScorerSpec(), 1 << 16)
    try:
        frozen = gc.get_freeze_count()
        assert frozen > before  # the imported stack is out of the collector's reach
        if pool._chunks is not None:  # forked: a worker inherits the frozen objects
            assert pool.executor.submit(gc.get_freeze_count).result() > frozen // 2
    finally:
        pool.close()
    assert gc.get_freeze_count() == before
    pool.close()  # closing twice unfreezes nothing else
    assert gc.get_freeze_count() == before
