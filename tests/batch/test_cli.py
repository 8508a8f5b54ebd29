"""`otel-semloop rescore`: the verdict lands on the root span, everything else survives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bench.deepeval_tree import tree_to_spans
from otel_semloop.batch.inputs import read_records
from otel_semloop.cli import main
from otel_semloop.otlp import records_to_traces_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_traces.otlp.jsonl"

LOOPING_TREE = {
    "type": "agent",
    "name": "engineer",
    "input": "Fix the failing build",
    "output": "",
    "children": [
        child
        for _ in range(6)
        for child in (
            {"type": "llm", "name": "reason", "output": "I will grep for the error again.", "children": []},
            {
                "type": "tool",
                "name": "grep",
                "input": {"pattern": "Error"},
                "output": "no matches",
                "children": [],
            },
        )
    ],
}


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def roots_by_trace(path: Path) -> dict[str, dict]:
    roots = {}
    for record in read_records(path):
        if not record.parent_span_id:
            roots[record.trace_id] = {"attributes": dict(record.attributes), "events": record.events}
    return roots


def test_rescore_writes_the_contract_attributes_and_an_evaluation_event_on_each_agent_root(tmp_path, capsys):
    out = tmp_path / "scored.jsonl"
    assert main(["rescore", str(EXAMPLE), "-o", str(out)]) == 0
    roots = roots_by_trace(out)
    scored = {tid: r for tid, r in roots.items() if "semloop.label" in r["attributes"]}
    assert len(scored) == 4  # the fifth trace is a plain HTTP request: not an agent run
    labels = sorted(r["attributes"]["semloop.label"] for r in scored.values())
    assert labels == ["loop", "loop", "no_loop", "no_loop"]
    for root in scored.values():
        attrs = root["attributes"]
        assert isinstance(attrs["semloop.loop.detected"], bool)
        assert attrs["semloop.loop.detected"] == (attrs["semloop.label"] == "loop")
        assert 0.0 <= attrs["semloop.score"] <= 1.0
        assert isinstance(attrs["semloop.deepeval.score"], float)
        (event,) = [e for e in root["events"] if e.name == "gen_ai.evaluation.result"]
        assert event.attributes["gen_ai.evaluation.score.label"] == attrs["semloop.label"]
        assert event.attributes["gen_ai.evaluation.score.value"] == attrs["semloop.score"]
    table = capsys.readouterr().out
    assert "4 agent traces scored, 2 loops" in table


def test_rescore_keeps_every_span_and_leaves_non_agent_lines_byte_identical(tmp_path):
    out = tmp_path / "scored.jsonl"
    main(["rescore", str(EXAMPLE), "-o", str(out), "-q"])
    before = EXAMPLE.read_bytes().splitlines()
    after = out.read_bytes().splitlines()
    assert len(before) == len(after)
    ids_before = [r.span_id for r in read_records(EXAMPLE)]
    ids_after = [r.span_id for r in read_records(out)]
    assert ids_before == ids_after
    assert before[-1] == after[-1]  # the plain HTTP trace gains nothing


def test_a_trace_split_across_lines_and_files_is_scored_once_as_a_whole(tmp_path):
    spans = tree_to_spans(LOOPING_TREE, "split")
    first = write_lines(
        tmp_path / "a.jsonl", [records_to_traces_json(spans[:5]), records_to_traces_json(spans[5:9])]
    )
    second = write_lines(tmp_path / "b.jsonl", [records_to_traces_json(spans[9:])])
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(first), str(second), "-o", str(out), "-q"]) == 0
    (root,) = roots_by_trace(out).values()
    assert root["attributes"]["semloop.label"] == "loop"
    in_loop = [r for r in read_records(out) if r.attributes.get("semloop.in_loop")]
    assert in_loop, "the step spans forming the loop are marked"
    assert len(read_records(out)) == len(spans)


def test_a_malformed_line_is_reported_with_its_place_and_copied_through(tmp_path, capsys):
    good = records_to_traces_json(tree_to_spans(LOOPING_TREE, "good"))
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(orjson.dumps(good) + b"\n{not json\n" + orjson.dumps(good) + b"\n")
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 2  # input problems
    assert out.read_bytes().splitlines()[1] == b"{not json"
    assert "mixed.jsonl:2" in capsys.readouterr().err


def test_missing_input_is_a_usage_error(tmp_path, capsys):
    assert main(["rescore", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_console_script_runs_as_a_module(tmp_path):
    out = tmp_path / "scored.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "otel_semloop.cli", "rescore", str(EXAMPLE), "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "agent traces scored" in done.stdout
    assert out.stat().st_size > EXAMPLE.stat().st_size


def test_output_to_stdout_moves_the_table_to_stderr(capfdbinary):
    assert main(["rescore", str(EXAMPLE), "-o", "-"]) == 0
    captured = capfdbinary.readouterr()
    assert captured.out.count(b"\n") == len(EXAMPLE.read_bytes().splitlines())
    assert b"agent traces scored" in captured.err


def test_lexical_mode_lets_deepeval_decide_and_default_mode_catches_what_it_misses(tmp_path):
    by_mode = {}
    for mode in ("default", "lexical"):
        out = tmp_path / f"{mode}.jsonl"
        assert main(["rescore", str(EXAMPLE), "-o", str(out), "-q", "--mode", mode]) == 0
        by_mode[mode] = {
            tid: (r["attributes"]["semloop.label"], r["attributes"]["semloop.deepeval.score"])
            for tid, r in roots_by_trace(out).items()
            if "semloop.label" in r["attributes"]
        }
    assert by_mode["default"].keys() == by_mode["lexical"].keys()
    for tid, (label, deepeval) in by_mode["lexical"].items():
        assert label == ("loop" if deepeval < 0.5 else "no_loop")
        assert by_mode["default"][tid][1] == deepeval  # the compatibility score never changes
    # the A-B file-reading cycle: deepeval scores it 0.8, the default detectors stop it
    missed = [tid for tid, (label, _) in by_mode["lexical"].items() if label == "no_loop"]
    assert any(by_mode["default"][tid][0] == "loop" for tid in missed)


def test_bad_detector_settings_are_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SEMLOOP_DETECT_CYCLE_REPEATS", "zero")
    assert main(["rescore", str(EXAMPLE), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "SEMLOOP_DETECT_CYCLE_REPEATS" in capsys.readouterr().err


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("otel-semloop ")


def test_a_rescore_without_a_judge_does_not_import_the_judge(tmp_path):
    # the judge flags are on every rescore; the judge itself (asyncio, sqlite3) is imported
    # only when one is asked for (start-up CPU)
    source = EXAMPLE
    code = (
        "import sys\n"
        "from otel_semloop.cli import main\n"
        f"assert main(['rescore', {str(source)!r}, '-o', {str(tmp_path / 'out.jsonl')!r}, '-q']) == 0\n"
        "print(sorted(m for m in ('asyncio', 'sqlite3', 'otel_semloop.judges.judge') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_name_of_the_judges_package_is_there_when_asked_for():
    import importlib

    judges = importlib.import_module("otel_semloop.judges")
    for name in judges.__all__:
        value = getattr(judges, name)
        home = importlib.import_module(value.__module__) if hasattr(value, "__module__") else None
        assert home is None or getattr(home, name) is value
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        judges.Nope  # noqa: B018
    from otel_semloop.judges import JudgedScorer, make_judge  # the from-import form too

    assert JudgedScorer.__name__ == "JudgedScorer" and callable(make_judge)
