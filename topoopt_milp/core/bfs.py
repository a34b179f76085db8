"""All-pairs hop distances of a large graph: one breadth-first search per source (numba).

:attr:`~topoopt_milp.core.topology.Topology.hop_distances` at ``n = 10^4`` (``d = 8``) took
21-28 s with :func:`scipy.sparse.csgraph.shortest_path` (``method="D"``, unweighted), the
largest single cost of ``route-approx``, ``expander`` and ``evaluate`` there (issue 20).
The kernel below searches from every source with the current row kept as ``int32`` (40 kB
at ``n = 10^4``, in cache) and writes each finished row once: 7.0 s for the same graph at
load 4 on 2 cores. Below :data:`NUMBA_MIN_N` nodes, or without numba, scipy is used (no
compilation; the same distances).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from .jit import HAVE_NUMBA, njit

NUMBA_MIN_N = 1024  # smaller graphs: scipy (microseconds per source, no compile)


@njit(cache=True)
def _bfs_all(indptr, indices, n):  # pragma: no cover - compiled
    out = np.empty((n, n))
    queue = np.empty(n, np.int32)
    row = np.empty(n, np.int32)
    for s in range(n):
        row[:] = -1
        row[s] = 0
        queue[0] = s
        head, tail = 0, 1
        while head < tail:
            u = queue[head]
            head += 1
            du = row[u] + 1
            for k in range(indptr[u], indptr[u + 1]):
                v = indices[k]
                if row[v] < 0:
                    row[v] = du
                    queue[tail] = v
                    tail += 1
        o = out[s]
        for v in range(n):
            o[v] = np.inf if row[v] < 0 else row[v]
    return out


def hop_distances(links: np.ndarray) -> np.ndarray:
    """``(n, n)`` float hop counts between the nodes of the symmetric link matrix ``links``
    (``inf`` between components, 0 on the diagonal)."""
    adj = csr_matrix(np.asarray(links) > 0)
    n = adj.shape[0]
    if n < NUMBA_MIN_N or not HAVE_NUMBA:
        return shortest_path(adj.astype(np.int8), method="D", unweighted=True, directed=False)
    adj = (adj + adj.T).tocsr()  # undirected, as scipy's directed=False
    return _bfs_all(adj.indptr.astype(np.int32), adj.indices.astype(np.int32), n)
