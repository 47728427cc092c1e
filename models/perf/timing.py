"""Step time of one training iteration for a grid of configurations (numpy, vectorised).

Every input array (tp, pp, dp, cp, ep, vpp, mb, rc) has one entry per configuration;
the efficiency parameters may broadcast against them (calibration evaluates a grid of
parameter values at once). Units: seconds, bytes, FLOPs.

Per micro-batch and pipeline stage, on one GPU (Megatron-LM 1F1B schedule):
  t_compute = F_gemm / (peak_gemm * eff) + F_attn / (peak_bf16 * eff)
      eff = gemm_max * n / (n + half_dim), n = hidden / tp (the sharded GEMM dimension:
      narrow shards run tensor cores less efficiently); F counts model FLOPs plus
      recomputation; FP8/FP4 runs do GEMMs at that precision's peak times the
      precision's efficiency, the attention core (FlashAttention) in BF16;
      routed-expert GEMMs slowed by t/(t + EXPERT_HALF_TOKENS), t = tokens per local
      expert and micro-batch (small grouped GEMMs); plus memory-bound kernels:
      ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN * h bytes per token and layer
      (sequence-parallel shard) at HBM bandwidth;
  t_tp   = TP collectives with sequence parallelism: 8 per layer (4 forward, 4
      backward; +4 with full recompute), each moving (tp-1)/tp * s*b*h*2 bytes, on
      NVLink (half the bidirectional figure per direction), TP_EXPOSED not overlapped;
  t_cp   = ring attention: (cp-1) K/V chunks forward, twice that backward, overlapped
      with the attention core; NVLink if tp*cp fits the NVLink domain, else the NIC;
  t_ep   = MoE all-to-all: dispatch+combine forward and backward of top_k copies of
      each token's hidden state, (ep-1)/ep leaving the GPU, EP_EXPOSED not overlapped;
  t_pp   = point-to-point activations s*b*h*2/tp forward and backward per virtual stage.
Per step with m micro-batches: (m + (pp-1)/vpp) * t_mb, the second term being the
pipeline bubble (interleaved schedule, Narayanan et al. 2021).
Data parallelism (distributed optimizer): reduce-scatter of bf16 gradients and
all-gather of bf16 parameters, 2*2 bytes per parameter * (n-1)/n, on the NIC (halved
with in-network reduction); inter-pod share slowed by the oversubscription. It
overlaps with the last micro-batch's backward, the first forward and the pipeline
cool-down (window t_mb * (1 + (pp-1)/vpp)); only the rest is exposed.
Optimizer: the Adam update of the local shard is HBM-bound (~32 bytes per parameter).

Group placement (for which links a group crosses): ranks are ordered tp (innermost),
cp, ep, pp, then the rest of dp; a group's span is the product of its own and the
inner degrees. A span above the NVLink domain uses the NIC; above `pod_gpus` it
crosses the oversubscribed inter-pod links.
"""

from __future__ import annotations

import numpy as np

from models.perf.flops import Arch
from models.perf.memory import RC_FULL, RC_NONE, params_per_gpu
from models.perf.types import GpuSystemLike, NetworkSpec, peak_tflops

NVLINK_EFFICIENCY = 0.80
"""Achieved fraction of per-direction NVLink bandwidth in NCCL collectives (nccl-tests
bus bandwidth ~360 of 450 GB/s on H100). Source: https://github.com/NVIDIA/nccl-tests
(clusterplan estimate from published bus-bandwidth results)."""
NETWORK_EFFICIENCY = 0.90
"""Achieved fraction of NIC line rate in large collectives (clusterplan estimate)."""
TP_EXPOSED = 0.75
"""Share of TP communication not hidden behind compute (Megatron overlaps part of it;
clusterplan assumption, not fitted)."""
EP_EXPOSED = 0.7
"""Share of MoE all-to-all time not hidden (Megatron-Core overlaps some of it;
DeepSeek's DualPipe nearly all; clusterplan assumption)."""
DP_OVERLAP = 0.8
"""Effective share of the overlap window usable by DP communication (compute slows when
collectives share the SMs and HBM; clusterplan assumption)."""
OPTIMIZER_BYTES_PER_PARAM = 32.0
"""HBM traffic of one Adam update per locally owned parameter [bytes] (read fp32
master, m, v, grad; write master, m, v, bf16 param)."""
HBM_EFFICIENCY = 0.8
EXPERT_HALF_TOKENS = 256.0
"""Tokens per local expert and micro-batch at which grouped expert GEMMs run at half
the efficiency of large GEMMs (the GEMM M dimension must fill 128-256-row tensor-core
tiles; clusterplan assumption). Tokens per local expert = ep * b*s/cp * top_k/experts."""
ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN = 120.0
"""HBM traffic of the memory-bound (non-GEMM) kernels per token, per layer, per hidden
unit, forward + backward [bytes]: layer norms, activations, dropout, residuals, bias,
softmax. ~3.5x the 34 bytes of stored activations of Korthikanti et al. 2022 (each
written and read in forward and backward); clusterplan estimate, not fitted."""


def _net_bytes_per_s(network: NetworkSpec) -> float:
    return network.gbps_per_gpu * 1e9 / 8.0 * NETWORK_EFFICIENCY


def _link_time(nbytes, span, system: GpuSystemLike, network: NetworkSpec):
    """Seconds to move `nbytes` per GPU inside a group spanning `span` GPUs."""
    nvlink = system.nvlink_gbytes_per_s / 2.0 * 1e9 * NVLINK_EFFICIENCY
    net = _net_bytes_per_s(network)
    slow = 1.0
    if network.pod_gpus is not None:
        slow = np.where(span > network.pod_gpus, network.oversubscription, 1.0)
    bw = np.where(span <= system.nvlink_domain_gpus, nvlink, net / slow)
    return nbytes / bw


def step_components(arch: Arch, system: GpuSystemLike, network: NetworkSpec,
                    tp, pp, dp, cp, ep, vpp, mb, rc, gemm_max, half_dim,
                    low_precision_factor=1.0) -> dict[str, np.ndarray]:
    """Seconds per step by component, plus 'step', micro-batch count 'm' and 'traffic':
    bytes each GPU sends per step for each parallel dimension (tp, cp, ep, pp, dp)."""
    tp, pp, dp, cp, ep, vpp, mb, rc = (np.asarray(x) for x in (tp, pp, dp, cp, ep, vpp,
                                                                mb, rc))
    h, s = arch.hidden, arch.seq_len
    per_rank = np.ceil(arch.global_batch / dp)
    m = np.ceil(per_rank / mb)
    layers_stage = np.ceil(arch.layers / (pp * vpp)) * vpp
    imbalance = layers_stage * pp / arch.layers
    tokens_mb = mb * s
    shard = tp * cp * pp
    rc_gemm = np.where(rc == RC_FULL, arch.fwd_gemm - 2.0 * arch.vocab * h, 0.0)
    rc_core = np.where(rc == RC_NONE, 0.0, arch.fwd_attn_core)
    f_gemm = tokens_mb * (3.0 * arch.fwd_gemm + rc_gemm) * imbalance / shard
    f_core = tokens_mb * (3.0 * arch.fwd_attn_core + rc_core) * imbalance / shard
    n = h / tp
    eff = gemm_max * n / (n + half_dim)
    peak_gemm = peak_tflops(system, arch.precision) * 1e12
    peak_bf16 = system.bf16_tflops * 1e12
    gemm_eff = eff * (low_precision_factor if arch.precision != "bf16" else 1.0)
    t_core = f_core / (peak_bf16 * eff)
    t_elementwise = (tokens_mb / (cp * tp) * h * ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN
                     * layers_stage * np.where(rc == RC_FULL, 1.3, 1.0)
                     / (system.hbm_tbps * 1e12 * HBM_EFFICIENCY))
    f_routed = tokens_mb * (3.0 * arch.fwd_routed + np.where(rc == RC_FULL, arch.fwd_routed,
                                                             0.0)) * imbalance / shard
    expert_tokens = ep * tokens_mb / cp * arch.top_k / arch.experts
    expert_eff = expert_tokens / (expert_tokens + EXPERT_HALF_TOKENS)
    t_gemm = ((f_gemm - f_routed) + f_routed / expert_eff) / (peak_gemm * gemm_eff)
    t_compute = t_gemm + t_core + t_elementwise

    act_bytes = tokens_mb / cp * h * 2.0      # the micro-batch's hidden states on this CP rank
    n_coll = np.where(rc == RC_FULL, 12.0, 8.0)
    tp_bytes = n_coll * (tp - 1) / tp * act_bytes * layers_stage
    t_tp = TP_EXPOSED * _link_time(tp_bytes, tp, system, network)

    kv_bytes = 2.0 * arch.kv_ratio * act_bytes / tp
    cp_bytes = 3.0 * (cp - 1) * kv_bytes * layers_stage
    t_cp = np.maximum(_link_time(cp_bytes, tp * cp, system, network) - t_core, 0.0)

    moe_stage = layers_stage * arch.moe_layers / arch.layers
    ep_bytes = (4.0 * moe_stage * (tokens_mb / (cp * tp)) * arch.top_k * h * 2.0
                * (ep - 1) / ep)
    t_ep = EP_EXPOSED * _link_time(ep_bytes, tp * cp * ep, system, network)

    pp_bytes = np.where(pp > 1, 2.0 * vpp * act_bytes / tp, 0.0)
    t_pp = _link_time(pp_bytes, tp * cp * ep * pp, system, network)

    t_mb = t_compute + t_tp + t_cp + t_ep + t_pp
    bubble = (pp - 1) / vpp * t_mb

    dense, expert = params_per_gpu(arch, tp, pp, ep)
    n_dp, n_edp = dp * cp, np.maximum(dp * cp / ep, 1.0)
    dp_bytes = 4.0 * (dense * (n_dp - 1) / n_dp + expert * (n_edp - 1) / n_edp)
    if network.in_network_reduction:
        dp_bytes = dp_bytes * 0.5
    used = shard * dp
    inner = tp * cp * pp
    t_dp = dp_bytes / np.where(used <= system.nvlink_domain_gpus,
                               system.nvlink_gbytes_per_s / 2.0 * 1e9 * NVLINK_EFFICIENCY,
                               _net_bytes_per_s(network))
    if network.pod_gpus is not None:
        in_pod = np.maximum(network.pod_gpus // inner, 1)
        t_dp = t_dp * np.where(used > network.pod_gpus,
                               1.0 + network.oversubscription / in_pod, 1.0)
    window = DP_OVERLAP * t_mb * (1.0 + (pp - 1) / vpp)
    t_dp_exposed = np.maximum(t_dp - window, 0.0)
    owned = dense / n_dp + expert / n_edp
    t_opt = owned * OPTIMIZER_BYTES_PER_PARAM / (system.hbm_tbps * 1e12 * HBM_EFFICIENCY)

    out = {"compute": m * t_compute, "tp_comm": m * t_tp, "cp_comm": m * t_cp,
           "ep_comm": m * t_ep, "pp_comm": m * t_pp, "pipeline_bubble": bubble,
           "dp_comm": t_dp_exposed, "optimizer": t_opt}
    step = sum(np.broadcast_arrays(*out.values()))
    traffic = {"tp": m * tp_bytes, "cp": m * cp_bytes, "ep": m * ep_bytes,
               "pp": m * pp_bytes, "dp": dp_bytes}
    return {**out, "step": step, "m": m, "traffic": traffic}
