"""Where the training job's parallel groups sit in the chosen design (CP-SAT mapping).

Hierarchy of the design, smallest first: the NVLink domain; the leaf group (GPUs whose
traffic turns at one leaf tier: a rail group of k/2 nodes when rail-optimized, the
nodes of one leaf in middle-of-rack); the pod (when pods are joined by an
oversubscribed top tier); the cluster. Crossing weights: NVLink -> NIC 1, leaf ->
spine 2, pod uplink 2 + 2 x oversubscription. Volumes are the performance model's
bytes per GPU per step of each dimension. models.perf.mapping.map_groups then places
the groups so the least traffic crosses the costly boundaries.
"""

from __future__ import annotations

import math
from typing import Any

from models.fabric import Fabric
from models.perf.mapping import Level, map_groups
from solver.backends.cpsat import mapping_solver


def hierarchy(gpu, fabric: Fabric) -> list[Level]:
    """The levels of `fabric` for a GPU system (`gpu`: GpuSystem)."""
    gpn, nvlink = gpu.gpus_per_node, gpu.nvlink_domain_gpus
    half = fabric.radix // 2
    group_nodes = (half if fabric.spec.rail_optimized
                   else max(1, half // gpu.nics_per_node))
    levels = [Level("nvlink", nvlink, 1), Level("leaf-group", group_nodes * gpn, 2)]
    if fabric.spec.pods > 1:
        pod_groups = math.ceil(fabric.spec.nodes / fabric.spec.pods) // group_nodes
        if pod_groups > 1:
            levels.append(Level("pod", pod_groups * group_nodes * gpn,
                                2 + round(2 * fabric.spec.oversubscription)))
    levels.append(Level("cluster", None, 0))
    return levels


def map_job(gpu, fabric: Fabric, perf_details: dict[str, Any]) -> dict[str, Any] | None:
    """The least-cost mapping of the job's groups, or None without a parallelism.
    `perf_details` holds `parallelism` and `traffic_gb_per_step` (a PerfResult document
    or the evaluators' details)."""
    par, traffic = perf_details.get("parallelism"), perf_details.get("traffic_gb_per_step")
    if not par or traffic is None:
        return None
    degrees = {d: int(par[d]) for d in ("tp", "cp", "pp", "dp")}
    if par["ep"] > 1 and par["dp"] % par["ep"] == 0:  # EP groups are carved out of DP
        degrees["ep"], degrees["dp"] = int(par["ep"]), int(par["dp"]) // int(par["ep"])
    volumes = {d: max(1, round(traffic.get(d, 0.0) * 1e3)) for d in degrees}  # MB
    levels = hierarchy(gpu, fabric)
    found = map_groups(levels, degrees, volumes, mapping_solver())
    if found is None:
        return None
    return {
        "levels": [{"name": lv.name, "gpus": lv.size_gpus, "crossing_weight": lv.crossing_weight}
                   for lv in levels],
        "groups": {d: {"degree": degrees[d], "traffic_mb_per_step": volumes[d],
                       "factors": dict(zip([lv.name for lv in levels], found.factors[d],
                                           strict=True)),
                       "crosses": list(found.crosses[d])} for d in sorted(degrees)},
        "cost": found.cost,
    }
