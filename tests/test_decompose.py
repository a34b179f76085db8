"""Flow decomposition of MILP and LP solutions (formulations.flow_paths.decompose_flow, the one
decomposition of the package)."""

import numpy as np
import pytest

from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.flow_paths import decompose_flow

TRIANGLE = Topology(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]))


def test_paths_carry_the_flow_and_fractions_sum_to_one():
    # source 0 sends 1 to node 2: 0.75 over 0-1-2, 0.25 directly
    flow = {(0, 1): 0.75, (1, 2): 0.75, (0, 2): 0.25}
    paths = dict(decompose_flow(0, flow, {2: 1.0}, TRIANGLE)[2])
    assert paths == pytest.approx({(0, 2): 0.25, (0, 1, 2): 0.75})


def test_flow_on_an_arc_without_a_link_is_ignored():
    # A time-limited incumbent: link 0-2 rounded to 0 but 1e-7 of flow left on it.
    flow = {(0, 1): 1.0, (1, 2): 1.0, (0, 2): 1e-7}
    path_graph = Topology(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    paths = decompose_flow(0, flow, {2: 1.0 + 1e-7}, path_graph)[2]
    assert [p for p, _ in paths] == [(0, 1, 2)]
    assert sum(f for _, f in paths) == pytest.approx(1.0)


def test_unreachable_destination_is_left_out():
    two_parts = Topology(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]))
    paths = decompose_flow(0, {(0, 1): 1.0}, {1: 1.0, 3: 1.0}, two_parts)
    assert set(paths) == {1}
