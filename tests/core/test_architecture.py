"""The layout the architecture document describes is the layout of the package, and the
rules it states hold: dependencies point one way, no module grows long without a reason."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "otel_semloop"
DOC = ROOT / "docs" / "architecture.md"
#: Paths the document names, in backticks: ``otel_semloop/...``, ``tests/...``, ``bench/...``.
NAMED = re.compile(r"`((?:otel_semloop|tests|bench|docs)/[\w./-]*)`")
LONG = 400


def named_paths() -> set[str]:
    return set(NAMED.findall(DOC.read_text(encoding="utf-8")))


def test_the_document_names_paths() -> None:
    assert len(named_paths()) > 20


@pytest.mark.parametrize("path", sorted(named_paths()))
def test_every_module_the_document_names_exists(path: str) -> None:
    assert (ROOT / path).exists(), f"docs/architecture.md names {path}, which does not exist"


def test_every_top_level_module_and_subpackage_is_in_the_document() -> None:
    named = named_paths()
    entries = [p for p in PACKAGE.iterdir() if (p.suffix == ".py" or (p / "__init__.py").is_file())]
    missing = sorted(
        f"otel_semloop/{p.name}" + ("/" if p.is_dir() else "")
        for p in entries
        if p.name != "__init__.py" and not ({f"otel_semloop/{p.name}", f"otel_semloop/{p.name}/"} & named)
    )
    assert missing == [], "add these to docs/architecture.md"


def _imports(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return modules


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("detectors", ("otel_semloop.policy", "otel_semloop.processor", "otel_semloop.service")),
        ("otlp", ("otel_semloop.processor", "otel_semloop.service", "otel_semloop.scoring")),
        ("processor", ("otel_semloop.service",)),
        ("service", ("otel_semloop.processor",)),
    ],
)
def test_dependencies_point_one_way(folder: str, forbidden: tuple[str, ...]) -> None:
    offending = {
        f"{path.relative_to(ROOT)} imports {module}"
        for path in (PACKAGE / folder).rglob("*.py")
        for module in _imports(path)
        if module.startswith(forbidden)
    }
    assert offending == set()


def test_the_core_imports_no_front_door() -> None:
    front_doors = (
        "otel_semloop.processor",
        "otel_semloop.service",
        "otel_semloop.cli",
        "otel_semloop.rescore",
    )
    offending = {
        f"{path.name} imports {module}"
        for path in PACKAGE.glob("*.py")
        if path.name not in ("__init__.py", "__main__.py", "cli.py", "rescore.py", "autoconfig.py")
        for module in _imports(path)
        if module.startswith(front_doors)
    }
    assert offending == set()


def test_a_module_over_400_lines_says_why_at_its_top() -> None:
    unexplained = []
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        if source.count("\n") > LONG:
            docstring = ast.get_docstring(ast.parse(source)) or ""
            if not re.search(r"^Size: \S", docstring, re.M):
                unexplained.append(str(path.relative_to(ROOT)))
    assert unexplained == [], "split these, or add a 'Size: <reason>' paragraph to the module docstring"


def _package_imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, at its top or inside a function."""
    return {m for m in _imports(path) if m.startswith("otel_semloop")}


def test_steps_are_read_in_layers_with_no_import_cycle() -> None:
    """envelopes.py (the value inside an attribute string) and handoffs.py import no
    package module, tool_calls.py (the calls an LLM requested) only envelopes.py,
    messages.py (what was said) only envelopes.py, model.py (the Step that decodes itself on
    first read) only those three, conventions.py (span to step) only those: none needs a
    function-level import to dodge a cycle."""
    envelopes, messages = "otel_semloop.envelopes", "otel_semloop.messages"
    tool_calls = "otel_semloop.tool_calls"
    assert _package_imports(PACKAGE / "envelopes.py") == set()
    assert _package_imports(PACKAGE / "handoffs.py") == set()
    assert _package_imports(PACKAGE / "tool_calls.py") == {envelopes}
    assert _package_imports(PACKAGE / "messages.py") == {envelopes}
    assert _package_imports(PACKAGE / "lazy_exports.py") == set()  # (every package imports it)
    assert _package_imports(PACKAGE / "model.py") == {envelopes, messages, tool_calls}
    assert _package_imports(PACKAGE / "conventions.py") == {
        envelopes,
        "otel_semloop.handoffs",
        messages,
        tool_calls,
        "otel_semloop.model",
        tool_calls,
    }
