"""Reliability: failure rates -> job interruptions, checkpointing, restart, spares, goodput.

Public API (used by the design MILP and `clusterplan reliability`):

    ReliabilityInputs, ReliabilityResult, ReliabilityRates
    param_count(workload) -> float
    checkpoint_size_gb(params, precision, optimizer="adam") -> float  [GB]
    young_interval(delta_s, mtbf_s) -> float; daly_interval(delta_s, mtbf_s, restart_s)
    goodput(inputs, rates) -> ReliabilityResult
    spares_needed(nodes, node_failure_rate_per_h, repair_h, target) -> int
    spare_availability(nodes, spares, node_failure_rate_per_h, repair_h) -> float
    simulate(inputs, rates, days, runs, seed) -> (goodput_mean, ci_low, ci_high)
"""

from models.reliability.checkpoint import (
    bytes_per_param,
    checkpoint_load_s,
    checkpoint_size_gb,
    checkpoint_write_s,
    daly_interval,
    job_init_s,
    param_count,
    restart_s,
    young_interval,
)
from models.reliability.design import RECOVERY_MODES, ReliabilityInputs, ReliabilityResult
from models.reliability.goodput import goodput, goodput_fraction
from models.reliability.rates import (
    FailureClass,
    ReliabilityRates,
    failure_classes,
    interruption_breakdown,
    interruption_rate_per_h,
    leaf_blast_nodes,
    leaf_switches,
    node_failure_rate,
)
from models.reliability.simulate import simulate
from models.reliability.spares import spare_availability, spares_needed

__all__ = [
    "RECOVERY_MODES", "FailureClass", "ReliabilityInputs", "ReliabilityRates",
    "ReliabilityResult", "bytes_per_param", "checkpoint_load_s", "checkpoint_size_gb",
    "checkpoint_write_s", "daly_interval", "failure_classes", "goodput", "goodput_fraction",
    "interruption_breakdown", "interruption_rate_per_h", "job_init_s", "leaf_blast_nodes",
    "leaf_switches", "node_failure_rate", "param_count", "restart_s", "simulate",
    "spare_availability", "spares_needed", "young_interval",
]
