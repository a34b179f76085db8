"""The headline table: how far is TopoOpt from optimal, per workload and size.

For every instance of the co-optimized (``coopt``) and synthetic (``mixed``) families it
compares TopoOpt's inner step -- TopologyFinder and TotientPerms, each with its own routing and
with the optimal (LP) routing of its own topology and rings (the ``-lp`` methods) -- with the
best solution any method found and the best bound that certifies it:

* ``topology gap`` of a heuristic = the gap of its LP-routed solution to the best bound whose
  scope covers it (:mod:`.gaps`): what its *topology* loses, routing taken out of the picture;
* ``routing gap`` = ``(own - LP) / own``: what its *routing* adds on top, on that topology;
* ``certified gap`` = the gap of the best solution found to the best bound covering it: how
  well the instance is solved at all. The bound's source and scope are named, and
  ``best_rings`` says which ring scope the best solution lies in (``totient``: its rings are
  TotientPerms orders; ``any``: they are not);
* the two ring scopes side by side (:data:`~topoopt_milp.core.scope.CERTIFIED_SPACES`, the
  same rule as ``certify``): ``bound_any`` is the best bound valid for *every* ring order
  (the instance's own problem) and ``gap_any`` the best solution's gap to it;
  ``bound_totient`` the best bound valid for every TotientPerms-ring solution and
  ``gap_totient`` the gap of the best TotientPerms-ring solution to it.

Gaps are in percent of the objective (``100 (objective - bound) / objective``), objectives in
seconds. A missing entry means the method did not run (or found nothing) on that instance.
"""

from __future__ import annotations

import pandas as pd

from ..core.scope import Features, space_features
from .gaps import DEFAULT_LEVELS, SOLVED, bound_candidates
from .render import render
from .tables import gap_rows, natural_key

TOPOOPT = ("topologyfinder", "totientperms")
FAMILIES = ("coopt", "mixed")
COLUMNS = ["family", "workload", "n", "degree", "link_gbps",
           "tf_s", "tf_lp_s", "tf_topology_gap_pct", "tf_routing_gap_pct",
           "tp_s", "tp_lp_s", "tp_topology_gap_pct", "tp_routing_gap_pct",
           "best_s", "best_by", "best_rings", "bound_s", "bound_by", "certified_gap_pct",
           "bound_any_s", "bound_any_by", "gap_any_pct",
           "tp_rings_best_s", "bound_totient_s", "bound_totient_by", "gap_totient_pct"]
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
    cands = bound_candidates(runs, bound_kw.get("bound_methods"), bound_kw.get("analytic", True))
    levels = bound_kw.get("levels", DEFAULT_LEVELS)
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
        feats = best_run["features"] if isinstance(best_run["features"], dict) else {}
        row["best_rings"] = "totient" if Features.from_dict(feats).rings_totient else "any"
        mine = cands[cands["instance_hash"] == first["instance_hash"]] if not cands.empty else cands
        row.update(_space_columns(grp, mine, levels))
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


def _space_columns(grp: pd.DataFrame, cands: pd.DataFrame, levels) -> dict:
    """``bound_any`` / ``gap_any`` and ``bound_totient`` / ``gap_totient`` of one instance
    (module docstring): the largest bound whose scope covers every solution of the ring
    space, and the gap of the best solution inside that space."""
    out: dict = {}
    objs = grp["objective"].astype(float)
    tp = grp[[Features.from_dict(f).rings_totient if isinstance(f, dict) else False
              for f in grp["features"]]]
    best = {"any": objs.min(), "totient": tp["objective"].astype(float).min() if len(tp) else None}
    out["tp_rings_best_s"] = best["totient"]
    for rings in ("any", "totient"):
        stand_in = space_features(rings)
        value, by = None, None
        for v, src, scope in zip(cands.get("value", []), cands.get("source", []),
                                 cands.get("scope", []), strict=True):
            if scope.level in levels and scope.covers(stand_in) and (value is None or v > value):
                value, by = float(v), src
        obj = best[rings]
        gap = None if value is None or obj is None or pd.isna(obj) else (
            0.0 if obj <= 0 else max(0.0, 100.0 * (obj - value) / obj))
        out[f"bound_{rings}_s"], out[f"bound_{rings}_by"], out[f"gap_{rings}_pct"] = value, by, gap
    return out


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
        f"Best solution found vs best valid bound (certified gap, in the scope of the best "
        f"solution): {stats('certified_gap_pct')}; against a bound valid for every ring order: "
        f"{stats('gap_any_pct')}; best TotientPerms-ring solution against a bound valid for "
        f"the TotientPerms orders: {stats('gap_totient_pct')}.",
        f"Best topology found by: {who}.",
    ]


FORMATS = {c: "{:.4g}" for c in ("tf_s", "tf_lp_s", "tp_s", "tp_lp_s", "best_s", "bound_s",
                                  "bound_any_s", "tp_rings_best_s", "bound_totient_s")} | {
    c: "{:.1f}" for c in COLUMNS if c.endswith("_pct")} | {"link_gbps": "{:g}"}


def headline(runs: pd.DataFrame, fmt: str, **bound_kw) -> str:
    """The headline table as text (``md``, ``latex``, ``csv``, ``json``); md and LaTeX get a
    caption with the definitions and the summary in words."""
    df = headline_table(runs, **bound_kw)
    caption = ("How far is TopoOpt from optimal. TF = TopologyFinder, TP = TotientPerms, each "
               "with its own routing and with the LP routing of its own topology and rings "
               "(+LP); topology gap = LP-routed objective vs the best bound covering it; "
               "routing gap = (own - LP) / own; certified gap = best solution found vs the best "
               "bound covering it (bounds only from scopes that contain the solution; best rings "
               "= the ring scope of the best solution); any = bound valid for every ring order "
               "and the best solution's gap to it; totient = bound valid for the TotientPerms "
               "ring orders and the gap of the best TotientPerms-ring solution to it. "
               + " ".join(summary_lines(df)))
    return render(df, fmt, caption=caption, formats=FORMATS, label="tab:headline")
