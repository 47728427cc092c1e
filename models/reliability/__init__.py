"""Reliability: failure taxonomy -> job interruptions, checkpointing, restart, spares, goodput.

Public API (used by the design MILP and `clusterplan reliability`):

    ReliabilityInputs, ReliabilityResult, ReliabilityRates, Rate, RestartParts
    param_count(workload) -> float
    checkpoint_size_gb(params, precision, optimizer="adam") -> float  [GB]
    young_interval(delta_s, mtbf_s) -> float; daly_interval(delta_s, mtbf_s, restart_s)
    restart_breakdown_s(inputs, rates) -> {detect, isolate, replace, reinit, reload, warmup}
    failure_classes(inputs, rates) -> the design's failure taxonomy
    goodput(inputs, rates) -> ReliabilityResult (with interruption and goodput bands)
    spares_needed(nodes, node_failure_rate_per_h, repair_h, target) -> int
    spare_availability(nodes, spares, node_failure_rate_per_h, repair_h) -> float
    simulate(inputs, rates, days, runs, seed) -> (goodput_mean, ci_low, ci_high)
    design_inputs(gpu, nic, radix, ...) -> ReliabilityInputs of a design's fabric and media
"""

from models.reliability.build import design_inputs, hosts_per_node, placed_media
from models.reliability.checkpoint import (
    bytes_per_param,
    checkpoint_load_s,
    checkpoint_size_gb,
    checkpoint_write_s,
    daly_interval,
    param_count,
    restart_breakdown_s,
    restart_s,
    young_interval,
)
from models.reliability.design import RECOVERY_MODES, ReliabilityInputs, ReliabilityResult
from models.reliability.goodput import goodput, goodput_fraction
from models.reliability.rates import (
    COPPER_KINDS,
    FailureClass,
    Rate,
    ReliabilityRates,
    RestartParts,
    failure_classes,
    interruption_band_per_h,
    interruption_breakdown,
    interruption_rate_per_h,
    leaf_blast_nodes,
    leaf_switches,
    link_failure_rate,
    node_failure_rate,
    scaled_rates,
)
from models.reliability.simulate import simulate
from models.reliability.spares import spare_availability, spares_needed

__all__ = [
    "COPPER_KINDS", "RECOVERY_MODES", "FailureClass", "Rate", "ReliabilityInputs",
    "ReliabilityRates", "ReliabilityResult", "RestartParts", "bytes_per_param",
    "checkpoint_load_s", "checkpoint_size_gb", "checkpoint_write_s", "daly_interval",
    "design_inputs", "hosts_per_node", "placed_media",
    "failure_classes", "goodput", "goodput_fraction", "interruption_band_per_h",
    "interruption_breakdown", "interruption_rate_per_h", "leaf_blast_nodes", "leaf_switches",
    "link_failure_rate", "node_failure_rate", "param_count", "restart_breakdown_s", "restart_s",
    "scaled_rates", "simulate", "spare_availability", "spares_needed", "young_interval",
]
