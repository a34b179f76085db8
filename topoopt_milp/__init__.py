"""topoopt_milp: exact models and TopoOpt heuristics for direct-connect DNN training fabrics.

The one entry point for library users is :func:`solve` (solve, evaluate and re-check with the
independent checker); knobs are keywords, validated by the method's parameter class::

    >>> from topoopt_milp import Instance, solve
    >>> inst = Instance.load("instances/small/dlrm-n8-d4-s0.json")
    >>> heuristic = solve(inst, "topologyfinder")
    >>> exact = solve(inst, "alloc-milp", time_limit=30)
    >>> exact.status.value, exact.objective <= heuristic.objective
    ('optimal', True)
"""

from .core.errors import InputError
from .core.instance import AllReduceGroup, Instance, InstanceError
from .core.params import ParamError, SolveOptions
from .core.result import SolveResult, Status
from .core.scope import Scope
from .core.topology import Routing, Topology
from .pipeline import solve_checked as solve

__version__ = "0.1.0"
__all__ = [
    "AllReduceGroup", "InputError", "Instance", "InstanceError", "ParamError", "Routing",
    "Scope", "SolveOptions", "SolveResult", "Status", "Topology", "solve",
]
