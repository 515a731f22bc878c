"""A real local Ray cluster for the cluster tests: a head and one more node,
both on loopback, started once for this folder's tests (both modules: a
start costs several seconds) and shut down after the last of them (its
half-dozen daemons would otherwise take CPU from every later test of the
session).

RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes Ray 2.x bind every node to
127.0.0.1 (ray._private.services.get_node_ip_address); without it a local
cluster uses the host's own address.  The cluster starts before the test
process connects (ray.init), so controllers in the tests find Ray
initialised and leave it so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fixtures.servers import in_ci

LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        if in_ci(os.environ):
            pytest.fail("Ray is missing: the test extra installs it (pip install -e '.[test]')")
        pytest.skip("needs Ray: pip install -e '.[test]' (or '.[cluster]')")
    return ray


@dataclass
class LocalCluster:
    address: str
    nodes: list[str]  # node ids, head first
    ray: Any


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[LocalCluster]:
    # before Ray is imported: it reads the variable into a constant
    saved = {k: os.environ.get(k) for k in LOOPBACK_ENV}
    os.environ.update(LOOPBACK_ENV)
    ray = _ray()
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="benchtop-tests", log_to_driver=False,
                 logging_level="ERROR")
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        assert len(nodes) == 2
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        yield LocalCluster(cluster.address, nodes, ray)
    finally:
        ray.shutdown()
        cluster.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
