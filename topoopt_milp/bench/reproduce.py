"""The experiment plan behind ``topoopt-milp reproduce``: which methods run on which instance
family, with which time limits, and the files generated from the resulting run store.

Everything under ``results/`` is produced here from raw run records (nothing hand-edited):

* ``runs.sqlite`` -- every run (the bench store; re-running resumes);
* ``headline.{md,tex,csv}`` -- how far TopoOpt is from optimal on the ``coopt`` and ``mixed``
  families: TopologyFinder and TotientPerms with their own and with LP routing (topology vs
  routing gap) and the certified gap of the best solution (:mod:`.headline`);
* ``gaps.{md,tex,csv}`` -- per-instance gap (%) of every method to the best valid bound;
  ``instances.{md,tex,csv}`` -- per (instance, method): status, objective, bound, runtime;
* ``families.{md,tex,csv}`` -- per family and method: optimal runs, mean / max gap,
  shifted geometric mean runtime;
* ``gap-<family>``, ``runtime-<family>``, ``profile-<family>`` and ``iteration``, each as
  ``.png`` and ``.pdf`` -- the figures of :mod:`.plots` (see :func:`family_figures`);
* ``reference/<family>.csv`` -- best known objective and best bound per instance (the values
  committed as ``instances/<family>/reference.csv``).

``<family>`` comes from instance files (``meta.family``), i.e. from user input: it is made
a safe file name first (:func:`.names.file_component`), every path written is checked to lie
in the output folder (:func:`.names.inside`), and ``instances/<family>/reference.csv`` is
written only for a family that is the plain name of a folder of the library.

The ``quick`` plan is a subset (small instances, short limits) that runs in a few minutes on
2 cores; the full plan is what the committed ``results/`` were made with.

The headline families (``coopt``, ``mixed``) and the ``alltoall`` reference rows are solved by
the ``certify`` portfolio (:class:`Certify`, :mod:`.portfolio`): every registered method chosen
by its spec, each run stored like a sweep's, so the tables and the headline see exactly the
runs ``certify`` makes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .gaps import SOLVED, run_gaps
from .names import display_path, file_component, inside
from .plots import NoDataError, plot_gap, plot_iteration, plot_profile, plot_runtime
from .portfolio import certify, portfolio_run_key
from .portfolio import plan as portfolio_plan
from .progress import progress_bar
from .report import write_report
from .runner import build_tasks, instance_family, read_instance_file, run_sweep
from .store import RunStore, load_runs

log = logging.getLogger(__name__)

HEURISTICS = ("totientperms", "topologyfinder", "expander", "demand-greedy", "ring")
# the headline families (coopt, mixed): TopoOpt's heuristics with their own and with LP routing
# (topology vs routing), the scalable upper bound and the bounds that certify it
DESIGNED = ("totientperms", "topologyfinder", "demand-greedy", "totientperms-lp",
            "topologyfinder-lp", "demand-greedy-lp", "lower-bounds")


# the coopt workloads whose d = 4 instances had an open certified gap before alloc-search
# (resnet50 and vgg16 are certified optimal at every n)
OPEN_D4 = ("dlrm", "candle", "gpt3-13b", "gpt3-1.3b", "bert", "ncf")


@dataclass(frozen=True)
class Sweep:
    """Methods x instances (glob patterns relative to the instance library) x seeds."""

    family: str
    patterns: tuple[str, ...]
    methods: tuple[str, ...]
    time_limit: float
    seeds: int = 1
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Certify:
    """The ``certify`` portfolio with budget ``time_limit`` on every instance matching
    ``patterns`` (each instance in turn, its runs on all the plan's cores)."""

    family: str
    patterns: tuple[str, ...]
    time_limit: float


QUICK = (
    Sweep("small", ("small/sparse-n6-*.json", "small/sparse-n8-d4-s0.json", "small/dlrm-n8-*.json"),
          (*HEURISTICS, "alloc-milp", "alloc-cpsat", "joint-cpsat"), time_limit=20),
    Sweep("circulant", ("circulant/uniform-n8-*.json", "circulant/uniform-n12-*.json",
                        "circulant/uniform-n16-*.json"),
          ("totientperms", "select-milp", "select-cpsat"), time_limit=20),
    Sweep("dnn", ("dnn/*-n16-d4.json",), HEURISTICS, time_limit=20),
    Certify("coopt", ("coopt/*-n16-d4.json",), time_limit=15),
    Certify("mixed", ("mixed/mixed-n12-*.json", "mixed/mixed-n16-d4-*.json"), time_limit=15),
)

FULL = (
    Sweep("small", ("small/*.json",),
          (*HEURISTICS, "alloc-milp", "alloc-cpsat", "joint-cpsat"), time_limit=60),
    # the joint MILP proves optimality only up to n = 6 within a minute
    Sweep("small", ("small/*-n6-*.json",), ("joint-milp",), time_limit=60),
    Sweep("circulant", ("circulant/*.json",),
          ("totientperms", "select-milp", "select-cpsat"), time_limit=60),
    Sweep("dnn", ("dnn/*.json",), HEURISTICS, time_limit=60, seeds=3),
    Sweep("bandwidth", ("bandwidth/*.json",), HEURISTICS, time_limit=60),
    Sweep("llm", ("llm/*.json",), HEURISTICS, time_limit=60, seeds=3),
    # the headline families keep the sweeps the committed store (results/runs.sqlite) holds,
    # so that `reproduce` regenerates every committed table from it without re-solving; the
    # certify portfolio runs them in the quick plan and, longer, in benchmarks/bench_certify.py
    Sweep("coopt", ("coopt/*.json",), DESIGNED, time_limit=120),
    Sweep("mixed", ("mixed/*.json",), DESIGNED, time_limit=120),
    # alloc-alternate uses its whole limit from n = 32 on (76 of the 103 instances): 60 s
    # keeps the plan near an hour on 2 cores (benchmarks/bench_alternate.py runs it longer)
    Sweep("coopt", ("coopt/*.json",), ("alloc-alternate",), time_limit=60),
    Sweep("mixed", ("mixed/*.json",), ("alloc-alternate",), time_limit=60),
    # the swap local search (issue 16, item 3) on the d = 4 instances with an open gap: in
    # alloc-milp's ring space (TotientPerms orders) on the two widest gaps, and with ring
    # orders along the topology's links (rings = tours, any ring order) on every open one.
    # One route LP takes 12-20 s at n = 128 on an idle core (1-4 s at n = 32..64).
    Sweep("coopt", ("coopt/dlrm-n128-d4.json", "coopt/candle-n128-d4.json"),
          ("alloc-search",), time_limit=180),
    Sweep("coopt", tuple(f"coopt/{m}-n128-d4.json" for m in OPEN_D4),
          ("alloc-search",), time_limit=150, settings={"rings": "tours"}),
    Sweep("coopt", tuple(f"coopt/{m}-n{k}-d4{b}.json" for k in (32, 64) for m in OPEN_D4
                         for b in ("", "-b25", "-b400") if b == "" or k == 64),
          ("alloc-search",), time_limit=45, settings={"rings": "tours"}),
    Sweep("mixed", ("mixed/mixed-n128-d4-*.json",), ("alloc-search",), time_limit=150,
          settings={"rings": "tours"}),
    Sweep("mixed", ("mixed/mixed-n32-d4-*.json", "mixed/mixed-n64-d4-*.json"),
          ("alloc-search",), time_limit=45, settings={"rings": "tours"}),
    # the exact decomposition: its bound is the strongest where it is cheap
    Sweep("coopt", ("coopt/*-n16-d4.json",), ("alloc-benders",), time_limit=60),
    Sweep("mixed", ("mixed/mixed-n12-*.json", "mixed/mixed-n16-d4-*.json"), ("alloc-benders",),
          time_limit=60),
    # Refresh of 2026-12-05 (new run keys: the runs above stay). What certify's portfolio
    # runs that the runs above predate: the bounds of both ring spaces with the gateway and
    # neighbourhood MILPs (1-4 s a run), alloc-search from the group-split starts (the cycle
    # rule) and alloc-orbit where the traffic keeps a shift symmetry that helps (bert).
    *(Sweep(fam, (f"{fam}/*.json",), ("lower-bounds",), time_limit=60,
            settings={"rings": rings}) for fam in ("coopt", "mixed") for rings in ("choose", "any")),
    Sweep("coopt", tuple(f"coopt/{m}-n128-d4.json" for m in OPEN_D4), ("alloc-search",),
          time_limit=300, settings={"rings": "tours"}),
    Sweep("mixed", ("mixed/mixed-n128-d4-*.json",), ("alloc-search",), time_limit=300,
          settings={"rings": "tours"}),
    Sweep("coopt", tuple(f"coopt/{m}-n{k}-d4{b}.json" for k in (32, 64) for m in OPEN_D4
                         for b in ("", "-b25", "-b400") if b == "" or k == 64),
          ("alloc-search",), time_limit=90, settings={"rings": "tours"}),
    Sweep("mixed", ("mixed/mixed-n32-d4-*.json", "mixed/mixed-n64-d4-*.json"),
          ("alloc-search",), time_limit=90, settings={"rings": "tours"}),
    Sweep("coopt", ("coopt/bert-n64-d4*.json", "coopt/bert-n128-d4.json"), ("alloc-orbit",),
          time_limit=150),
    # Refresh of 2026-12-06: the same search on the instances it had not run on, those with
    # a certified gap above 2% in the store of 2026-12-05 (d = 8 and n = 16, d = 4)
    Sweep("mixed", ("mixed/mixed-n128-d8-*.json",), ("alloc-search",), time_limit=300,
          settings={"rings": "tours"}),
    Sweep("mixed", tuple(f"mixed/mixed-n{k}-d8-*.json" for k in (16, 32, 64))
          + ("mixed/mixed-n16-d4-*.json",), ("alloc-search",), time_limit=90,
          settings={"rings": "tours"}),
    Sweep("coopt", ("coopt/bert-n16-d8.json", "coopt/bert-n32-d8.json", "coopt/candle-n64-d8.json",
                    "coopt/gpt3-1.3b-n16-d8.json", "coopt/gpt3-13b-n32-d8.json",
                    *(f"coopt/{m}-n16-d4.json" for m in ("bert", "gpt3-1.3b", "gpt3-13b", "ncf"))),
          ("alloc-search",), time_limit=90, settings={"rings": "tours"}),
    # the decomposition over every ring order (rings = all, scope any) where the groups are
    # small enough for all their (k - 1)! orders: its bound covers the free-order solutions.
    # 300 s (was 120 s): its bound moves only when a master solve ends (bert-n16-d4: 7
    # solves in 120 s at load 2-4, bound 0.008854 s; 18 in 300 s, 0.010633 s)
    Sweep("coopt", tuple(f"coopt/{m}.json" for m in ("bert-n16-d4", "bert-n16-d8", "dlrm-n16-d8",
                                                     "gpt3-1.3b-n16-d8")),
          ("alloc-benders",), time_limit=300, settings={"rings": "all"}),
    Sweep("mixed", ("mixed/mixed-n12-*.json", "mixed/mixed-n16-*.json"), ("alloc-benders",),
          time_limit=300, settings={"rings": "all"}),
    # the coupled neighbourhood bound (the busy nodes' MILPs joined; off by default) on the
    # n = 16 coopt instances with an open gap: bert-n16-d8 0.004496 s (any) against 0.004387 s
    # (measured 2026-12-06; no gain at n = 32, nor on mixed n = 16)
    *(Sweep("coopt", tuple(f"coopt/{m}-n16-d{d}.json" for m in ("bert", "gpt3-1.3b")
                           for d in (4, 8)), ("lower-bounds",), time_limit=150,
            settings={"rings": rings, "coupled_time": 60.0}) for rings in ("choose", "any")),
    # alloc-search after its re-routings kept the current ring orders (a group-split start
    # could not be left before: mixed-n32-d4-g4-mp15 0.071613 -> 0.070229 s in the same 90 s),
    # 120 s, on the n <= 64 instances with a certified gap above 2% in the store of 2026-12-06
    Sweep("coopt", tuple(f"coopt/{name}.json" for name in (
        "bert-n16-d8", "bert-n32-d4", "bert-n32-d8", "bert-n64-d4", "bert-n64-d4-b25",
        "bert-n64-d4-b400", "candle-n32-d4", "candle-n64-d4", "candle-n64-d8", "dlrm-n64-d4",
        "gpt3-1.3b-n16-d4", "gpt3-1.3b-n16-d8", "gpt3-1.3b-n32-d4", "gpt3-1.3b-n64-d4",
        "gpt3-13b-n32-d4", "gpt3-13b-n32-d8", "gpt3-13b-n64-d4", "gpt3-13b-n64-d4-b25",
        "gpt3-13b-n64-d4-b400", "ncf-n32-d4")), ("alloc-search",), time_limit=120,
          settings={"rings": "tours"}),
    Sweep("mixed", tuple(f"mixed/mixed-n{k}-d{d}-g4-mp{mp}.json" for k, d, mps in (
        (16, 4, "05 15 30 50"), (16, 8, "05 15 30"), (32, 4, "05 15 30 50"), (32, 8, "05 15"),
        (64, 4, "05 15 30 50"), (64, 8, "05 15 30 50")) for mp in mps.split()),
          ("alloc-search",), time_limit=120, settings={"rings": "tours"}),
    # the same fixed search at n = 128, 360 s (a move there costs 3-12 s with free rings, so
    # the 300 s runs above, which predate the fix, made 20-30 moves), on the n = 128
    # instances with a certified gap above 2% in the store of 2026-12-06
    Sweep("coopt", tuple(f"coopt/{m}-n128-d4.json" for m in ("bert", "candle", "dlrm",
                                                             "gpt3-1.3b", "gpt3-13b")),
          ("alloc-search",), time_limit=360, settings={"rings": "tours"}),
    Sweep("mixed", ("mixed/mixed-n128-*.json",), ("alloc-search",), time_limit=360,
          settings={"rings": "tours"}),
    # the bounds after the matching bound's distance levels (Lemma 3 of bounds/matching.py),
    # 90 s, where they move it: dense MP (mixed; ncf-n128-d4 is the only coopt instance); on
    # mixed re-run under the same keys after the idle capacity (bounds/idle.py) and the class
    # sums of the port-class bound
    *(Sweep(fam, patterns, ("lower-bounds",), time_limit=90, settings={"rings": rings})
      for fam, patterns in (("mixed", ("mixed/*.json",)), ("coopt", ("coopt/ncf-n128-d4.json",)))
      for rings in ("choose", "any")),
    # the hop-volume annealing with the default (TotientPerms) rings: on the MP-heavy mixed
    # instances it is as good as alloc-search (mixed-n128-d4-g4-mp50: 0.2170 s against
    # 0.2179 s; n = 64: 0.1803 against 0.1827 s); on pipeline traffic it is not (dlrm-n128-d4:
    # 0.0257 against 0.0221 s)
    Sweep("mixed", ("mixed/*.json",), ("hop-anneal",), time_limit=120),
    # the fixed search at 600 s on mixed d = 4, n = 32 and 64, where a move costs well under a
    # second and the 120 s runs still moved late (mixed-n32-d4-g4-mp15: 0.069317 s after 600 s,
    # 1598 swap batches, against 0.070135 s after 120 s). Measured in the sweep: n = 32 moved
    # 0.2-1.7% below the store's best, n = 64 not at all
    Sweep("mixed", tuple(f"mixed/mixed-n{k}-d4-g4-mp{mp}.json" for k in (32, 64)
                         for mp in ("05", "15", "30", "50")),
          ("alloc-search",), time_limit=600, settings={"rings": "tours"}),
    # the search at 600 s with group-split's nested layout and MP tours among its starts
    # (group-split:tour and :tour-nested), on the d = 4 coopt instances with nested data-parallel groups and a
    # certified gap above 2% (candle-n128-d4: the start alone 0.834 s under the route LP,
    # against 0.865 s for the store's best; benchmarks/bench_nested_tour.py)
    Sweep("coopt", tuple(f"coopt/{m}-d4.json" for m in ("candle-n32", "candle-n64", "candle-n128",
                                                         "dlrm-n64", "dlrm-n128")),
          ("alloc-search",), time_limit=600, settings={"rings": "tours"}),
    # the same 600 s on the other n = 32, d = 4 coopt instances with a certified gap above 2%
    # (their searches had run 120 s; sweep 42 moved mixed n = 32 by 0.2-1.7% at 600 s)
    Sweep("coopt", tuple(f"coopt/{m}-n32-d4.json" for m in ("bert", "gpt3-1.3b", "gpt3-13b",
                                                            "ncf")),
          ("alloc-search",), time_limit=600, settings={"rings": "tours"}),
)


def plan(quick: bool) -> tuple[Sweep, ...]:
    return QUICK if quick else FULL


def instance_paths(library: Path, sweep: Sweep) -> list[Path]:
    paths: list[Path] = []
    for pattern in sweep.patterns:
        paths.extend(sorted(library.glob(pattern)))
    if not paths:
        raise FileNotFoundError(f"instances: no file matches {sweep.patterns} under {library}")
    return list(dict.fromkeys(paths))


def run_plan(library: Path, out: Path, quick: bool, jobs: int = 1, progress: bool = True) -> Path:
    """Run every sweep of the plan into ``out/runs.sqlite`` (resuming) and return its path."""
    out.mkdir(parents=True, exist_ok=True)
    store = out / "runs.sqlite"
    sweeps = plan(quick)
    for k, sweep in enumerate(sweeps, 1):
        paths = instance_paths(library, sweep)
        if isinstance(sweep, Certify):
            run_certify(paths, store, sweep, jobs, progress, f"sweep {k}/{len(sweeps)} "
                        f"{sweep.family}: certify {len(paths)} instances, {sweep.time_limit:g} s each")
            continue
        tasks = build_tasks(paths, sweep.methods, sweep.seeds, sweep.time_limit,
                            dict(sweep.settings))
        log.info("sweep %s: %d runs", sweep.family, len(tasks))
        label = (f"sweep {k}/{len(sweeps)} {sweep.family}: {len(paths)} instances x "
                 f"{len(sweep.methods)} methods")
        summary = run_sweep(tasks, store, jobs=jobs, progress=progress, label=label)
        log.info("sweep %s: %d ran, %d skipped, %d errors", sweep.family, summary.ran,
                 summary.skipped, summary.errors)
    return store


def run_certify(paths: list[Path], store: Path, item: Certify, jobs: int,
                progress: bool = False, label: str = "certify") -> None:
    """The portfolio on each instance file in turn, every run written to ``store``; an
    instance whose portfolio with this budget is already in the store is skipped (resume)."""
    with RunStore(store) as st, progress_bar(len(paths), label, str, enabled=progress) as advance:
        finished = st.finished_keys()
        for path in paths:
            inst = read_instance_file(path)
            fam = instance_family(inst, path)
            entries = portfolio_plan(inst)
            if entries and portfolio_run_key(inst.content_hash(), entries[0], 0, item.time_limit,
                                             fam) in finished:
                advance(f"{inst.name}: already in the store")
                continue
            cert = certify(inst, item.time_limit, jobs=jobs, family=fam, on_record=st.put,
                           instance_path=display_path(path))
            gap = cert.gap_pct("any")
            advance(f"{inst.name}: {cert.status}" + ("" if gap is None else f", gap {gap:.1f}%"))


def reference_table(runs: pd.DataFrame, **bound_kw) -> pd.DataFrame:
    """Per instance: the best objective any method found and the best bound whose scope
    contains *that* solution (:mod:`.gaps`), so the bound never exceeds the objective; status
    ``optimal`` when the two agree within 1e-6 relative (whichever method reached it), else
    ``feasible``. ``source`` names the methods that gave the two numbers and the bound's
    scope."""
    rows = []
    g = run_gaps(runs, **bound_kw)
    solved = g[g["status"].isin(SOLVED) & g["objective"].notna()]
    solved = solved[solved["objective_kind"].fillna("comm_time") == "comm_time"]
    for (family, name, _ihash), grp in solved.groupby(["family", "instance_name", "instance_hash"]):
        best = grp.loc[grp["objective"].astype(float).idxmin()]
        obj = float(best["objective"])
        bound = None if pd.isna(best["best_bound"]) or isinstance(best["gap_error"], str) \
            else float(best["best_bound"])
        if isinstance(best["gap_error"], str):
            log.error("reference %s: %s", name, best["gap_error"])
        optimal = bound is not None and abs(obj - bound) <= 1e-6 * abs(obj)
        bsrc = "-" if bound is None else f"{best['bound_source']} [{best['bound_scope']}]"
        rows.append({"family": family, "instance": name, "objective": obj, "bound": bound,
                     "status": "optimal" if optimal else "feasible",
                     "source": f"objective: {best['method']}; bound: {bsrc}"})
    return pd.DataFrame(rows, columns=["family", "instance", "objective", "bound", "status",
                                       "source"])


def family_figures(runs: pd.DataFrame, out: Path, **bound_kw) -> list[Path]:
    """Figures per family, each as PNG and PDF -- ``gap-<family>``, ``runtime-<family>`` and
    the Dolan-More profile ``profile-<family>`` over the methods that ran on every instance
    of the family (families run different methods, so a single profile would share no
    instance); each drawn against the parameter that varies in the family
    (:func:`.plots.choose_axes`) -- and ``iteration`` from the ``bandwidth`` family (every
    model at five link rates)."""
    written = []
    for family, grp in runs.groupby("family"):
        size = grp["instance_hash"].nunique()
        covered = grp.groupby("method")["instance_hash"].nunique()
        complete = grp[grp["method"].isin(covered.index[covered == size])]
        jobs = (("gap", lambda p, g=grp: plot_gap(g, p, **bound_kw)),
                ("runtime", lambda p, g=grp: plot_runtime(g, p)),
                ("profile", lambda p, g=complete: plot_profile(g, p)))
        for kind, draw in jobs:
            path = inside(out, f"{kind}-{file_component(family)}.png")
            try:
                written.extend(draw(path))
            except NoDataError as exc:
                log.info("no %s: %s", path.name, exc)
    bandwidth = runs[runs["family"] == "bandwidth"]
    if not bandwidth.empty:
        written.extend(plot_iteration(bandwidth, inside(out, "iteration.png")))
    return written


def write_outputs(store: Path, out: Path, library: Path | None = None, **bound_kw) -> list[Path]:
    """Tables and figures (:func:`.report.write_report`) plus the reference values of every
    family, all from the store; returns the paths written. With ``library`` the reference
    values are also written as ``library/<family>/reference.csv`` for every family that is
    the plain name of a folder of ``library`` (no other path is ever written there)."""
    runs = load_runs(store)
    out.mkdir(parents=True, exist_ok=True)
    written = write_report(runs, out, kinds=(), **bound_kw)
    written.extend(family_figures(runs, out, **bound_kw))
    ref_dir = inside(out, "reference")
    ref_dir.mkdir(exist_ok=True)
    for family, grp in reference_table(runs, **bound_kw).groupby("family"):
        table = grp.drop(columns="family")
        path = inside(ref_dir, f"{file_component(family)}.csv")
        table.to_csv(path, index=False)
        written.append(path)
        if library is not None and family == file_component(family) and (library / family).is_dir():
            path = inside(library, f"{family}/reference.csv")
            table.to_csv(path, index=False)
            written.append(path)
    return written
