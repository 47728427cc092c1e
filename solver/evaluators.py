"""Throughput, goodput and spares of one candidate design, as the MILP's coefficients.

`Evaluators` bundles three functions; `solve()` uses `default_evaluators(inst)`.
Throughput: GPUs x dense peak x objective.assumed_mfu / model FLOPs per token.
Goodput: 1 - objective.overhead_fraction. Spares: ceil(spare_fraction x nodes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solver.schema import Instance, Workload


@dataclass(frozen=True)
class PerfEstimate:
    tokens_per_s: float
    mfu: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GoodputEstimate:
    goodput: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluators:
    throughput: Callable[..., PerfEstimate]
    goodput: Callable[..., GoodputEstimate]
    spare_nodes: Callable[..., int]


def model_flops_per_token(w: Workload) -> float:
    """Training FLOPs per token (forward + backward, no recompute), Narayanan et al. 2021:
    6 * (active non-embedding params + vocab*hidden) + 12 * layers * hidden * seq_len.
    """
    h, L = w.hidden, w.layers
    kv = (w.kv_heads or w.heads) / w.heads
    attn = h * h * (2 + 2 * kv)
    ffn_h = w.ffn_hidden or 4 * h
    mats = 3 if w.gated_mlp else 2
    dense_ffn = mats * h * ffn_h
    if w.moe is None:
        per_layer = attn + dense_ffn
    else:
        moe_ffn = mats * h * w.moe.expert_ffn_hidden * (w.moe.top_k + w.moe.shared_experts)
        share = 1.0 / w.moe.moe_layer_freq
        per_layer = attn + share * moe_ffn + (1 - share) * dense_ffn
    return 6.0 * (L * per_layer + w.vocab * h) + 12.0 * L * h * w.seq_len


def assumed_mfu_throughput(inst: Instance, parts, fabric, gpus: int) -> PerfEstimate:
    peak = parts.gpu.peak_tflops(inst.workload.precision) * 1e12
    mfu = inst.objective.assumed_mfu
    return PerfEstimate(gpus * peak * mfu / model_flops_per_token(inst.workload), mfu,
                        {"model": "assumed_mfu"})


def overhead_goodput(inst: Instance, parts, fabric, nodes: int, spares: int,
                     media_lines) -> GoodputEstimate:
    return GoodputEstimate(1.0 - inst.objective.overhead_fraction, {"model": "overhead_fraction"})


def fraction_spares(inst: Instance, parts, nodes: int) -> int:
    return math.ceil(inst.reliability.spare_fraction * nodes)


def default_evaluators(inst: Instance) -> Evaluators:
    return Evaluators(assumed_mfu_throughput, overhead_goodput, fraction_spares)
