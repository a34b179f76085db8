"""The documentation's code examples run: every ``>>>`` example in ``docs/*.md`` and the
README is executed as a doctest (from the repository root, where their paths point)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md"])


@pytest.mark.parametrize("path", [p for p in DOCS if ">>> " in p.read_text()],
                         ids=lambda p: p.name)
def test_doc_examples_run(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS
                              | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{path.name}: {result.failed} of {result.attempted} failed"
