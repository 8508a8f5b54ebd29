"""``bench/mutation_check.py`` stays applicable: each mutation still finds its line.

A refactor that rewrites a mutated line makes that mutation "not applied" and silently
drops the check it stood for; this keeps the list in step with the code it mutates.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.mutation_check import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_finds_its_line_once_and_names_tests_that_exist(mutation: Mutation) -> None:
    text = (ROOT / mutation.path).read_text(encoding="utf-8")
    assert text.count(mutation.old) == 1, f"{mutation.name}: its line is not in {mutation.path} once"
    assert mutation.new != mutation.old
    assert all((ROOT / test.split("::")[0]).exists() for test in mutation.tests), mutation.tests
