"""Which side moved between two headline tables (issue 16, item 5): per coopt / mixed instance
the old and new best solution, best covering bound and certified gap, and ``moved`` (``upper``,
``lower``, ``both``, ``none``; :func:`bench_certify.moved`), then per family the median and
maximum certified gap before and after and how many instances moved on each side.

Both tables are ``results/headline.csv`` files as ``reproduce`` writes them, e.g. the committed
one of an earlier commit against today's::

    git show REV:results/headline.csv > /tmp/old-headline.csv
    python benchmarks/headline_moves.py /tmp/old-headline.csv results/headline.csv \\
        [--out results/headline-moves.md] [--all]

Only rows whose best solution, bound or gap changed are listed unless ``--all``. A reader can
re-check every figure from the two csv files: nothing else is read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from bench_certify import moved

KEY = ["family", "workload", "n", "degree", "link_gbps"]
PAIRS = [("best_s", "best"), ("bound_s", "bound"), ("certified_gap_pct", "gap"),
         ("best_by", "best_by"), ("bound_by", "bound_by")]


def joined(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per instance of ``new``: its old and new figures side by side."""
    cols = KEY + [c for c, _ in PAIRS]
    df = new[cols].merge(old[cols], on=KEY, how="left", suffixes=("_new", "_old"))
    out = df[KEY].copy()
    for col, short in PAIRS:
        out[f"old_{short}"] = df[f"{col}_old"]
        out[f"new_{short}"] = df[f"{col}_new"]
    out["moved"] = [moved(ob, olb, nb, nlb) for ob, olb, nb, nlb in
                    zip(out["old_best"], out["old_bound"], out["new_best"], out["new_bound"],
                        strict=True)]
    return out


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per family: certified gap median / max before and after, instances moved per side."""
    rows = []
    for fam, g in df.groupby("family", sort=True):
        sides = g["moved"].str.split(" ").str[0]
        rows.append({"family": fam, "instances": len(g),
                     "gap_median_old": g["old_gap"].median(), "gap_median_new": g["new_gap"].median(),
                     "gap_max_old": g["old_gap"].max(), "gap_max_new": g["new_gap"].max(),
                     "upper_moved": int(sides.isin(["upper", "both"]).sum()),
                     "bound_moved": int(sides.isin(["lower", "both"]).sum()),
                     "best_worse": int(g["moved"].str.contains("worse").sum())})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path, help="the earlier headline.csv")
    ap.add_argument("new", type=Path, help="the later headline.csv")
    ap.add_argument("--out", type=Path, help="also write the report to this markdown file")
    ap.add_argument("--all", action="store_true", help="list unchanged instances too")
    args = ap.parse_args(argv)
    for path in (args.old, args.new):
        if not path.is_file():
            print(f"{path}: no such file", file=sys.stderr)
            return 2
    try:
        old, new = pd.read_csv(args.old), pd.read_csv(args.new)
        df = joined(old, new)
    except (KeyError, ValueError, pd.errors.ParserError) as exc:
        print(f"{args.old} / {args.new}: not headline tables ({exc})", file=sys.stderr)
        return 2
    listed = df if args.all else df[(df["moved"] != "none")
                                    | (df["old_gap"].round(2) != df["new_gap"].round(2))]
    text = (f"# Headline moves: `{args.old}` -> `{args.new}`\n\n"
            "Certified gap [%] = best solution vs the best bound covering it (the scope of the "
            "best solution), as in the headline.\n\n"
            + summary(df).to_markdown(index=False, floatfmt=".1f") + "\n\n"
            + listed.to_markdown(index=False, floatfmt=".4g") + "\n")
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
