"""Batch rescoring of exported OTLP files: the engine behind ``otel-semloop rescore``.

* :mod:`.inputs` - files, directories, FIFOs, stdin; gzip/zstd; format from content.
* :mod:`.spans` - the light per-unit scan, worker payloads, write-back that replaces a
  previous run's verdict.
* :mod:`.worker` - one trace scored in isolation (in a process pool when there are cores).
* :mod:`.engine` - streaming with a completion window, spill to disk, input order kept.
* :mod:`.writer` - atomic output, JSON lines or protobuf, compression by suffix.
* :mod:`.summary`, :mod:`.report` - what a person sees; :mod:`.emit` - evaluation records.
* :mod:`.dask_engine` - the same over a Dask cluster.
* :mod:`.run` - the command's arguments and exit status.
"""

from otel_semloop.batch.engine import Engine, EngineOptions, EngineStats
from otel_semloop.batch.run import EXIT_INPUT, EXIT_LOOPS, EXIT_OK, EXIT_OUTPUT

__all__ = ["EXIT_INPUT", "EXIT_LOOPS", "EXIT_OK", "EXIT_OUTPUT", "Engine", "EngineOptions", "EngineStats"]
