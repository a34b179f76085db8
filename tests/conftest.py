"""Shared fixtures: a small valid instance dict, the data folder, and a CLI runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def instance_dict() -> dict:
    """A valid topoopt-instance/1 object with both kinds of traffic (n = 6, d = 3)."""
    return {
        "format": "topoopt-instance/1",
        "name": "tiny",
        "n": 6,
        "degree": 3,
        "link_gbps": 100.0,
        "regular": True,
        "allreduce": [{"members": [0, 2, 4], "bytes": 3.0e8}],
        "mp": [[0, 3, 1.0e7], [1, 5, 2.5e6], [5, 1, 4.0e5]],
        "compute_s": 0.01,
        "meta": {"generator": "hand", "seed": 0},
    }


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
