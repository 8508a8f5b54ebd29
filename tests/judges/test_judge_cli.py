"""``otel-semloop rescore --judge ...`` as a user runs it: one request per agent trace to a real
loopback judge, the judge's attributes on each root, the totals printed, and a second run
answered from the answer cache at no cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

from otel_semloop.batch.inputs import read_records
from otel_semloop.otlp import records_to_traces_json
from tests.judges.judge_support import Reply, ScriptedServer

try:
    from bench.deepeval_tree import tree_to_spans
except ImportError:  # before the benchmark helpers moved to bench/
    from otel_semloop.deepeval_tree import tree_to_spans  # type: ignore[no-redef]

DATASET = Path(__file__).resolve().parents[2] / "data" / "semloop-bench" / "dataset.jsonl"


def bench_file(path: Path, families: tuple[str, ...]) -> int:
    rows = {}
    for line in DATASET.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["family"] in families:
            rows.setdefault(row["family"], row)
    records = [r for row in rows.values() for r in tree_to_spans(row["root"], row["trace_id"])]
    path.write_bytes(orjson.dumps(records_to_traces_json(records, service_name="cli-test")) + b"\n")
    return len(rows)


def rescore(tmp_path: Path, server: ScriptedServer, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-cli-test-0123456789abcdef", "PYTHONPATH": os.getcwd()}
    command = [
        sys.executable, "-m", "otel_semloop.cli", "rescore", str(tmp_path / "in.jsonl"),
        "-o", str(tmp_path / "out.jsonl"), "--judge", "openai", "--judge-base-url", server.url,
        "--escalate", "always", "--judge-timeout", "60", *extra,  # margin for a loaded machine
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)


def roots(path: Path) -> list[dict]:
    return [dict(r.attributes) for r in read_records(path) if not r.parent_span_id]


def test_rescore_with_a_judge_sends_one_request_per_trace_and_a_rerun_costs_nothing(tmp_path):
    traces = bench_file(tmp_path / "in.jsonl", ("template_progress", "paraphrased_loop"))
    content = json.dumps({"stagnation": {"score": 1}})
    reply = Reply(body={"choices": [{"message": {"content": content}}], "usage": {"prompt_tokens": 900}})
    cache = tmp_path / "answers.sqlite3"
    with ScriptedServer([reply]) as server:
        first = rescore(tmp_path, server, "--judge-cache", str(cache))
        assert first.returncode == 0, first.stderr
        assert len(server.received) == traces == 2
        attrs = roots(tmp_path / "out.jsonl")
        assert sorted(a["semloop.judge.status"] for a in attrs) == ["judged", "judged"]
        assert all(a["semloop.judge.input_tokens"] == 900 for a in attrs)
        assert "judge openai (gpt-4o-mini): 2 calls for 2 traces" in first.stdout
        second = rescore(tmp_path, server, "--judge-cache", str(cache))
        assert second.returncode == 0, second.stderr
        assert len(server.received) == 2  # nothing more was sent
        assert sorted(a["semloop.judge.status"] for a in roots(tmp_path / "out.jsonl")) == [
            "cached",
            "cached",
        ]
        assert "0 calls for 2 traces, 2 saved (0 by escalation, 2 cached)" in second.stdout


def test_serve_and_rescore_take_the_same_judge_options_over_the_environment():
    from otel_semloop.cli import _parser
    from otel_semloop.judges.settings import JudgeSettings, settings_from_args

    env = {"SEMLOOP_JUDGE": "local", "SEMLOOP_JUDGE_ESCALATE": "always", "SEMLOOP_JUDGE_TIMEOUT": "7"}
    for command in (["serve"], ["rescore", "in.jsonl", "-o", "out.jsonl"]):
        assert settings_from_args(_parser().parse_args(command), env) == JudgeSettings(
            judge="local", escalate="always", timeout=7.0
        )
        args = _parser().parse_args(
            [*command, "--judge", "openai", "--escalate", "0.25", "--judge-timeout", "3"]
        )
        assert settings_from_args(args, env) == JudgeSettings(judge="openai", escalate="0.25", timeout=3.0)
    assert settings_from_args(_parser().parse_args(["serve"]), {}).enabled is False
