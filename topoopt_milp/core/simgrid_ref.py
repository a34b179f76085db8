"""The same iteration in SimGrid: a reference for :mod:`.simulate`.

SimGrid (https://simgrid.org) is the established flow-level simulator; its ``CM02`` network
model shares bandwidth max-min fairly (its LMM solver), and its fluid models were validated
against packet-level simulation (Velho et al., TOMACS 2013). This module plays a
:class:`~.simulate.Scenario` through SimGrid's Python API:

* one SimGrid link per arc (bandwidth ``L[i, j] B``, latency 0, sharing ``SHARED``);
* one pair of hosts per path class, whose route is the list of its arcs' links (so two flows
  on different paths between the same servers keep their own routes: multi-path routing);
* one actor per ring: for each of its ``2(k-1)`` steps it starts every flow of the step and
  waits for all of them (steps synchronised per ring); one actor per MP flow;
* a flow's latency and overhead (``overhead + hops * latency``) is a ``sleep_for`` before its
  send. SimGrid's own link latency is not used: ``CM02`` gives each flow a sharing weight
  proportional to its route latency (RTT unfairness), while the toolkit's model is plain
  max-min; the sleep keeps SimGrid's order (latency phase, then bandwidth phase).

Corrections are off: ``network/model:CM02`` (no LV08 latency and bandwidth factors),
``network/crosstraffic:0`` (no reverse ACK traffic), ``network/TCP-gamma`` huge (no window
bound), ``network/weight-S:0``, and tight ``maxmin/precision`` and ``surf/precision``
(SimGrid's defaults are 1e-5 and 1e-9).

SimGrid has one engine per process, so every scenario runs in a child process (``python -m
topoopt_milp.core.simgrid_ref`` reads the scenario as JSON on stdin, prints the times).

Finding SimGrid: ``import simgrid`` if the interpreter has it (PyPI ``simgrid``); else the
Debian package's extension module (``apt-get install python3-simgrid``, in
``/usr/lib/python3/dist-packages``) is loaded by file path when its ABI tag matches this
interpreter's -- a virtual environment made from another Python 3.11 (pyenv) can use it
without ``--system-site-packages`` and without putting Debian's other packages on its path.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

DEBIAN_DIRS = ("/usr/lib/python3/dist-packages",)
CONFIG = ("network/model:CM02", "network/crosstraffic:0", "network/TCP-gamma:1e300",
          "network/weight-S:0", "maxmin/precision:1e-12", "surf/precision:1e-12")


def simgrid_module_path() -> str | None:
    """Where SimGrid's Python module is for this interpreter (``None``: not installed)."""
    spec = importlib.util.find_spec("simgrid")
    if spec is not None and spec.origin:
        return spec.origin
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    for d in (os.environ.get("TOPOOPT_SIMGRID_DIR"), *DEBIAN_DIRS):
        if d:
            hits = sorted(glob.glob(os.path.join(d, f"simgrid{suffix}")))
            if hits:
                return hits[0]
    return None


def load_simgrid():
    """The ``simgrid`` module (:func:`simgrid_module_path`); ``ImportError`` if absent."""
    if "simgrid" in sys.modules:
        return sys.modules["simgrid"]
    path = simgrid_module_path()
    if path is None:
        raise ImportError("SimGrid's Python module is not installed (apt-get install "
                          "python3-simgrid, or pip install simgrid)")
    spec = importlib.util.spec_from_file_location("simgrid", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["simgrid"] = module
    spec.loader.exec_module(module)
    return module


def scenario_json(sc) -> dict:
    """A :class:`~.simulate.Scenario` as plain JSON (what the child process reads)."""
    return {
        "cap": [float(x) for x in sc.cap],
        "paths": [[int(a) for a in p] for p in sc.paths],
        "rings": [{"steps": r.steps, "cls": [int(c) for c in r.cls],
                   "bytes": [float(b) for b in r.bytes]} for r in sc.rings],
        "mp": [[int(c), float(b)] for c, b in zip(sc.mp_cls, sc.mp_bytes)],
        "latency": sc.latency, "overhead": sc.overhead,
    }


def run_simgrid(sc, timeout: float = 600.0) -> dict:
    """Simulate ``sc`` in SimGrid (in a child process); returns ``{"time", "ring_end",
    "mp_end", "wall_s"}``. Byte counts are rounded to integers (SimGrid's API takes whole
    bytes)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "topoopt_milp.core.simgrid_ref"],
                          input=json.dumps(scenario_json(sc)), capture_output=True, text=True,
                          timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"SimGrid run failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _play(data: dict) -> dict:
    import time

    sg = load_simgrid()
    t0 = time.perf_counter()
    engine = sg.Engine(["simgrid_ref", *(f"--cfg={c}" for c in CONFIG),
                        "--log=root.thres:critical"])
    zone = sg.NetZone.create_full_zone("net")
    links = [zone.create_link(f"a{k}", float(c)).set_latency(0.0).seal()
             for k, c in enumerate(data["cap"])]
    src, dst = [], []
    for c, path in enumerate(data["paths"]):
        s, d = zone.create_host(f"s{c}", 1e9), zone.create_host(f"d{c}", 1e9)
        zone.add_route(s.netpoint, d.netpoint, None, None,
                       [sg.LinkInRoute(links[a]) for a in path], False)
        src.append(s)
        dst.append(d)
    zone.seal()
    lat, over = float(data["latency"]), float(data["overhead"])
    hops = [len(p) for p in data["paths"]]
    out = {"ring_end": [0.0] * len(data["rings"]), "mp_end": 0.0}

    def delay(c: int) -> float:
        return over + hops[c] * lat

    def flow(c: int, nbytes: int, barrier) -> None:
        if delay(c) > 0:
            sg.this_actor.sleep_for(delay(c))
        if nbytes > 0:
            sg.Comm.sendto(src[c], dst[c], nbytes)
        if barrier is None:
            out["mp_end"] = max(out["mp_end"], sg.Engine.clock)
        else:
            barrier.wait()

    def ring(r: int, plan: dict) -> None:
        sizes = [int(round(b)) for b in plan["bytes"]]
        for _ in range(plan["steps"]):
            if lat == 0 and over == 0:
                comms = [sg.Comm.sendto_async(src[c], dst[c], b)
                         for c, b in zip(plan["cls"], sizes) if b > 0]
                sg.Comm.wait_all(comms)
            else:
                barrier = sg.Barrier(len(sizes) + 1)
                for q, (c, b) in enumerate(zip(plan["cls"], sizes)):
                    sg.Actor.create(f"r{r}f{q}", src[c], flow, c, b, barrier)
                barrier.wait()
        out["ring_end"][r] = sg.Engine.clock

    for r, plan in enumerate(data["rings"]):
        sg.Actor.create(f"ring{r}", src[plan["cls"][0]], ring, r, plan)
    for q, (c, b) in enumerate(data["mp"]):
        sg.Actor.create(f"mp{q}", src[c], flow, c, int(round(b)), None)
    engine.run()
    out["time"] = max([out["mp_end"], *out["ring_end"]])
    out["wall_s"] = time.perf_counter() - t0
    return out


if __name__ == "__main__":
    print(json.dumps(_play(json.loads(sys.stdin.read()))))
