"""The README's reference tables stay true to the code.

* Every attribute the write-back produces has a row in "What lands on your spans" (a row
  with ``<name>`` stands for a family: ``semloop.signal.<name>.severity``). The attributes are
  collected by scoring the public benchmark with calibration on, an early partial release,
  an unscored trace, and the attribute patches the front doors add on their own
  (``{"semloop.<x>": True}`` literals in the package, such as ``semloop.late``).
* Every ``SEMLOOP_*`` variable the package reads is named in the README.
* Every signal a detector reports has a row in "Signals, and what triggers each".
"""

from __future__ import annotations

import re
from pathlib import Path

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.grouping import Release, ReleaseReason
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Verdict
from otel_semloop.writeback import patches_for, release_patches

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PACKAGE = ROOT / "otel_semloop"


def readme_attribute_patterns() -> list[re.Pattern[str]]:
    """First-column names of the tables under "What lands on your spans" (up to the next
    second-level heading), each as a pattern (``<x>`` matches one or more name parts)."""
    section = README.split("## What lands on your spans", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([a-z_.<>\-]+)` \|", section, flags=re.MULTILINE)
    return [name_pattern(n) for n in names]


def name_pattern(name: str) -> re.Pattern[str]:
    parts = re.split(r"(<[^>]+>)", name)
    return re.compile("".join(r"[\w.]+" if p.startswith("<") else re.escape(p) for p in parts) + "$")


def written_attributes() -> set[str]:
    from bench.deepeval_tree import trace_from_bench_row
    from tests.support.repo_data import BENCH, read_jsonl

    scorer = Scorer(config=DetectorConfig(calibration=True))
    written: set[str] = set()
    traces = [trace_from_bench_row(row) for row in read_jsonl(BENCH)]
    for trace in traces:
        for patch in patches_for(trace, scorer.score(trace)).values():
            written.update(patch.attributes)
            for event in patch.events:
                written.update(event.attributes)
    trace = traces[0]
    early = Release(trace_key=trace.trace_id, spans=[], reason=ReleaseReason.IDLE)
    for patch in release_patches(early, trace, scorer.score(trace)).values():
        written.update(patch.attributes)
    for patch in patches_for(trace, Verdict.unscored("scoring budget exceeded")).values():
        written.update(patch.attributes)
        for event in patch.events:
            written.update(event.attributes)
    for source in PACKAGE.rglob("*.py"):
        written.update(re.findall(r'\{\s*"(semloop\.[a-z_.]+)":\s*True\s*\}', source.read_text()))
    return written


def test_every_attribute_the_write_back_produces_is_in_the_readme():
    patterns = readme_attribute_patterns()
    assert len(patterns) > 15, "the attribute tables were not found"
    missing = sorted(a for a in written_attributes() if not any(p.match(a) for p in patterns))
    assert not missing, f"README.md 'What lands on your spans' misses: {missing}"


def test_the_attribute_check_would_catch_a_new_attribute():
    patterns = readme_attribute_patterns()
    assert any(p.match("semloop.signal.action_cycle.severity") for p in patterns)
    assert not any(p.match("semloop.brand_new_attribute") for p in patterns)


def test_every_semloop_variable_the_package_reads_is_documented():
    from otel_semloop.processor.config import Config
    from otel_semloop.service.config import ServiceConfig
    from otel_semloop.settings import environment_variables

    read = set(environment_variables(Config, "SEMLOOP_").values())
    read |= set(environment_variables(ServiceConfig, "SEMLOOP_").values())
    for source in PACKAGE.rglob("*.py"):
        read.update(re.findall(r'"(SEMLOOP_[A-Z_]+[A-Z])"', source.read_text()))
    undocumented = sorted(v for v in read if v not in README)
    assert not undocumented, f"README.md does not mention {undocumented}"


def test_every_signal_a_detector_reports_is_in_the_signals_table():
    section = README.split("## Signals, and what triggers each", 1)[1].split("\n## ", 1)[0]
    rows = " ".join(re.findall(r"^\| ([^|]+) \|", section, flags=re.MULTILINE))
    declared = set()
    for source in (PACKAGE / "detectors").glob("*.py"):
        if source.name != "lexical.py":  # deepeval's sub-scores: the attribute table has them
            declared.update(re.findall(r'^[A-Z_]+ = "([a-z_]+)"$', source.read_text(), flags=re.MULTILINE))
    assert len(declared) > 15, "the signal constants were not found"
    missing = sorted(name for name in declared if f"`{name}`" not in rows)
    assert not missing, f"README.md's signals table misses {missing}"
