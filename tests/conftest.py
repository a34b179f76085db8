"""Shared fixtures: a small valid instance dict, the data folder, a CLI runner and a tiny
instance library for sweeps."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from topoopt_milp.core.instance import make_instance

DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def instance_dict() -> dict:
    """A valid topoopt-instance/1 object with both kinds of traffic (n = 6, d = 3)."""
    return {
        "format": "topoopt-instance/1",
        "name": "tiny",
        "n": 6,
        "degree": 3,
        "link_gbps": 100.0,
        "regular": True,
        "allreduce": [{"members": [0, 2, 4], "bytes": 3.0e8}],
        "mp": [[0, 3, 1.0e7], [1, 5, 2.5e6], [5, 1, 4.0e5]],
        "compute_s": 0.01,
        "meta": {"generator": "hand", "seed": 0},
    }


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


TEX_INSTALL = ("apt-get install --no-install-recommends texlive-latex-base "
               "texlive-latex-recommended (what .ci/run does)")


@pytest.fixture
def compile_latex(tmp_path):
    """``compile_latex(texts)``: typeset each LaTeX table text in the minimal article with the
    preamble the tables ask for, and fail on a LaTeX error, an overfull box or a float too
    large for the page; returns the logs. Skips, saying how to install TeX, without pdflatex."""
    import re
    import shutil
    import subprocess

    from topoopt_milp.bench.render import PREAMBLE

    if shutil.which("pdflatex") is None:
        pytest.skip(f"pdflatex not installed, LaTeX tables not compiled: {TEX_INSTALL}")

    def run(texts, name="doc"):
        logs = []
        for k, tex in enumerate(texts):
            stem = f"{name}{k}"
            (tmp_path / f"{stem}.tex").write_text(
                "\\documentclass{article}\n" + PREAMBLE + "\n\\begin{document}\n" + tex
                + "\n\\end{document}\n")
            r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                                f"{stem}.tex"], cwd=tmp_path, capture_output=True, text=True,
                               timeout=120)
            log = (tmp_path / f"{stem}.log").read_text(errors="replace")
            assert r.returncode == 0, f"{stem}: pdflatex failed\n{log[-3000:]}"
            bad = re.findall(r"^(?:Overfull \\[hv]box.*|.*Float too large.*|! .*)$", log, re.M)
            assert not bad, f"{stem}: {bad}"
            assert (tmp_path / f"{stem}.pdf").stat().st_size > 1000
            logs.append(log)
        return logs

    return run


@pytest.fixture
def library(tmp_path):
    """Two tiny instances (n = 6, 8; d = 4) with AllReduce and MP traffic in folder `tiny/`."""
    root = tmp_path / "lib" / "tiny"
    root.mkdir(parents=True)
    for n in (6, 8):
        inst = make_instance(n, 4, 100.0, allreduce=[(range(n), 2e8)],
                             mp=[(0, n // 2, 3e7), (1, n - 1, 1e7)], name=f"tiny{n}")
        inst.save(root / f"tiny{n}.json")
    (root / "notes.json").write_text('{"not": "an instance"}')  # skipped by folder search
    return tmp_path / "lib"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The fuzz corpus of tests/test_fuzz_input.py written to a folder (its ``make_world``),
    for every fuzz test file."""
    from test_fuzz_input import make_world

    return make_world(tmp_path_factory.mktemp("fuzz"))


def pytest_terminal_summary(terminalreporter):
    """The fuzz corpus' counts per class (tests/helpers.py ``fuzz_summary``)."""
    from helpers import FUZZ_SUMMARY

    if FUZZ_SUMMARY:
        terminalreporter.section("fuzz corpus: counts per class")
        for table in FUZZ_SUMMARY:
            terminalreporter.write_line(table)
            terminalreporter.write_line("")
