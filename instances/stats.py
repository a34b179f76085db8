"""Traffic statistics of library folders: MP share of bytes, AllReduce group sizes relative to
n, number of groups and MP pairs, per instance and as a distribution over each folder.

    python instances/stats.py instances/coopt [instances/mixed ...] [--per-instance]

Prints Markdown (pasted into the folders' READMEs). Bytes are the instance's injected bytes
(:meth:`Instance.total_bytes`): MP demands plus every AllReduce ring edge, ``2 (k-1) S`` per
group of ``k`` members and ``S`` bytes, so the MP share is ``mp_bytes / total_bytes``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from topoopt_milp.core.instance import Instance

SHARE_BINS = (0.0, 1e-12, 0.05, 0.15, 0.30, 0.50, 1.0)
SHARE_LABELS = ("0", "(0, 5%]", "(5, 15%]", "(15, 30%]", "(30, 50%]", "> 50%")


def instance_row(path: Path) -> dict:
    inst = Instance.load(path)
    sizes = [len(g.members) for g in inst.allreduce]
    total = inst.total_bytes()
    coopt = inst.meta.get("cooptimize", {})
    row = {
        "instance": inst.name,
        "n": inst.n,
        "d": inst.degree,
        "gbps": inst.link_gbps,
        "mp_share": inst.mp_bytes() / total if total else 0.0,
        "groups": len(sizes),
        "largest_group_over_n": max(sizes) / inst.n if sizes else 0.0,
        "smallest_group": min(sizes) if sizes else 0,
        "mp_pairs": len(inst.mp),
        "total_bytes": total,
    }
    if coopt:
        row["speedup"] = coopt["initial_iteration_s"] / coopt["final_iteration_s"]
        row["strategy"] = coopt["final_strategy"]
    return row


def folder_table(folder: Path) -> pd.DataFrame:
    return pd.DataFrame([instance_row(p) for p in sorted(folder.glob("*.json"))])


def distribution(df: pd.DataFrame) -> str:
    """The folder's distribution (Markdown): MP share bins and quantiles, largest group vs n,
    numbers of groups and MP pairs."""
    k = len(df)
    share = df["mp_share"].round(9)  # a set share of 5% may come out 4.9999999999%
    bins = pd.cut(share, SHARE_BINS, labels=SHARE_LABELS, include_lowest=True)
    hist = bins.value_counts().reindex(SHARE_LABELS, fill_value=0)
    q = share.quantile([0, 0.25, 0.5, 0.75, 1]).to_numpy()
    sub = int((df["largest_group_over_n"] < 1).sum())
    no_ar = int((df["groups"] == 0).sum())
    pure_dp = int(((df["groups"] == 1) & (df["largest_group_over_n"] == 1)
                   & (share < 0.01)).sum())
    some_sub = (df["groups"] > 0) & (df["smallest_group"] < df["n"])
    both = int((some_sub & (share >= 0.05)).sum())
    lines = [
        f"{k} instances.",
        "",
        "(a) MP share of bytes: " + ", ".join(f"{lab}: {c}" for lab, c in hist.items())
        + "; quantiles min / 25% / median / 75% / max = "
        + " / ".join(f"{100 * x:.1f}%" for x in q) + ".",
        "",
        f"(b) largest AllReduce group smaller than n: {sub} of {k} ({100 * sub / k:.0f}%, "
        f"counting {no_ar} with no AllReduce at all, largest group / n = 0). Largest group / n: "
        + ", ".join(f"{v:g}: {c}" for v, c in
                    df["largest_group_over_n"].round(4).value_counts().sort_index().items())
        + ".",
        "",
        "(c) AllReduce groups per instance: "
        + _quantiles(df["groups"]) + "; MP pairs per instance: " + _quantiles(df["mp_pairs"])
        + ".",
        "",
        f"Pure data parallel (one group of n, MP < 1% of bytes): {pure_dp} of {k}. "
        f"Some AllReduce group smaller than n: {int(some_sub.sum())} of {k}; that *and* MP >= 5% "
        f"of bytes: {both} of {k}.",
    ]
    if "speedup" in df:
        moved = df["speedup"] > 1 + 1e-9
        lines += ["", f"Searches that improved on their start: {int(moved.sum())} of {k} (speedup "
                  f"of the iteration time: median {df['speedup'].median():.2f}x, max "
                  f"{df['speedup'].max():.2f}x)."]
    return "\n".join(lines)


def _quantiles(s: pd.Series) -> str:
    q = np.quantile(s.to_numpy(), [0, 0.5, 1])
    return f"min {q[0]:g}, median {q[1]:g}, max {q[2]:g}"


def per_instance(df: pd.DataFrame) -> str:
    show = df.copy()
    show["mp_share"] = show["mp_share"].map(lambda v: f"{100 * v:.1f}%")
    show["largest_group_over_n"] = show["largest_group_over_n"].map(lambda v: f"{v:.3g}")
    show["total_bytes"] = show["total_bytes"].map(lambda v: f"{v:.3g}")
    if "speedup" in show:
        show["speedup"] = show["speedup"].map(lambda v: f"{v:.2f}x")
    return show.to_markdown(index=False)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--per-instance", action="store_true", help="Also print one row per file.")
    args = ap.parse_args(argv)
    for folder in args.folders:
        df = folder_table(folder)
        print(f"## {folder.name}\n")
        print(distribution(df))
        if args.per_instance:
            print()
            print(per_instance(df))
        print()


if __name__ == "__main__":
    main()
