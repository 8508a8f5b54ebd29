"""OTLP JSON and protobuf: values (:mod:`.anyvalue`), the codec between the two
(:mod:`.codec`), spans as records (:mod:`.records`) and patches onto spans (:mod:`.patch`)."""

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
