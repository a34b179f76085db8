"""The headline table: how far is TopoOpt from optimal, per workload and size.

For every instance of the co-optimized (``coopt``) and synthetic (``mixed``) families it
compares TopoOpt's inner step -- TopologyFinder and TotientPerms, each with its own routing and
with the optimal (LP) routing of its own topology and rings (the ``-lp`` methods) -- with the
best solution any method found and the best bound that certifies it:

* ``topology gap`` of a heuristic = the gap of its LP-routed solution to the best bound whose
  scope covers it (:mod:`.gaps`): what its *topology* loses, routing taken out of the picture;
* ``routing gap`` = ``(own - LP) / own``: what its *routing* adds on top, on that topology;
* ``certified gap`` = the gap of the best solution found to the best bound covering it: how
  well the instance is solved at all. The bound's source and scope are named.

Gaps are in percent of the objective (``100 (objective - bound) / objective``), objectives in
seconds. A missing entry means the method did not run (or found nothing) on that instance.
"""

from __future__ import annotations

import pandas as pd

from .gaps import SOLVED
from .render import render
from .tables import gap_rows, natural_key

TOPOOPT = ("topologyfinder", "totientperms")
FAMILIES = ("coopt", "mixed")
COLUMNS = ["family", "workload", "n", "degree", "link_gbps",
           "tf_s", "tf_lp_s", "tf_topology_gap_pct", "tf_routing_gap_pct",
           "tp_s", "tp_lp_s", "tp_topology_gap_pct", "tp_routing_gap_pct",
           "best_s", "best_by", "bound_s", "bound_by", "certified_gap_pct"]
SHORT = {"topologyfinder": "tf", "totientperms": "tp"}


def workload_of(meta) -> str:
    """The workload an instance's traffic comes from (``meta.cooptimize.model``), or the
    MP share of a synthetic ``mixed`` instance."""
    if not isinstance(meta, dict):
        return "-"
    co = meta.get("cooptimize")
    if isinstance(co, dict) and co.get("model"):
        return str(co["model"])
    params = meta.get("params")
    if isinstance(params, dict) and params.get("mp_share") is not None:
        return f"mixed, MP {100 * float(params['mp_share']):.0f}%"
    return str(meta.get("generator", "-"))


def headline_table(runs: pd.DataFrame, families=FAMILIES, **bound_kw) -> pd.DataFrame:
    """One row per instance of ``families`` (module docstring)."""
    runs = runs[runs["family"].isin(list(families))]
    if runs.empty:
        return pd.DataFrame(columns=COLUMNS)
    g = gap_rows(runs, **bound_kw)
    g = g[g["status"].isin(SOLVED) & g["objective"].notna()]
    g = g[g["objective_kind"].fillna("comm_time") == "comm_time"]
    rows = []
    for (family, _name, _ihash), grp in g.groupby(["family", "instance_name", "instance_hash"]):
        first = grp.iloc[0]
        best_run = grp.loc[grp["objective"].astype(float).idxmin()]
        row = {"family": family, "workload": workload_of(first["instance_meta"]),
               "n": int(first["n"]), "degree": int(first["degree"]),
               "link_gbps": float(first["link_gbps"]),
               "best_s": float(best_run["objective"]), "best_by": best_run["method"],
               "bound_s": best_run["best_bound"], "bound_by": best_run["bound_source"],
               "certified_gap_pct": best_run["gap_pct"]}
        for method, short in SHORT.items():
            own = _best(grp, method)
            lp = _best(grp, f"{method}-lp")
            row[f"{short}_s"] = None if own is None else float(own["objective"])
            row[f"{short}_lp_s"] = None if lp is None else float(lp["objective"])
            row[f"{short}_topology_gap_pct"] = None if lp is None else lp["gap_pct"]
            row[f"{short}_routing_gap_pct"] = None if own is None or lp is None else max(
                0.0, 100.0 * (float(own["objective"]) - float(lp["objective"]))
                / float(own["objective"]))
        rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS)
    order = sorted(range(len(df)), key=lambda i: (
        df["family"].iloc[i], natural_key(df["workload"].iloc[i]), df["n"].iloc[i],
        df["degree"].iloc[i], df["link_gbps"].iloc[i]))
    return df.iloc[order].reset_index(drop=True)


def _best(grp: pd.DataFrame, method: str):
    rows = grp[grp["method"] == method]
    return None if rows.empty else rows.loc[rows["objective"].astype(float).idxmin()]


def summary_lines(df: pd.DataFrame) -> list[str]:
    """The headline in words: medians and ranges of the gaps over the table's rows."""
    if df.empty:
        return ["no co-optimized or mixed instance in the store"]

    def stats(col: str) -> str:
        v = pd.to_numeric(df[col], errors="coerce").dropna()
        if v.empty:
            return "-"
        return f"median {v.median():.1f}%, range {v.min():.1f}-{v.max():.1f}% ({len(v)} instances)"

    found = df["best_by"].value_counts()
    who = ", ".join(f"{m} {c}" for m, c in found.items())
    return [
        f"TopologyFinder's topology (LP-routed) is {stats('tf_topology_gap_pct')} from the best "
        f"certifying bound; its own routing adds {stats('tf_routing_gap_pct')}.",
        f"TotientPerms' topology: {stats('tp_topology_gap_pct')}; its routing adds "
        f"{stats('tp_routing_gap_pct')}.",
        f"Best solution found vs best valid bound (certified gap): {stats('certified_gap_pct')}.",
        f"Best topology found by: {who}.",
    ]


FORMATS = {c: "{:.4g}" for c in ("tf_s", "tf_lp_s", "tp_s", "tp_lp_s", "best_s", "bound_s")} | {
    c: "{:.1f}" for c in COLUMNS if c.endswith("_pct")} | {"link_gbps": "{:g}"}


def headline(runs: pd.DataFrame, fmt: str, **bound_kw) -> str:
    """The headline table as text (``md``, ``latex``, ``csv``, ``json``); md and LaTeX get a
    caption with the definitions and the summary in words."""
    df = headline_table(runs, **bound_kw)
    caption = ("How far is TopoOpt from optimal. TF = TopologyFinder, TP = TotientPerms, each "
               "with its own routing and with the LP routing of its own topology and rings "
               "(+LP); topology gap = LP-routed objective vs the best bound covering it; "
               "routing gap = (own - LP) / own; certified gap = best solution found vs the best "
               "bound covering it (bounds only from scopes that contain the solution). "
               + " ".join(summary_lines(df)))
    return render(df, fmt, caption=caption, formats=FORMATS, label="tab:headline")
