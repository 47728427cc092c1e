"""Job mapping by exposed traffic (models.perf.mapping.exposed_volumes, solver.job_mapping):
data parallelism, overlapped with the backward pass, crosses the oversubscribed pod
links; context and pipeline parallelism, on the critical path, stay inside. Checked by
hand and against the exhaustive enumeration."""

from __future__ import annotations

from types import SimpleNamespace

from models.fabric import FabricSpec, design_fabric
from models.perf.mapping import Level, exposed_volumes, map_groups, map_groups_exhaustive
from solver.job_mapping import map_job

# NVLink domain 8 GPUs, leaf group 64, pod 256 joined at 7:1 (weight 2 + 2 x 7), cluster
LEVELS = [Level("nvlink", 8, 1), Level("leaf-group", 64, 2), Level("pod", 256, 16),
          Level("cluster", None, 0)]
DEGREES = {"tp": 8, "cp": 2, "pp": 4, "dp": 16}        # 1,024 GPUs: 4 pods
TRAFFIC_MB = {"tp": 1000.0, "cp": 300.0, "pp": 50.0, "dp": 2000.0}
EXPOSED_S = {"tp": 0.001, "cp": 0.01, "pp": 0.02, "dp": 0.0}  # DP fully overlapped
NIC_MB_PER_S = 50_000.0                                  # 400 Gb/s per GPU


def test_exposed_volumes_by_hand():
    v = exposed_volumes(TRAFFIC_MB, EXPOSED_S, NIC_MB_PER_S, weight_total=19)
    k = 19 * (1000 + 300 + 50 + 2000) + 1                # 63,651
    # exposed MB: min(T, e x B): tp 50, cp 300 (500 > 300), pp 50 (1,000 > 50), dp 0
    assert v == {"tp": 50 * k + 1000, "cp": 300 * k + 300, "pp": 50 * k + 50, "dp": 2000}


def test_overlapped_dp_crosses_the_pods_and_cp_pp_stay_inside():
    whole = {d: round(t) for d, t in TRAFFIC_MB.items()}
    by_volume = map_groups(LEVELS, DEGREES, whole)
    # by volume alone DP (2,000 MB) stays inside and CP or PP cross the 7:1 links
    assert "pod" not in by_volume.crosses["dp"]
    assert "pod" in by_volume.crosses["cp"] + by_volume.crosses["pp"]
    volumes = exposed_volumes(TRAFFIC_MB, EXPOSED_S, NIC_MB_PER_S, weight_total=19)
    found = map_groups(LEVELS, DEGREES, volumes)
    brute = map_groups_exhaustive(LEVELS, DEGREES, volumes)
    assert found.cost == brute.cost
    # the 8 nodes of a leaf group hold cp x pp = 8; dp spans the pods
    assert found.factors["cp"] == (1, 2, 1, 1) and found.factors["pp"] == (1, 4, 1, 1)
    assert found.crosses["dp"] == ("nvlink", "leaf-group", "pod")
    assert found.crosses["cp"] == found.crosses["pp"] == ("nvlink",)


def test_map_job_reads_the_breakdown_of_a_design():
    gpu = SimpleNamespace(gpus_per_node=8, nvlink_domain_gpus=8, nics_per_node=8)
    fabric = design_fabric(FabricSpec(nodes=128, ports_per_node=8, radix=16, tiers=3, pods=4,
                                      oversubscription=7.0))
    details = {"parallelism": {"tp": 8, "cp": 2, "pp": 4, "dp": 16, "ep": 1},
               "traffic_gb_per_step": {d: t / 1e3 for d, t in TRAFFIC_MB.items()},
               "breakdown_s": {"tp_comm": 0.001, "cp_comm": 0.01, "pp_comm": 0.02,
                               "dp_comm": 0.0}}
    out = map_job(gpu, fabric, details, nic_gbps=400)
    assert [lv["name"] for lv in out["levels"]] == ["nvlink", "leaf-group", "pod", "cluster"]
    assert "pod" in out["groups"]["dp"]["crosses"]
    assert "pod" not in out["groups"]["cp"]["crosses"] + out["groups"]["pp"]["crosses"]
    assert out["groups"]["dp"]["exposed_traffic_mb_per_step"] == 0.0
    assert out["groups"]["pp"]["exposed_traffic_mb_per_step"] == 50.0
