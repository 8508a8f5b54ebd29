"""The front doors under one interface, so each shared promise is written once.

``door`` is parametrised over the two buffering front doors (test ids ``[processor]`` and
``[service]``): the in-app span processor (a real ``TracerProvider``) and the collector
service (a real SDK app exporting OTLP/gRPC to ``otel-semloop serve``'s service, which
forwards to a real OTLP receiver on loopback). ``any_door`` adds ``[rescore]`` (spans
written as OTLP JSON lines and scored by ``otel-semloop rescore``) for the promises that
do not depend on buffering. Every door shows what it forwarded as
:class:`~tests.e2e.otlp_receiver.ReceivedSpan` objects.

The application has a real ``LoggerProvider`` too (``door.logger``): the processor door
adds semloop's log record processor beside the app's own log exporter, the service door
exports the logs over OTLP/gRPC to the service (which forwards them to the receiver), the
rescore door writes them to a logs file beside the traces file. Every door that forwards
logs shows them as wire bytes (:meth:`Door.received_log_records`).
"""

from __future__ import annotations

import io
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.common._internal._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from otel_semloop.cli import main as cli_main
from otel_semloop.otlp import records_from_json, records_to_traces_json
from otel_semloop.otlp.codec import logs_to_json
from otel_semloop.processor import SemloopSpanProcessor
from otel_semloop.processor.sdk import span_to_record
from tests.e2e.otlp_receiver import GrpcOtlpReceiver, ReceivedEvent, ReceivedSpan
from tests.support.log_record_agent import record_bytes

#: Test-sized timings, under the names both front doors share.
FAST = {"grace_seconds": 0.1, "tick_seconds": 0.02}
#: How long a test waits for spans it expects (generous: a loaded CI machine is slow).
WAIT = 20.0


def _plain(attributes: Any) -> dict[str, Any]:
    """SDK attributes as OTLP receivers decode them (sequences are lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (attributes or {}).items()}


def received_from_sdk(span: ReadableSpan) -> ReceivedSpan:
    parent = span.parent
    return ReceivedSpan(
        trace_id=f"{span.context.trace_id:032x}",
        span_id=f"{span.context.span_id:016x}",
        parent_span_id=f"{parent.span_id:016x}" if parent is not None else "",
        name=span.name,
        kind=int(span.kind.value) + 1,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=_plain(span.attributes),
        events=tuple(ReceivedEvent(e.name, e.timestamp or 0, _plain(e.attributes)) for e in span.events),
        status_code=int(span.status.status_code.value),
        scope=span.instrumentation_scope.name if span.instrumentation_scope else "",
    )


def received_from_json(line: dict[str, Any]) -> list[ReceivedSpan]:
    return [
        ReceivedSpan(
            trace_id=r.trace_id,
            span_id=r.span_id,
            parent_span_id=r.parent_span_id,
            name=r.name,
            kind=r.kind,
            start_ns=r.start_ns,
            end_ns=r.end_ns,
            attributes=dict(r.attributes),
            events=tuple(ReceivedEvent(e.name, e.time_ns, dict(e.attributes)) for e in r.events),
            status_code=r.status_code,
            scope="",
        )
        for r in records_from_json(line)
    ]


class Door:
    """One front door with an application in front of it and a backend behind it."""

    name: str
    buffering = True

    def __init__(self) -> None:
        self.produced_exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "agent"}), shutdown_on_exit=False
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.produced_exporter))
        self.produced_logs = InMemoryLogRecordExporter()
        self.logger_provider = LoggerProvider(
            resource=Resource.create({"service.name": "agent"}), shutdown_on_exit=False
        )
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.produced_logs))

    @property
    def tracer(self) -> Tracer:
        return self.provider.get_tracer("tests.shared")

    @property
    def logger(self) -> Any:
        return self.logger_provider.get_logger("opentelemetry.instrumentation.openai_v2")

    def produced_log_records(self) -> Counter[bytes]:
        """Every log record the application emitted, as its OTLP wire bytes."""
        return record_bytes(encode_logs(self.produced_logs.get_finished_logs()))

    def received_log_records(self) -> Counter[bytes]:
        """Every log record the logs downstream received, as its wire bytes."""
        raise NotImplementedError

    def produced(self) -> list[ReadableSpan]:
        return list(self.produced_exporter.get_finished_spans())

    def received(self) -> list[ReceivedSpan]:
        raise NotImplementedError

    def send(self) -> None:
        """Hand what the application ended so far to the front door (an exporter flush)."""

    def wait_received(self, count: int, timeout: float = WAIT) -> list[ReceivedSpan]:
        """Wait until at least ``count`` spans arrived; fail if they do not."""
        self.send()
        deadline = time.monotonic() + timeout
        while len(self.received()) < count:
            assert time.monotonic() < deadline, f"{len(self.received())} of {count} spans arrived"
            time.sleep(0.01)
        return self.received()

    def close(self) -> None:
        """Shut the front door down (draining what it holds)."""

    def stats(self) -> dict[str, int]:
        return {}

    def assert_each_span_forwarded_once(self) -> None:
        produced = Counter(f"{s.context.span_id:016x}" for s in self.produced())
        received = Counter(s.span_id for s in self.received())
        assert received == produced, (len(received), len(produced))


class ProcessorDoor(Door):
    name = "processor"

    def __init__(self, scorer: Any = None, **options: Any) -> None:
        super().__init__()
        self.exported = InMemorySpanExporter()
        self.processor = SemloopSpanProcessor(SimpleSpanProcessor(self.exported), scorer=scorer, **options)
        self.provider.add_span_processor(self.processor)
        # The app's own log exporter is the logs downstream; semloop only observes beside it.
        self.logger_provider.add_log_record_processor(self.processor.log_record_processor)
        self.exported_logs = InMemoryLogRecordExporter()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.exported_logs))

    def received(self) -> list[ReceivedSpan]:
        return [received_from_sdk(s) for s in self.exported.get_finished_spans()]

    def received_log_records(self) -> Counter[bytes]:
        return record_bytes(encode_logs(self.exported_logs.get_finished_logs()))

    def close(self) -> None:
        self.provider.shutdown()
        self.logger_provider.shutdown()

    def stats(self) -> dict[str, int]:
        return self.processor.stats()


class ServiceDoor(Door):
    name = "service"

    def __init__(self, scorer: Any = None, **options: Any) -> None:
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        from otel_semloop.service import ServiceConfig, ServiceThread

        super().__init__()
        self.downstream = GrpcOtlpReceiver().start()
        config = ServiceConfig(
            grpc="127.0.0.1:0",
            http=None,
            export_endpoint=self.downstream.endpoint,
            retry_initial_backoff=0.05,
            retry_max_backoff=0.2,
            **options,
        )
        self.service = ServiceThread(config, scorer=scorer).start()
        endpoint = f"127.0.0.1:{self.service.grpc_port}"
        exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=10)
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=20))
        log_exporter = OTLPLogExporter(endpoint=endpoint, insecure=True, timeout=10)
        self.logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(log_exporter, schedule_delay_millis=20)
        )
        self._closed = False

    def received(self) -> list[ReceivedSpan]:
        return self.downstream.spans

    def received_log_records(self) -> Counter[bytes]:
        return Counter(record.wire for record in self.downstream.log_records)

    def send(self) -> None:
        assert self.logger_provider.force_flush(10_000)  # the records before their trace completes
        assert self.provider.force_flush(10_000)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.provider.shutdown()
            self.logger_provider.shutdown()
            self.service.stop()
        finally:
            self.downstream.stop()

    def stats(self) -> dict[str, int]:
        return self.service.service.stats()


class RescoreDoor(Door):
    """``otel-semloop rescore`` over the spans the application ended, written as OTLP
    JSON lines. Not buffering: it scores whole files."""

    name = "rescore"
    buffering = False

    def __init__(self, tmp: Path) -> None:
        super().__init__()
        self._tmp = tmp
        self._out: list[ReceivedSpan] = []

    def send(self) -> None:
        records = [span_to_record(s) for s in self.produced()]
        source, target = self._tmp / "in.otlp.jsonl", self._tmp / "out.otlp.jsonl"
        source.write_bytes(orjson.dumps(records_to_traces_json(records)) + b"\n")
        inputs = [str(source)]
        logs = self.produced_logs.get_finished_logs()
        if logs:  # the Collector file exporter's logs file, beside the traces file
            logs_file = self._tmp / "in.logs.jsonl"
            logs_file.write_bytes(orjson.dumps(logs_to_json(encode_logs(logs))) + b"\n")
            inputs.append(str(logs_file))
        assert cli_main(["rescore", *inputs, "-o", str(target), "-q"]) == 0
        self._out = [
            span
            for line in io.BytesIO(target.read_bytes())
            for span in received_from_json(orjson.loads(line))
        ]

    def received(self) -> list[ReceivedSpan]:
        return self._out


DoorFactory = Callable[..., Any]


def _opener(kind: str, tmp_path: Path) -> DoorFactory:
    @contextmanager
    def open_door(scorer: Any = None, every_span_once: bool = True, **options: Any) -> Iterator[Door]:
        if kind == "rescore":
            door: Door = RescoreDoor(tmp_path)
        elif kind == "processor":
            door = ProcessorDoor(scorer, **{**FAST, **options})
        else:
            door = ServiceDoor(scorer, **{**FAST, **options})
        try:
            yield door
        except BaseException:
            door.close()
            raise
        door.close()
        if door.produced() and every_span_once:
            # Nothing more can arrive once the door is closed: a late duplicate shows here.
            door.assert_each_span_forwarded_once()

    return open_door


@pytest.fixture(params=["processor", "service"])
def open_door(request: pytest.FixtureRequest, tmp_path: Path) -> DoorFactory:
    """Opens the buffering front door of the test id (``[processor]``, ``[service]``)."""
    return _opener(request.param, tmp_path)


@pytest.fixture(params=["processor", "service", "rescore"])
def open_any_door(request: pytest.FixtureRequest, tmp_path: Path) -> DoorFactory:
    """Opens any front door, rescore included."""
    return _opener(request.param, tmp_path)
