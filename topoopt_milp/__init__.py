"""topoopt_milp: exact models and TopoOpt heuristics for direct-connect DNN training fabrics.

The one entry point for library users is :func:`solve`::

    from topoopt_milp import Instance, solve
    result = solve(Instance.load("instances/small/mixed-n8-d4.json"), "topologyfinder")
"""

from .instance import AllReduceGroup, Instance, InstanceError
from .registry import solve
from .result import SolveOptions, SolveResult, Status
from .topology import Routing, Topology

__version__ = "0.1.0"
__all__ = [
    "AllReduceGroup", "Instance", "InstanceError", "Routing", "SolveOptions", "SolveResult",
    "Status", "Topology", "solve",
]
