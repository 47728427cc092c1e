"""Where the training job's parallel groups sit in the chosen design (CP-SAT mapping).

Hierarchy of the design, smallest first: the NVLink domain; the leaf group (GPUs whose
traffic turns at one leaf tier: a rail group of k/2 nodes when rail-optimized, the
nodes of one leaf in middle-of-rack); the pod (when pods are joined by an
oversubscribed top tier); the cluster. Crossing weights: NVLink -> NIC 1, leaf ->
spine 2, pod uplink 2 + 2 x the oversubscription the traffic meets
(models.design.evaluate.pod_oversubscription). Volumes are the performance model's
bytes per GPU per step of each dimension, weighed by how much of each is exposed (not
overlapped with compute) in its step-time breakdown (models.perf.mapping.exposed_volumes).
models.perf.mapping.map_groups then places the groups so the least exposed traffic
crosses the costly boundaries.
"""

from __future__ import annotations

import math
from typing import Any

from models.design.evaluate import pod_oversubscription
from models.fabric import Fabric
from models.perf.mapping import Level, exposed_volumes, map_groups
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
                                2 + round(2 * pod_oversubscription(fabric))))
    levels.append(Level("cluster", None, 0))
    return levels


BREAKDOWN_KEY = {"tp": "tp_comm", "cp": "cp_comm", "ep": "ep_comm", "pp": "pp_comm",
                 "dp": "dp_comm"}
"""The step-time breakdown's exposed communication time of each parallel dimension."""


def map_job(gpu, fabric: Fabric, perf_details: dict[str, Any],
            nic_gbps: float | None = None) -> dict[str, Any] | None:
    """The least-cost mapping of the job's groups, or None without a parallelism.
    `perf_details` holds `parallelism`, `traffic_gb_per_step` and the step-time breakdown
    (`breakdown_s` or `breakdown`; a PerfResult document or the evaluators' details);
    `nic_gbps`: the back-end port speed (the exposure of each dimension's traffic is its
    exposed time over its time at the NIC bandwidth per GPU; None: whole traffic only)."""
    par, traffic = perf_details.get("parallelism"), perf_details.get("traffic_gb_per_step")
    if not par or traffic is None:
        return None
    degrees = {d: int(par[d]) for d in ("tp", "cp", "pp", "dp")}
    if par["ep"] > 1 and par["dp"] % par["ep"] == 0:  # EP groups are carved out of DP
        degrees["ep"], degrees["dp"] = int(par["ep"]), int(par["dp"]) // int(par["ep"])
    levels = hierarchy(gpu, fabric)
    traffic_mb = {d: traffic.get(d, 0.0) * 1e3 for d in degrees}
    breakdown = perf_details.get("breakdown_s") or perf_details.get("breakdown") or {}
    if nic_gbps is None or not breakdown:
        volumes = {d: max(1, round(t)) for d, t in traffic_mb.items()}
        exposed_mb = None
    else:
        nic_mb_per_s = nic_gbps * gpu.nics_per_node / gpu.gpus_per_node / 8.0 * 1e3
        exposed = {d: float(breakdown.get(BREAKDOWN_KEY[d], 0.0)) for d in degrees}
        if "ep" in degrees:  # EP's exposed time is its own; DP's the rest of the replicas'
            exposed["dp"] = float(breakdown.get("dp_comm", 0.0))
        volumes = exposed_volumes(traffic_mb, exposed, nic_mb_per_s,
                                  sum(lv.crossing_weight for lv in levels))
        exposed_mb = {d: min(traffic_mb[d], exposed[d] * nic_mb_per_s) for d in degrees}
    found = map_groups(levels, degrees, volumes, mapping_solver())
    if found is None:
        return None
    return {
        "levels": [{"name": lv.name, "gpus": lv.size_gpus, "crossing_weight": lv.crossing_weight}
                   for lv in levels],
        "groups": {d: {"degree": degrees[d],
                       "traffic_mb_per_step": max(1, round(traffic_mb[d])),
                       **({"exposed_traffic_mb_per_step": round(exposed_mb[d], 1)}
                          if exposed_mb is not None else {}),
                       "volume": volumes[d],
                       "factors": dict(zip([lv.name for lv in levels], found.factors[d],
                                           strict=True)),
                       "crosses": list(found.crosses[d])} for d in sorted(degrees)},
        "cost": found.cost,
        "objective": ("sum of volume x crossing weight over the levels each group crosses; "
                      "volume: exposed MB x K + whole MB, K larger than any whole-traffic "
                      "saving (models.perf.mapping.exposed_volumes)" if exposed_mb is not None
                      else "sum of traffic MB x crossing weight over the levels each group "
                      "crosses"),
    }
