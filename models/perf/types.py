"""Input protocols and result types of the training performance model.

Models take Protocol-typed inputs so the pydantic schema objects (solver.schema) and
small test objects both satisfy them by attribute name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

Recompute = Literal["none", "selective", "full"]
RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")
SHARDING_MODES: tuple[str, ...] = ("none", "optimizer", "gradients", "full")
"""What the data-parallel group shards (ZeRO stages 0-3): 'none' plain DDP, 'optimizer'
the Megatron distributed optimizer (ZeRO-1), 'gradients' ZeRO-2, 'full' FSDP / ZeRO-3
(parameters too, gathered layer by layer)."""


class MoELike(Protocol):
    experts: int
    top_k: int
    expert_ffn_hidden: int
    shared_experts: int
    moe_layer_freq: int
    # optional (read with getattr, defaults in brackets): first_dense_layers [0],
    # routing_imbalance [1.0]


class WorkloadLike(Protocol):
    """Optional attributes (read with getattr; absent or None = the default): head_dim
    [hidden/heads], q_lora_rank, kv_lora_rank, qk_nope_head_dim [128], qk_rope_head_dim
    [64], v_head_dim [qk_nope_head_dim] (MLA when kv_lora_rank is set), sliding_window
    [none], local_layers_per_global [1], mtp_layers [0] (multi-token-prediction modules),
    schedule ['1f1b'; models.perf.flops.SCHEDULES], profile [models.perf.calibration
    default]."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int | None
    ffn_hidden: int | None
    gated_mlp: bool
    vocab: int
    seq_len: int
    global_batch: int
    precision: str
    moe: MoELike | None


class GpuSystemLike(Protocol):
    generation: str
    gpus_per_node: int
    nvlink_domain_gpus: int
    bf16_tflops: float
    fp8_tflops: float | None
    fp4_tflops: float | None
    hbm_gib: float
    hbm_tbps: float
    nvlink_gbytes_per_s: float


def peak_tflops(system: GpuSystemLike, precision: str) -> float:
    """Dense peak TFLOP/s per GPU at `precision`, falling back to the next wider format
    the system has (fp4 -> fp8 -> bf16), as GpuSystem.peak_tflops does."""
    order = ("fp4", "fp8", "bf16")
    for p in order[order.index(precision):]:
        value = getattr(system, f"{p}_tflops", None)
        if value is not None:
            return float(value)
    return float(system.bf16_tflops)


@dataclass(frozen=True)
class NetworkSpec:
    """The scale-out fabric as the job sees it."""

    gbps_per_gpu: float
    """Back-end NIC bandwidth per GPU [Gb/s]."""
    in_network_reduction: bool = False
    """SHARP-style reduction: DP gradient traffic per GPU halved (up to 2x)."""
    pod_gpus: int | None = None
    """GPUs per non-blocking pod (None = the whole cluster is non-blocking)."""
    oversubscription: float = 1.0
    """Down:up bandwidth ratio of the links between pods."""
    rail_optimized: bool = True
    """Each of a node's NICs on its own leaf (rail); False = middle-of-rack (all of a
    node's NICs on one leaf)."""
    leaf_gpus: int | None = None
    """GPUs whose traffic meets in one leaf switch: a rail group (leaf down-ports x GPUs
    per node) when rail-optimized, the leaf's down-ports otherwise. None = not modelled
    (every cross-node transfer at full NIC rate)."""


@dataclass(frozen=True)
class Parallelism:
    tp: int
    pp: int
    dp: int
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    micro_batch: int = 1
    recompute: str = "selective"
    sharding: str = "optimizer"
    """One of SHARDING_MODES; 'full' = FSDP (`--fsdp`)."""
    etp: int | None = None
    """Expert tensor-parallel degree (None = tp). With etp < tp the expert-parallel
    group spans tensor-parallel ranks: experts are sharded over etp*ep GPUs and
    replicated over tp*dp*cp/(etp*ep)."""

    @property
    def expert_tp(self) -> int:
        return self.tp if self.etp is None else self.etp

    @property
    def model_parallel(self) -> int:
        """GPUs holding one replica of the model: tp * pp * cp."""
        return self.tp * self.pp * self.cp

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    def as_dict(self) -> dict[str, int | str]:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "cp": self.cp, "ep": self.ep,
                "etp": self.expert_tp, "vpp": self.vpp, "micro_batch": self.micro_batch,
                "recompute": self.recompute, "sharding": self.sharding}


@dataclass(frozen=True)
class PerfResult:
    """One evaluated configuration.

    `gpus` is the number of GPUs the job was given; `gpus_used` = tp*pp*cp*dp <= gpus
    (the remainder idles). tokens/s is the job's throughput; model_tflops_per_gpu, MFU
    and HFU are averaged over all `gpus` (idle ones included), so a design pays for
    the GPUs it cannot use.
    """

    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    mfu: float
    hfu: float
    memory_gib_per_gpu: float
    fits: bool
    parallelism: Parallelism
    breakdown: dict[str, float]
    gpus: int
    gpus_used: int = 0
    memory_breakdown_gib: dict[str, float] = field(default_factory=dict)
    traffic_bytes: dict[str, float] = field(default_factory=dict)
    """Bytes each GPU sends per step, by parallel dimension (tp, cp, ep, pp, dp)."""
    profile: str = "tuned-2025"
    """Software profile whose fitted efficiencies were used (models.perf.calibration)."""
    tokens_per_s_band: tuple[float, float] = (0.0, 0.0)
    """[low, high] tokens/s: the prediction times the p10 and p90 of measured/predicted
    in leave-one-source-out cross-validation of the profile."""

    def as_dict(self) -> dict[str, object]:
        return {"step_time_s": self.step_time_s, "tokens_per_s": self.tokens_per_s,
                "model_tflops_per_gpu": self.model_tflops_per_gpu, "mfu": self.mfu,
                "hfu": self.hfu, "memory_gib_per_gpu": self.memory_gib_per_gpu,
                "fits": self.fits, "parallelism": self.parallelism.as_dict(),
                "breakdown": dict(self.breakdown), "gpus": self.gpus,
                "gpus_used": self.gpus_used,
                "memory_breakdown_gib": dict(self.memory_breakdown_gib),
                "traffic_gb_per_step": {k: v / 1e9 for k, v in self.traffic_bytes.items()},
                "profile": self.profile, "tokens_per_s_band": list(self.tokens_per_s_band)}
