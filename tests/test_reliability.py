"""Reliability model: Young/Daly, checkpoint size, spares, goodput vs simulation."""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import sqrt

import pytest

from models.fabric import FabricSpec, design_fabric
from models.reliability import (
    ReliabilityInputs,
    ReliabilityRates,
    bytes_per_param,
    checkpoint_size_gb,
    daly_interval,
    goodput,
    goodput_fraction,
    interruption_breakdown,
    leaf_blast_nodes,
    param_count,
    simulate,
    spare_availability,
    spares_needed,
    young_interval,
)

# Test rates with round figures (the shipped ones live in instances/catalog/reliability.toml).
RATES = ReliabilityRates(
    gpu_per_h=1 / 90_000, node_rest_per_gpu_h=1 / 80_000, nic_per_h=1 / 500_000,
    optic_link_per_h={"multimode": 1 / 43_800, "singlemode": 1 / 43_800},
    copper_link_per_h={"dac": 1 / 438_000}, switch_per_h=1 / 100_000,
    fabric_interrupt_fraction=0.1, detect_s=150.0, replace_s=60.0, init_ref_s=170.0,
    init_ref_gpus=512.0, init_exponent=0.27, host_copy_gbytes_per_s_per_gpu=25.0,
    node_repair_h=24.0, switch_replace_h=4.0)


def design(gpus: int, rail: bool = True, gbps_per_node: float = 0.05,
           recovery: str = "storage", **kw) -> ReliabilityInputs:
    """An 8-GPU-node design on a 64-port fat tree; 405B-class checkpoint (5.7 TB)."""
    nodes = -(-gpus // 8)
    fabric = design_fabric(FabricSpec(nodes=nodes, ports_per_node=8, radix=64,
                                      rail_optimized=rail))
    return ReliabilityInputs(
        gpus=gpus, gpus_per_node=8, node_links_optical=8 if rail else 0,
        node_links_copper=0 if rail else 8, switches=fabric.switches_total,
        switch_links_optical=sum(fabric.links_per_tier[1:]), rail_optimized=rail,
        checkpoint_size_gb=5670.0, checkpoint_gbps=nodes * gbps_per_node, recovery=recovery,
        **kw)


# ---- Young / Daly ---------------------------------------------------------------------
@pytest.mark.parametrize(("mtbf_min", "expected_min", "tol"),
                         [(24 * 60, 117.0, 0.5), (6 * 60, 57.0, 0.5), (15, 9.1, 0.05)])
def test_daly_matches_published_values(mtbf_min, expected_min, tol):
    # Daly (2006): solve 500 h, R = 10 min, delta = 5 min.
    tau = daly_interval(5 * 60.0, mtbf_min * 60.0, 10 * 60.0) / 60.0
    assert tau == pytest.approx(expected_min, abs=tol)


def test_young_first_order():
    assert young_interval(300.0, 86_400.0) == pytest.approx(sqrt(2 * 300 * 86_400))
    assert young_interval(300.0, 86_400.0) / 60 == pytest.approx(120.0)


def test_daly_optimum_maximises_goodput():
    delta, mtbf, r = 60.0, 3600.0, 600.0
    tau = daly_interval(delta, mtbf, r)
    best = goodput_fraction(tau, delta, mtbf, r)
    for factor in (0.5, 0.8, 1.25, 2.0):
        assert goodput_fraction(tau * factor, delta, mtbf, r) < best


# ---- checkpoint size --------------------------------------------------------------------
def test_bloom_checkpoint_size():
    assert bytes_per_param("bf16", "adam") == 14.0
    # BLOOM 176B: 2.3 TB published (14 bytes/param); 176e9 * 14 = 2.46e12 bytes.
    assert checkpoint_size_gb(176e9, "bf16") == pytest.approx(2300.0, rel=0.08)
    assert checkpoint_size_gb(1e9, "fp32", "adam") == pytest.approx(12.0)
    with pytest.raises(ValueError, match="precision"):
        checkpoint_size_gb(1e9, "int3")


@dataclass
class Shape:
    layers: int
    hidden: int
    heads: int
    kv_heads: int | None
    ffn_hidden: int | None
    gated_mlp: bool
    vocab: int
    moe: object | None = None
    name: str = "test"
    seq_len: int = 2048
    global_batch: int = 1024
    precision: str = "bf16"


@dataclass
class Moe:
    experts: int
    top_k: int
    expert_ffn_hidden: int
    shared_experts: int = 0
    moe_layer_freq: int = 1


def test_param_count_llama3_405b_and_gpt3():
    llama = Shape(126, 16384, 128, 8, 53248, True, 128256)
    assert param_count(llama) == pytest.approx(405e9, rel=0.01)
    gpt3 = Shape(96, 12288, 96, None, None, False, 50257)
    assert param_count(gpt3) == pytest.approx(175e9, rel=0.02)


def test_param_count_moe_counts_all_experts():
    dense = Shape(4, 1024, 8, None, 4096, True, 1000)
    moe = replace(dense, moe=Moe(experts=8, top_k=2, expert_ffn_hidden=4096, moe_layer_freq=2))
    ffn = 3 * 1024 * 4096
    assert param_count(moe) - param_count(dense) == pytest.approx(2 * (7 * ffn + 1024 * 8))


# ---- blast radius and rates -----------------------------------------------------------
def test_interruptions_grow_with_gpus():
    rates = [goodput(design(g), RATES).interruptions_per_day for g in (512, 4096, 32768, 131072)]
    assert rates == sorted(rates) and rates[0] < rates[-1]


def test_copper_node_links_lower_the_interruption_rate():
    optical = goodput(design(16384, rail=True), RATES)
    copper = goodput(design(16384, rail=False), RATES)
    assert copper.interruptions_per_day < optical.interruptions_per_day
    assert copper.breakdown["node_optics"] == 0 and copper.breakdown["node_copper"] > 0
    assert copper.goodput > optical.goodput


def test_rail_optimized_leaf_blast_radius():
    assert leaf_blast_nodes(design(16384, rail=True)) == 32       # one rail of 32 nodes
    assert leaf_blast_nodes(design(16384, rail=False)) == 4       # 32 ports / 8 links
    # A small rail-optimized job whose spares cannot cover a leaf failure waits for it.
    few = goodput(design(1024, rail=True, spare_nodes=4), RATES)
    many = goodput(design(1024, rail=True, spare_nodes=40), RATES)
    assert many.goodput > few.goodput


def test_breakdown_sums_to_total():
    r = goodput(design(8192), RATES)
    assert sum(r.breakdown.values()) == pytest.approx(r.interruptions_per_day)
    assert r.mtbf_hours == pytest.approx(24.0 / r.interruptions_per_day)


def test_nvl72_failure_takes_the_rack():
    rack = ReliabilityInputs(gpus=72 * 100, gpus_per_node=72, node_links_optical=72,
                             node_links_copper=0, switches=0, switch_links_optical=0,
                             rail_optimized=True, checkpoint_size_gb=100.0,
                             checkpoint_gbps=50.0, recovery="storage")
    r = goodput(rack, RATES)
    assert r.breakdown["gpu"] == pytest.approx(24 * 7200 / 90_000)
    assert r.spare_nodes >= 1  # spares come in whole racks


# ---- checkpoints, recovery, goodput ---------------------------------------------------
def test_faster_checkpoints_never_lower_goodput():
    values = [goodput(design(16384, gbps_per_node=b), RATES).goodput
              for b in (0.01, 0.05, 0.2, 1.0, 5.0)]
    assert values == sorted(values)


def test_in_memory_recovery_beats_slow_storage():
    storage = goodput(design(16384, gbps_per_node=0.01), RATES)
    memory = goodput(design(16384, gbps_per_node=0.01, recovery="in-memory"), RATES)
    assert memory.checkpoint_write_s < storage.checkpoint_write_s / 100
    assert memory.restart_s < storage.restart_s
    assert memory.goodput > storage.goodput


def test_invalid_inputs_rejected():
    with pytest.raises(ValueError, match="gpus"):
        replace(design(64), gpus=0)
    with pytest.raises(ValueError, match="checkpoint_gbps"):
        replace(design(64), checkpoint_gbps=0.0)
    with pytest.raises(ValueError, match="recovery"):
        replace(design(64), recovery="tape")


# ---- spares ---------------------------------------------------------------------------
def test_spares_meet_target_minimally():
    nodes, lam, repair = 2048, 4e-4, 24.0
    s = spares_needed(nodes, lam, repair, 0.999)
    assert spare_availability(nodes, s, lam, repair) >= 0.999
    assert spare_availability(nodes, s - 1, lam, repair) < 0.999
    # mean in repair about (N+s) * lam * r = 20; 99.9% needs well above the mean
    assert 25 < s < 45


def test_more_spares_never_lower_availability():
    values = [spare_availability(1000, s, 1e-3, 24.0) for s in range(0, 60, 5)]
    assert values == sorted(values) and values[-1] > 0.999


# ---- simulator ------------------------------------------------------------------------
@pytest.mark.parametrize(("gpus", "rail", "days", "runs"),
                         [(512, True, 365, 120), (4096, False, 120, 100),
                          (32768, True, 30, 60)])
def test_closed_form_within_simulation_ci(gpus, rail, days, runs):
    inputs = design(gpus, rail=rail)
    closed = goodput(inputs, RATES).goodput
    mean, low, high = simulate(inputs, RATES, days, runs, seed=7)
    assert low <= closed <= high, (closed, mean, low, high)


def test_simulation_in_memory_and_copper_agree_with_closed_form():
    inputs = design(8192, rail=False, recovery="in-memory")
    mean, low, high = simulate(inputs, RATES, 90, 100, seed=11)
    assert low <= goodput(inputs, RATES).goodput <= high


def test_simulation_is_seeded():
    inputs = design(2048)
    assert simulate(inputs, RATES, 30, 10, seed=3) == simulate(inputs, RATES, 30, 10, seed=3)


def test_breakdown_keys_sorted():
    b = interruption_breakdown(design(1024), RATES)
    assert list(b) == sorted(b)
