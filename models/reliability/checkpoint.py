"""Checkpoint size, write and reload time, restart time, and the optimal interval.

Sizes in GB (1e9 bytes), bandwidths in GB/s, times in seconds.
"""

from __future__ import annotations

from math import sqrt

from models.perf.flops import arch_of
from models.perf.types import WorkloadLike
from models.reliability.design import ReliabilityInputs
from models.reliability.rates import ReliabilityRates

# Bytes per parameter of the working weights a checkpoint stores, by training precision.
# FP8/FP4 training (Transformer Engine, MS-AMP style) keeps BF16 weights and casts to
# the narrow format on the fly, so the stored weights stay 2 bytes.
WEIGHT_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 2.0, "fp4": 2.0}
# Optimizer state bytes per parameter: Adam keeps fp32 m and v; SGD fp32 momentum.
OPTIMIZER_BYTES = {"adam": 8.0, "sgd": 4.0, "none": 0.0}
# Mixed precision keeps an fp32 master copy of the weights (4 bytes) unless the
# working weights already are fp32.
MASTER_BYTES = 4.0


def param_count(w: WorkloadLike) -> float:
    """Total parameters of the workload, all experts counted (the performance model's
    count: attention, FFN/experts, routers, untied embedding and output head)."""
    return arch_of(w).params_total


def bytes_per_param(precision: str, optimizer: str = "adam") -> float:
    """Checkpoint bytes per parameter: weights + fp32 master copy + optimizer state.

    bf16 + Adam: 2 + 4 + 8 = 14 bytes (BLOOM: 2.3 TB for 176e9 parameters).
    """
    if precision not in WEIGHT_BYTES:
        raise ValueError(f"unknown precision {precision!r} (known: {', '.join(WEIGHT_BYTES)})")
    if optimizer not in OPTIMIZER_BYTES:
        raise ValueError(f"unknown optimizer {optimizer!r} (known: {', '.join(OPTIMIZER_BYTES)})")
    master = 0.0 if precision == "fp32" else MASTER_BYTES
    return WEIGHT_BYTES[precision] + master + OPTIMIZER_BYTES[optimizer]


def checkpoint_size_gb(params: float, precision: str, optimizer: str = "adam") -> float:
    """Size of one full checkpoint [GB] = params * bytes_per_param / 1e9."""
    if params <= 0:
        raise ValueError(f"params must be positive (got {params})")
    return params * bytes_per_param(precision, optimizer) / 1e9


def checkpoint_write_s(inputs: ReliabilityInputs, rates: ReliabilityRates) -> float:
    """delta: time the job stalls per checkpoint [s].

    storage: S / B_storage (aggregate bandwidth shared by all nodes).
    in-memory (Gemini, SOSP'23): each GPU copies its shard S/G to host memory at
    host_copy rate, and each node sends its shard S/N to a peer host over the back
    end; counted in series (Gemini overlaps the peer copy with training, so this is
    an upper bound).
    """
    s = inputs.checkpoint_size_gb
    if inputs.recovery == "storage":
        return storage_io_s(inputs)
    return (s / inputs.gpus / rates.host_copy_gbytes_per_s_per_gpu
            + s / inputs.nodes / inputs.peer_gbytes_per_s_per_node)


def checkpoint_load_s(inputs: ReliabilityInputs, rates: ReliabilityRates) -> float:
    """Time to reload the last checkpoint on restart [s].

    storage: S / B_storage (reads assumed as fast as writes).
    in-memory: the replacement node fetches the lost shard S/N from its peer over
    the back end while the others reload from local host memory (S/G at host_copy);
    the slower of the two.
    """
    s = inputs.checkpoint_size_gb
    if inputs.recovery == "storage":
        return storage_io_s(inputs)
    return max(s / inputs.nodes / inputs.peer_gbytes_per_s_per_node,
               s / inputs.gpus / rates.host_copy_gbytes_per_s_per_gpu)


def storage_io_s(inputs: ReliabilityInputs) -> float:
    """Time to write or read one full checkpoint on shared storage [s]: S / B_storage."""
    return inputs.checkpoint_size_gb / inputs.checkpoint_gbps


def restart_breakdown_s(inputs: ReliabilityInputs, rates: ReliabilityRates,
                        swap_spare: bool = True, planned: bool = False,
                        hang: bool = False, corrupted: bool = False) -> dict[str, float]:
    """The restart's parts [s] for the inputs' recovery mode: detection of the fault (a
    collective timeout for a hang), isolation of the failed part, replacement (hot-spare or
    warm-standby swap, only when a node was lost), process-group re-initialisation
    reinit(G) (grows with scale), checkpoint reload and warm-up; and, for a planned stop
    only, persist: a checkpoint written to storage before the stop.

    A planned stop is neither detected nor isolated and swaps no node; it reboots the
    hosts (firmware, kernel), so it restarts cold in either mode: the storage mode's
    reinit and warm-up, and a reload from storage. In-memory recovery first persists its
    host-memory checkpoint to storage (S / B_storage), which the reboot would wipe.

    A fault that corrupted the in-memory copies (silent corruption) makes in-memory
    recovery reload from storage (S / B) and lose rollback = S / B more work: host
    memory drains each checkpoint to storage in the background, one every S / B, and the
    persisted copy that predates the corruption is on average one drain period older."""
    if planned:
        cold = rates.restart["storage"]
        return {"detect": 0.0, "isolate": 0.0, "replace": 0.0,
                "reinit": cold.reinit_s(inputs.gpus), "reload": storage_io_s(inputs),
                "warmup": cold.warmup_s,
                "persist": storage_io_s(inputs) if inputs.recovery == "in-memory" else 0.0}
    parts = rates.restart[inputs.recovery]
    from_storage = corrupted and inputs.recovery == "in-memory"
    out = {
        "detect": parts.hang_detect_s if hang else parts.detect_s,
        "isolate": parts.isolate_s,
        "replace": parts.replace_s if swap_spare else 0.0,
        "reinit": parts.reinit_s(inputs.gpus),
        "reload": storage_io_s(inputs) if from_storage else checkpoint_load_s(inputs, rates),
        "warmup": parts.warmup_s,
    }
    if from_storage:
        out["rollback"] = storage_io_s(inputs)
    return out


def restart_s(inputs: ReliabilityInputs, rates: ReliabilityRates, swap_spare: bool = True,
              planned: bool = False, hang: bool = False, corrupted: bool = False) -> float:
    """R: the sum of restart_breakdown_s [s]."""
    return sum(restart_breakdown_s(inputs, rates, swap_spare, planned, hang,
                                   corrupted).values())


def young_interval(delta_s: float, mtbf_s: float) -> float:
    """Young (1974): tau_opt = sqrt(2 * delta * M) [s] (first-order)."""
    if delta_s < 0 or mtbf_s <= 0:
        raise ValueError("need delta_s >= 0 and mtbf_s > 0")
    return sqrt(2.0 * delta_s * mtbf_s)


def daly_interval(delta_s: float, mtbf_s: float, restart_s: float) -> float:
    """Daly (2006) higher-order optimum compute time between checkpoints [s].

    tau_opt = sqrt(2 delta M) * (1 + sqrt(delta/(2M))/3 + delta/(18 M)) - delta
    for delta < 2M, else M. In Daly's model the restart time R scales the wall time
    by exp(R/M) and so does not move the optimum; it is checked, not used.
    """
    if delta_s < 0 or mtbf_s <= 0 or restart_s < 0:
        raise ValueError("need delta_s >= 0, mtbf_s > 0, restart_s >= 0")
    if delta_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = delta_s / (2.0 * mtbf_s)
    return sqrt(2.0 * delta_s * mtbf_s) * (1.0 + sqrt(x) / 3.0 + x / 9.0) - delta_s
