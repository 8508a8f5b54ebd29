"""Batch rescoring of an exported file, then a look at what landed on the root spans.

    pip install otel-semloop
    otel-semloop rescore examples/agent_traces.otlp.jsonl -o out/scored.otlp.jsonl
    python examples/rescore/show_verdicts.py out/scored.otlp.jsonl

``rescore`` reads OTLP JSON lines (the Collector file exporter's format, ``.gz`` too), scores
every agent trace once (a trace may straddle lines and files), and writes every line back in
order with the verdict on the root and looping spans; non-agent traces pass through
byte-identical. This script prints each scored root's verdict from the output file, read with
nothing but the standard library: what any other tool reading the file would see.
"""

from __future__ import annotations

import json
import sys


def value(any_value: dict) -> object:
    for key in ("stringValue", "boolValue", "doubleValue", "intValue"):
        if key in any_value:
            return any_value[key]
    if "arrayValue" in any_value:
        return [value(v) for v in any_value["arrayValue"].get("values", [])]
    return None


def main(path: str) -> int:
    flagged = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            for resource_spans in json.loads(line).get("resourceSpans", []):
                for scope_spans in resource_spans.get("scopeSpans", []):
                    for span in scope_spans.get("spans", []):
                        attrs = {a["key"]: value(a["value"]) for a in span.get("attributes", [])}
                        if "semloop.label" not in attrs:
                            continue
                        flagged += attrs["semloop.loop.detected"] is True
                        signals = ",".join(attrs.get("semloop.signals") or []) or "-"
                        print(
                            f"{span['traceId']}  {span['name']:32.32}  {attrs['semloop.label']:9}"
                            f"  score={attrs['semloop.score']:.2f}  signals={signals}"
                        )
    print(f"{flagged} trace(s) with semloop.loop.detected=true")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "out/scored.otlp.jsonl"))
