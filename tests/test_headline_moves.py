"""benchmarks/headline_moves.py: the per-instance account between two headline tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import headline_moves  # noqa: E402


def test_moves_name_the_side_and_count_it(tmp_path, capsys):
    old = pd.read_csv(ROOT / "results" / "headline.csv")
    new = old.copy()
    open_rows = new.index[new["certified_gap_pct"] > 1.0]
    up, low = open_rows[0], open_rows[1]
    new.loc[up, "best_s"] *= 0.99
    new.loc[low, "bound_s"] *= 1.01
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "moves.md"
    assert headline_moves.main([str(tmp_path / "old.csv"), str(tmp_path / "new.csv"),
                                "--out", str(out)]) == 0
    df = headline_moves.joined(old, new)
    assert df.loc[up, "moved"] == "upper" and df.loc[low, "moved"] == "lower"
    assert (df.drop(index=[up, low])["moved"] == "none").all()
    summ = headline_moves.summary(df)
    assert summ["upper_moved"].sum() == 1 and summ["bound_moved"].sum() == 1
    assert "| upper" in out.read_text() or "upper |" in out.read_text()


def test_a_missing_file_is_one_line_and_exit_2(tmp_path, capsys):
    assert headline_moves.main([str(tmp_path / "nope.csv"), str(tmp_path / "nope.csv")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
