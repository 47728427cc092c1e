"""Memory per GPU [bytes] for a grid of parallel configurations (numpy, vectorised).

Model (Megatron-LM / Megatron-Core with sequence parallelism):
- parameters per GPU: non-expert / (tp*pp) + routed experts / (etp*ep*pp), plus the
  embedding or output layer V*h/tp on the first and last stage (both when pp = 1);
  routed experts are replicated over the expert data-parallel group of
  n_edp = tp*dp*cp/(etp*ep) ranks, everything else over n_dp = dp*cp ranks;
- weights 2 B/param (bf16), 1 B where the profile stores FP8/FP4 runs' parameters in
  FP8 (Megatron --fp8-param-gather); gradients `profile.grad_bytes` per param (4 = fp32
  main grads, 2 = bf16 grads); Adam state fp32 master + m + v = 12 B/param. Sharding
  over the data-parallel group (SHARDING_MODES, ZeRO stages): 'none' keeps all three
  whole, 'optimizer' (distributed optimizer) shards the Adam state, 'gradients' also the
  gradients, 'full' (FSDP) also the weights, plus two layers' unsharded bf16 weights
  being gathered (current + prefetch);
- activations per layer per micro-batch (Korthikanti et al. 2022, arXiv 2205.05198,
  eq. 1-2, generalised to GQA/MLA, gated and MoE FFNs), with sequence parallelism
  dividing everything by tp and context parallelism dividing the sequence by cp:
    attention   s*b*h*(7 + 4*r)          (r = K+V width / 2h; 11 for MHA)
                + 5*a*s^2*b only without recomputation and without fused attention
                  (FlashAttention never stores the s x s scores; with it 'selective'
                  recomputes the layer norms, the activation functions and MLA's K/V
                  up-projection instead: norms 0, c - 2, r of the latent)
    layer norms 4*s*b*h
    FFN dense   s*b*(3h + c*f)           (c = 6 gated, 4 otherwise; 19*s*b*h for f=4h)
    FFN MoE     s*b*(3h + k*(2h + c*f_e) + n_shared*c*f_e)
  'full' recomputation keeps only each layer's input (2*s*b*h) plus one layer's
  working set; the first pipeline stage holds min(pp, m) micro-batches in flight,
  times (1 + (pp-1)/(pp*vpp)) with interleaving;
- DualPipe (DeepSeek-V3, arXiv 2412.19437, Sec. 3.2.1 and Table 2): each rank holds two
  stages (stage i and stage pp-1-i of the two directions), so 2x the parameters (their
  weights, gradients and Adam state, sharded as above) and min(pp+1, m) micro-batches'
  activations in flight (vpp not used, as in timing.pipeline_bubble);
- output logits in fp32 for one micro-batch (4*s*b*V/tp) on the last stage;
- a fixed reserve for the CUDA context, NCCL buffers and allocator fragmentation.
"""

from __future__ import annotations

import numpy as np

from models.perf.flops import Arch

GIB = 2.0 ** 30
RESERVED_BYTES = 4.0 * GIB
"""CUDA context, NCCL buffers, allocator fragmentation per GPU. Assumption (clusterplan
estimate from typical Megatron runs leaving 3-6 GB unreachable); source:
https://github.com/NVIDIA/Megatron-LM (memory reports in training logs)."""

WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2.0, 4.0, 12.0
RC_NONE, RC_SELECTIVE, RC_FULL = 0, 1, 2
SH_NONE, SH_OPTIMIZER, SH_GRADIENTS, SH_FULL = 0, 1, 2, 3
FSDP_GATHERED_LAYERS = 2.0
"""Layers whose weights FSDP holds unsharded at once (the one computing + the prefetch)."""


def parameter_copies(arch: Arch) -> float:
    """Copies of a stage's parameters each rank holds: 2 under DualPipe, else 1."""
    return 2.0 if arch.schedule == "dualpipe" else 1.0


def activations_in_flight(arch: Arch, pp, vpp, m):
    """Micro-batches' activations the first stage holds: min(pp, m) for 1F1B, times
    (1 + (pp-1)/(pp*vpp)) interleaved; min(pp+1, m) for DualPipe (its Table 2)."""
    if arch.schedule == "dualpipe":
        return np.minimum(pp + 1.0, m)
    return np.minimum(pp, m) * np.where(vpp > 1, 1.0 + (pp - 1) / (pp * vpp), 1.0)


def params_per_gpu(arch: Arch, tp, pp, ep, etp=None) -> tuple[np.ndarray, np.ndarray]:
    """(non-expert incl. embedding, routed expert) parameters on the busiest stage."""
    etp = tp if etp is None else etp
    stages_embed = np.where(pp == 1, 2.0, 1.0)
    dense = (arch.params_nonexpert / (tp * pp)
             + stages_embed * arch.vocab * arch.hidden / tp)
    # experts of a stage: pp splits layers evenly
    expert = arch.params_expert / (etp * ep * pp)
    return dense, expert


def replica_groups(tp, dp, cp, ep, etp=None) -> tuple[np.ndarray, np.ndarray]:
    """(n_dp, n_edp): ranks holding the same non-expert / routed-expert shard."""
    etp = tp if etp is None else etp
    return dp * cp, np.maximum(tp * dp * cp / (etp * ep), 1.0)


def _per_token_hidden(arch: Arch, norms: float, c: float, kv_ratio: float) -> float:
    """Stored bytes per token per hidden unit of one layer (dense/MoE average)."""
    h = arch.hidden
    attn = 7.0 + 4.0 * kv_ratio
    ffn_dense = 3.0 + c * arch.ffn / h
    ffn_moe = 3.0 + arch.top_k * (2.0 + c * arch.expert_ffn / h) \
        + arch.shared_experts * c * arch.expert_ffn / h
    frac_moe = arch.moe_layers / arch.layers
    return attn + norms + (1 - frac_moe) * ffn_dense + frac_moe * ffn_moe


def activation_bytes_per_layer(arch: Arch, tp, cp, mb, rc,
                               fused_attention: bool = False) -> np.ndarray:
    """Stored activations of one layer for one micro-batch [bytes] (averaged over
    dense and MoE layers). With fused attention nothing s x s is stored, and
    'selective' is Megatron-Core's module recompute (layer norms, the FFN/expert
    activation function, MLA's K/V up-projection: norms 0, c - 2, K/V as the latent)."""
    h, s_l = arch.hidden, arch.seq_len / cp
    c = 6.0 if arch.gated else 4.0
    tokens_h = s_l * mb * h / tp
    stored = tokens_h * _per_token_hidden(arch, 4.0, c, arch.kv_ratio)
    if fused_attention:
        latent = arch.kv_ratio if arch.kv_latent_ratio is None else arch.kv_latent_ratio
        none = stored
        selective = tokens_h * _per_token_hidden(arch, 0.0, c - 2.0, latent)
    else:
        none = stored + 5.0 * arch.heads * s_l * s_l * mb / tp
        selective = stored
    full_input = 2.0 * s_l * mb * h / tp
    return np.where(rc == RC_NONE, none, np.where(rc == RC_SELECTIVE, selective, full_input))


def memory_bytes(arch: Arch, tp, pp, dp, cp, ep, vpp, mb, rc, m, etp=None, sh=SH_OPTIMIZER,
                 profile=None) -> dict[str, np.ndarray]:
    """Memory per GPU by component [bytes]; `m` = micro-batches per pipeline per step;
    `sh` a SH_* code; `profile` a models.perf.calibration.Profile (None = the
    2021 Megatron behaviour: fp32 gradients, unfused attention)."""
    dense, expert = params_per_gpu(arch, tp, pp, ep, etp)
    n_dp, n_edp = replica_groups(tp, dp, cp, ep, etp)
    copies = parameter_copies(arch)
    sharded = copies * (dense / n_dp + expert / n_edp)
    whole = copies * (dense + expert)
    grad_bytes = GRAD_BYTES if profile is None else profile.grad_bytes
    weight_bytes = WEIGHT_BYTES if profile is None else profile.weight_bytes(arch.precision)
    fused = profile is not None and profile.fused_attention
    gathered = FSDP_GATHERED_LAYERS * (dense + expert) * pp / arch.layers  # 2 layers' params
    weights = np.where(sh == SH_FULL, weight_bytes * sharded + WEIGHT_BYTES * gathered,
                       weight_bytes * whole)
    grads = grad_bytes * np.where(sh >= SH_GRADIENTS, sharded, whole)
    optimizer = OPTIMIZER_BYTES * np.where(sh == SH_NONE, whole, sharded)
    layers_per_stage = np.ceil(arch.layers / (pp * vpp)) * vpp
    in_flight = activations_in_flight(arch, pp, vpp, m)
    per_layer = activation_bytes_per_layer(arch, tp, cp, mb, rc, fused)
    working = np.where(rc == RC_FULL,
                       activation_bytes_per_layer(arch, tp, cp, mb, RC_SELECTIVE, fused), 0.0)
    logits = 4.0 * (arch.seq_len / cp) * mb * arch.vocab / tp
    activations = per_layer * layers_per_stage * in_flight + working + logits
    total = weights + grads + optimizer + activations + RESERVED_BYTES
    return {"weights": weights, "gradients": grads, "optimizer": optimizer,
            "activations": activations, "reserved": np.full_like(total, RESERVED_BYTES),
            "total": total}
