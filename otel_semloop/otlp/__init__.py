"""OTLP codecs: OTLP JSON and protobuf to :class:`~otel_semloop.model.SpanRecord`, and
write-back of :class:`~otel_semloop.writeback.SpanPatch` (reading exported files is
:mod:`otel_semloop.batch.inputs`).

* :mod:`.anyvalue` - ``AnyValue``/attributes to and from Python values.
* :mod:`.codec` - protobuf ``TracesData`` <-> OTLP JSON dicts (hex ids, integer enums,
  64-bit integers as strings), without ``google.protobuf.json_format``.
* :mod:`.records` - spans as ``SpanRecord``s.
* :mod:`.patch` - patches applied onto spans in place, span JSON from records.
"""

from otel_semloop.otlp.anyvalue import (
    decode_any_json,
    decode_any_pb,
    decode_attributes_json,
    decode_attributes_pb,
    encode_any_json,
    encode_any_pb,
    encode_attributes_json,
    encode_attributes_pb,
)
from otel_semloop.otlp.codec import json_to_traces, span_to_json, traces_to_json
from otel_semloop.otlp.patch import (
    apply_patch_json,
    apply_patch_proto,
    record_to_json,
    records_to_traces_json,
)
from otel_semloop.otlp.records import record_from_proto_span, records_from_json, records_from_proto

__all__ = [
    "apply_patch_json",
    "apply_patch_proto",
    "decode_any_json",
    "decode_any_pb",
    "decode_attributes_json",
    "decode_attributes_pb",
    "encode_any_json",
    "encode_any_pb",
    "encode_attributes_json",
    "encode_attributes_pb",
    "json_to_traces",
    "record_from_proto_span",
    "record_to_json",
    "records_from_json",
    "records_from_proto",
    "records_to_traces_json",
    "span_to_json",
    "traces_to_json",
]
