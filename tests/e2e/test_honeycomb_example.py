"""``examples/honeycomb/``, checked offline: the Terraform file parses, uses the honeycombio
provider's resources, names only columns the write-back produces, and agrees with the saved
query specification. (Nothing here talks to Honeycomb.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import hcl2
import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "examples" / "honeycomb"
#: Columns Honeycomb itself or the OTel SDK provides (not written by semloop).
STANDARD_COLUMNS = {"service.name", "name", "duration_ms", "trace.parent_id"}


def unquote(value: Any) -> Any:
    """python-hcl2 keeps string quotes (and ``${...}`` around references): drop both."""
    if isinstance(value, str):
        if len(value) >= 2 and value[0] == value[-1] == '"':
            return value[1:-1].replace('\\"', '"')
        return value.removeprefix("${").removesuffix("}")
    if isinstance(value, list):
        return [unquote(v) for v in value]
    if isinstance(value, dict):
        return {unquote(k): unquote(v) for k, v in value.items() if not k.startswith("__")}
    return value


@pytest.fixture(scope="module")
def tf() -> dict[str, Any]:
    with (HERE / "semloop.tf").open() as fp:
        return unquote(hcl2.load(fp))


def blocks(tf: dict[str, Any], kind: str) -> dict[tuple[str, str], dict[str, Any]]:
    """``resource`` or ``data`` blocks by (type, name)."""
    out = {}
    for entry in tf.get(kind, []):
        for rtype, named in entry.items():
            for name, body in named.items():
                out[(rtype, name)] = body
    return out


def written_columns() -> set[str]:
    """Every attribute the write-back puts on a root span, scoring the public benchmark."""
    from bench.deepeval_tree import trace_from_bench_row
    from otel_semloop.scoring import Scorer
    from otel_semloop.writeback import patches_for
    from tests.support.repo_data import BENCH, read_jsonl

    columns: set[str] = set()
    for row in read_jsonl(BENCH):
        trace = trace_from_bench_row(row)
        for patch in patches_for(trace, Scorer().score(trace)).values():
            columns.update(patch.attributes)
    return columns


def test_the_terraform_file_parses_and_uses_the_honeycombio_provider(tf):
    (required,) = tf["terraform"][0]["required_providers"]
    assert required["honeycombio"]["source"] == "honeycombio/honeycombio"
    resources = blocks(tf, "resource")
    assert {rtype for rtype, _ in resources} == {
        "honeycombio_derived_column",
        "honeycombio_query",
        "honeycombio_trigger",
        "honeycombio_flexible_board",
    }
    assert all(rtype == "honeycombio_query_specification" for rtype, _ in blocks(tf, "data"))


def test_every_column_it_names_is_written_by_semloop_or_standard(tf):
    named: set[str] = set()
    for body in blocks(tf, "data").values():
        named.update(f["column"] for f in body.get("filter", []))
        named.update(c["column"] for c in body.get("calculation", []) if "column" in c)
        named.update(body.get("breakdowns", []))
    derived = blocks(tf, "resource")[("honeycombio_derived_column", "semloop_flagged")]
    named.update(re.findall(r"\$([\w.]+)", derived["expression"]))
    alias = derived["alias"]
    unknown = named - written_columns() - STANDARD_COLUMNS - {alias, f"honeycombio_derived_column.{alias}"}
    unknown = {c for c in unknown if not c.startswith("honeycombio_derived_column.")}
    assert not unknown, f"columns semloop never writes: {sorted(unknown)}"


def test_the_trigger_fires_on_any_loop_within_its_window(tf):
    trigger = blocks(tf, "resource")[("honeycombio_trigger", "agent_loops")]
    (threshold,) = trigger["threshold"]
    assert (threshold["op"], threshold["value"]) == (">", 0)
    query = blocks(tf, "data")[("honeycombio_query_specification", trigger["query_json"].split(".")[2])]
    assert query["filter"] == [{"column": "semloop.loop.detected", "op": "=", "value": "true"}]
    assert trigger["frequency"] <= query["time_range"]
    assert trigger["recipient"][0]["target"] == "var.alert_email"


def test_the_saved_query_file_is_the_terraform_query(tf):
    saved = json.loads((HERE / "loops-by-agent.query.json").read_text())
    spec = blocks(tf, "data")[("honeycombio_query_specification", "loops_by_agent")]
    assert saved["calculations"] == [{"op": c["op"]} for c in spec["calculation"]]
    assert [{**f, "value": str(f["value"]).lower()} for f in saved["filters"]] == spec["filter"]
    assert saved["breakdowns"] == spec["breakdowns"] and saved["time_range"] == spec["time_range"]


def test_the_board_shows_every_saved_query(tf):
    board = blocks(tf, "resource")[("honeycombio_flexible_board", "agent_loops")]
    shown = {p["query_panel"][0]["query_id"] for p in board["panel"]}
    queries = {
        f"honeycombio_query.{name}.id"
        for rtype, name in blocks(tf, "resource")
        if rtype == "honeycombio_query"
    }
    assert shown == queries
