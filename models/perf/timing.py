"""Step time of one training iteration for a grid of configurations (numpy, vectorised).

Every input array (tp, pp, dp, cp, ep, vpp, mb, rc, etp, sh) has one entry per
configuration; the efficiency parameters may broadcast against them. Units: seconds,
bytes, FLOPs. `profile` (models.perf.calibration.Profile; None = megatron-2021
behaviour) says how the stack runs attention, gradients and parameters.

Per micro-batch and pipeline stage, on one GPU (Megatron-LM 1F1B schedule):
  t_gemm = F_gemm / (peak_prec * eff * f_prec), eff = gemm_max * n / (n + half_dim),
      n = hidden / tp (the sharded GEMM dimension: narrow shards run tensor cores less
      efficiently); f_prec the precision's factor (1 at BF16). F counts model FLOPs plus
      recomputation: the stage's layers and, on the last stage, the whole output layer
      (2*V*h per token) and any multi-token-prediction modules (paced_stage: the 2021
      stack splits the layers evenly, the output on top of the last stage's share; tuned
      stacks balance the last stage as Megatron-Core's pipeline layouts do, the slower
      of a plain and the last GPU pacing). Routed-expert GEMMs use n = expert_ffn / etp,
      are slowed by
      t/(t + expert_half_tokens) (calibration.PRIOR, 256; t = tokens per local expert and
      micro-batch = ep * etp/tp * b*s/cp * top_k/experts: small grouped GEMMs) and
      wait for the busiest rank (x routing_imbalance);
  t_attn = the attention core. Fused (FlashAttention) profiles run only the causal
      (or in-window) blocks, causal_attn_fraction of the counted FLOPs, with a backward
      that recomputes the scores (3.5x the forward instead of 3x), in BF16 at
      ATTENTION_EFFICIENCY of the BF16 peak times attention_head_factor (head size
      (d_qk + d_v)/2 against 128). Unfused (2021): all counted FLOPs at the
      GEMM efficiency, plus the s x s scores of every head through HBM (softmax, dropout:
      UNFUSED_SCORE_BYTES per element);
  t_hbm  = memory-bound kernels at HBM bandwidth: elementwise_bytes * h per token and
      layer (sequence-parallel shard; fitted for tuned-2025, else
      ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN), plus the MoE layers' routing work,
      moe_bytes * top_k * (h + expert_ffn/etp) per token and MoE layer (fitted,
      models.perf.calibration);
  t_expert = expert_fixed_us per local expert (experts/ep) and MoE layer, 4/3 of it with
      full recompute (fitted, models.perf.calibration: host-side launches of each
      expert's kernels after dropless routing's device-to-host sync);
  t_compute = t_gemm + t_attn + t_hbm + t_expert;
  t_tp   = TP collectives with sequence parallelism: 8 per layer (4 forward, 4
      backward; +4 with full recompute), each moving (tp-1)/tp * s*b*h*2 bytes, on
      NVLink (half the bidirectional figure per direction), TP_EXPOSED not overlapped;
  t_cp   = ring attention: (cp-1) K/V chunks forward, twice that backward, overlapped
      with the attention core; NVLink if tp*cp fits the NVLink domain, else the NIC;
  t_ep   = MoE all-to-all: dispatch+combine forward and backward of top_k copies of
      each token's hidden state, (ep-1)/ep leaving the GPU; when the group spans several
      NVLink domains only the copies bound for other domains cross the NIC
      (all_to_all_off_domain). Exposed by the workload's schedule (flops.SCHEDULES):
      1f1b EP_EXPOSED of it; 1f1b-a2a-overlap and dualpipe only what exceeds the layer's
      compute (a micro-batch's all-to-all runs beside another's compute), the layer's
      compute then slowed by the SMs the all-to-all holds (OVERLAP_SM_SHARE, ep > 1);
  t_pp   = point-to-point activations s*b*h*2/tp forward and backward per virtual stage
      (dualpipe: hidden behind the compute the all-to-all leaves).
Per step with m micro-batches: (m + bubble) * t_mb, pipeline_bubble: (pp-1)/vpp for 1F1B
(interleaved schedule, Narayanan et al. 2021), (pp/2-1)/3 for DualPipe.
Data parallelism, bytes per parameter * (n-1)/n on the NIC (NVLink inside the domain):
  reduce-scatter of gradients (2 B; the 2021 profile all-reduces 16-bit gradients, 2+2 B)
  and all-gather of parameters (2 B, 1 B with FP8 parameters); 'none' (DDP) all-reduces
  the gradients (2 x 2 B); 'full' (FSDP) gathers the parameters twice (forward and
  backward) and reduce-scatters every micro-batch. In-network reduction (SHARP, a
  property of the fabric's switches) halves the reduction's bytes, not the gathers'.
  Inter-pod share slowed by the oversubscription. It overlaps with the last
  micro-batch's backward, the first forward and the pipeline cool-down (window t_mb *
  (1 + (pp-1)/vpp)); FSDP's per-micro-batch traffic overlaps the whole compute; only the
  rest is exposed (DP_OVERLAP of the window usable). A profile without dp_overlap (the
  2021 stack) exposes all of it.
Optimizer: the Adam update of the local shard is HBM-bound (~32 bytes per parameter).

Group placement (for which links a group crosses): ranks are ordered tp (innermost),
cp, ep, pp, then the rest of dp; a group's span is the product of its own and the
inner degrees (the expert group: etp*cp*ep). A span above the NVLink domain uses the
NIC; above `leaf_gpus` its traffic crosses the spine (SPINE_EFFICIENCY: a rail-optimized
fabric keeps same-rail traffic of a whole rail group on one leaf, a middle-of-rack one
only a leaf's own GPUs); above `pod_gpus` it crosses the oversubscribed inter-pod links.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from models.perf.flops import Arch
from models.perf.memory import (
    RC_FULL,
    RC_NONE,
    SH_FULL,
    SH_NONE,
    SH_OPTIMIZER,
    params_per_gpu,
    replica_groups,
)
from models.perf.types import GpuSystemLike, NetworkSpec, peak_tflops

NVLINK_EFFICIENCY = 0.80
"""Achieved fraction of per-direction NVLink bandwidth in NCCL collectives (nccl-tests
bus bandwidth ~360 of 450 GB/s on H100). Source: https://github.com/NVIDIA/nccl-tests
(clusterplan estimate from published bus-bandwidth results)."""
NETWORK_EFFICIENCY = 0.90
"""Achieved fraction of NIC line rate in large collectives (clusterplan estimate)."""
SPINE_EFFICIENCY = 0.85
"""Share of NIC rate that traffic crossing the spine keeps (flow collisions on ECMP /
adaptive-routing paths that same-leaf traffic never meets). Clusterplan estimate; it
only acts when the fabric says how many GPUs share a leaf (NetworkSpec.leaf_gpus)."""
TP_EXPOSED = 0.75
"""Share of TP communication not hidden behind compute in the 2021 stack (Megatron
overlaps part of it; clusterplan assumption, not fitted). Profiles set their own
(Profile.tp_exposed: Transformer Engine's userbuffer overlap hides most of it)."""
EP_EXPOSED = 0.7
"""Share of MoE all-to-all time not hidden (Megatron-Core overlaps some of it;
DeepSeek's DualPipe nearly all; clusterplan assumption)."""
OVERLAP_SM_SHARE = 20.0 / 132.0
"""Share of the GPU's streaming multiprocessors an overlapped all-to-all keeps busy while
the compute runs beside it: DeepSeek-V3 dedicates 20 of the H800's 132 SMs to its
dispatch/combine kernels (arXiv 2412.19437, Sec. 3.2.2); the layers' compute runs on
the rest under the overlapped schedules (flops.SCHEDULES), when experts are parallel."""
DP_OVERLAP = 0.8
"""Effective share of the overlap window usable by DP communication (compute slows when
collectives share the SMs and HBM; clusterplan assumption)."""
OPTIMIZER_BYTES_PER_PARAM = 32.0
"""HBM traffic of one Adam update per locally owned parameter [bytes] (read fp32
master, m, v, grad; write master, m, v, bf16 param)."""
HBM_EFFICIENCY = 0.8
ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN = 120.0
"""HBM traffic of the memory-bound (non-GEMM) kernels per token, per layer, per hidden
unit, forward + backward [bytes]: layer norms, activations, dropout, residuals, bias,
softmax. ~3.5x the 34 bytes of stored activations of Korthikanti et al. 2022 (each
written and read in forward and backward); clusterplan estimate, the megatron-2021
profile's value and the prior of the tuned-2025 fit (models.perf.calibration)."""
ATTENTION_EFFICIENCY = {"ampere": 0.45, "hopper": 0.5, "blackwell": 0.5,
                        "blackwell-ultra": 0.6, "cdna3": 0.35}
"""Fraction of the BF16 dense peak fused attention kernels reach, forward + backward
averaged (head dim 128, long sequences). Hopper: FlashAttention-3 reaches 600-740
TFLOP/s forward and ~450-550 backward on H100 (Shah et al. 2024, arXiv 2407.08608) ->
~0.5; Ampere: FlashAttention-2 50-73% forward, less backward (Dao 2023, arXiv
2307.08691); Blackwell: cuDNN / FlashAttention-4 on B200 are softmax (exponent
unit) bound at a similar fraction; Blackwell Ultra doubles the exponent throughput
(10.7 vs 5 TeraExp/s, https://verda.com/blog/gb300-nvl72-architecture) -> 0.6; CDNA3
(MI300X): ~0.35. Sourced estimates, not fitted."""
ATTENTION_HALF_HEAD_DIM = 64.0
"""Head size at which a fused attention kernel would run at half its large-head rate:
its efficiency goes as d/(d + 64), ATTENTION_EFFICIENCY being the d = 128 figure.
FlashAttention-3 on H100 (Shah et al. 2024, arXiv 2407.08608, Fig. 5, BF16 forward at
16k tokens): head dim 64 reaches 0.77x the TFLOP/s of head dim 128 (497 vs 648), 256
1.17x non-causal (756) and 1.04x causal (642 vs 616); d/(d+64) gives 0.75x and 1.2x,
fast for large heads. Sourced estimate, not fitted."""
UNFUSED_SCORE_BYTES_FORWARD = 13.0
UNFUSED_SCORE_BYTES = 30.0
"""HBM bytes per attention-score element per layer of unfused (2021 Megatron) attention,
16-bit scores: forward 13 (QK^T writes 2; the fused scale-mask-softmax reads 2, writes 2;
dropout reads 2, writes 2 and a 1-byte mask; AV reads 2), backward 17 (dP written 2;
dropout backward reads 2 + mask 1, writes 2; softmax backward reads 2 + probabilities
2, writes 2; dS and the dropped probabilities read 2 + 2 by the next GEMMs): 30 per
step, 43 when the core is recomputed (selective or full). A count of the kernels of
Megatron-LM 2021 (megatron/model/fused_softmax.py, transformer.py), not fitted. It is
why small-hidden models ran far below their GEMM rate then: s*heads score elements per
token and layer against ~24*h^2 GEMM FLOPs."""
SELECTIVE_ELEMENTWISE_FACTOR = 1.2
"""Memory-bound work with Megatron-Core's module recompute (layer norms, activation
functions re-run in the backward) relative to none (clusterplan estimate)."""
FLASH_BACKWARD_FACTOR = 3.5
"""Forward + backward FLOPs of a FlashAttention core over its forward: the backward
recomputes the scores (5 matmuls to the forward's 2)."""


def attention_head_factor(head_dim: float) -> float:
    """Fused attention efficiency at `head_dim` relative to head dim 128."""
    half = ATTENTION_HALF_HEAD_DIM
    return head_dim / (head_dim + half) * (128.0 + half) / 128.0


def _net_bytes_per_s(network: NetworkSpec) -> float:
    return network.gbps_per_gpu * 1e9 / 8.0 * NETWORK_EFFICIENCY


def _nic_bandwidth(span, network: NetworkSpec):
    """NIC bytes/s per GPU for a group spanning `span` GPUs beyond NVLink."""
    net = _net_bytes_per_s(network)
    if network.leaf_gpus is not None:
        net = np.where(span > network.leaf_gpus, net * SPINE_EFFICIENCY, net)
    return net


def _link_time(nbytes, span, system: GpuSystemLike, network: NetworkSpec):
    """Seconds to move `nbytes` per GPU inside a group spanning `span` GPUs."""
    nvlink = system.nvlink_gbytes_per_s / 2.0 * 1e9 * NVLINK_EFFICIENCY
    slow = 1.0
    if network.pod_gpus is not None:
        slow = np.where(span > network.pod_gpus, network.oversubscription, 1.0)
    bw = np.where(span <= system.nvlink_domain_gpus, nvlink,
                  _nic_bandwidth(span, network) / slow)
    return nbytes / bw


def all_to_all_off_domain(span, system: GpuSystemLike):
    """Share of an all-to-all's bytes that leave the NVLink domain: peers are spread
    evenly, min(span, domain)/span of them share the sender's domain (1 inside it:
    the whole exchange is on NVLink then, timed at NVLink rate)."""
    domain = system.nvlink_domain_gpus
    return np.where(span <= domain, 1.0, 1.0 - domain / np.maximum(span, 1))


def paced_stage(layers: int, pp, vpp, t_layer, t_output, balanced: bool):
    """(layers, 1 if it also runs the output layer else 0) of the GPU that paces the
    pipeline, from the time of one layer and of the output layer with the MTP modules
    (per micro-batch). Unbalanced (Megatron 2021): ceil(L/(pp*vpp)) layers per virtual
    stage everywhere, the output on top on the last stage. Balanced (Megatron-Core's
    pipeline layouts, e.g. DeepSeek-V3 at pp 16: 4 layers on 15 stages, 1 layer + MTP +
    loss on the last): n = ceil(L/pp) layers per GPU however its virtual stages split
    them, the rest max(L - (pp-1)*n, 0) and the output on the last; the slower paces."""
    if not balanced:
        return np.ceil(layers / (pp * vpp)) * vpp, np.ones_like(t_layer)
    n = np.ceil(layers / pp)
    last = np.maximum(layers - (pp - 1) * n, 0.0)
    last_paces = last * t_layer + t_output >= n * t_layer
    return np.where(last_paces, last, n), np.where(last_paces, 1.0, 0.0)


def pipeline_bubble(schedule: str, pp, vpp):
    """Idle time of a step in micro-batch times. 1F1B (interleaved over vpp virtual
    stages, Narayanan et al. 2021): (pp-1)/vpp. DualPipe (DeepSeek-V3 Sec. 3.2.1,
    Table 2): (pp/2-1)(F&B + B - 3W) with a micro-batch's forward F, input-gradient B and
    weight-gradient W each a third of it and F&B (a forward beside a backward) one whole
    micro-batch: (pp/2-1)/3, vpp not used."""
    if schedule == "dualpipe":
        return np.maximum(pp / 2.0 - 1.0, 0.0) / 3.0
    return (pp - 1) / vpp


def dp_bytes_per_param(profile, precision: str, sh, in_network_reduction: bool):
    """(bytes per parameter per step, bytes per parameter per micro-batch) the data-
    parallel group moves, before the (n-1)/n ring factor."""
    if profile is None:             # 2021 Megatron: all-reduce of 16-bit gradients
        reduce, gather = 2.0, 2.0
    else:
        reduce, gather = 2.0, profile.weight_bytes(precision)
    if in_network_reduction:
        reduce = reduce * 0.5
    per_step = np.where(sh == SH_NONE, reduce + 2.0 * (0.5 if in_network_reduction else 1.0),
                        np.where(sh == SH_FULL, 0.0, reduce + gather))
    per_micro_batch = np.where(sh == SH_FULL, reduce + 2.0 * gather, 0.0)
    return per_step, per_micro_batch


def step_components(arch: Arch, system: GpuSystemLike, network: NetworkSpec,
                    tp, pp, dp, cp, ep, vpp, mb, rc, gemm_max, half_dim,
                    low_precision_factor=1.0, etp=None, sh=SH_OPTIMIZER,
                    profile=None, moe_bytes=16.0, expert_half_tokens=256.0, expert_fixed_us=0.0,
                    elementwise_bytes=ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN,
                    peak_fraction=1.0) -> dict[str, np.ndarray]:
    """Seconds per step by component, plus 'step', micro-batch count 'm' and 'traffic':
    bytes each GPU sends per step for each parallel dimension (tp, cp, ep, pp, dp).
    `peak_fraction` scales the system's spec peaks (GEMMs and attention core) to what it
    delivers relative to its generation's fit (calibration's per-system 'delivered')."""
    return on_network(arch, system, network, local_terms(
        arch, system, tp, pp, dp, cp, ep, vpp, mb, rc, gemm_max, half_dim,
        low_precision_factor, etp, sh, profile, moe_bytes, expert_half_tokens,
        expert_fixed_us, elementwise_bytes, peak_fraction), profile)


def local_terms(arch: Arch, system: GpuSystemLike,
                tp, pp, dp, cp, ep, vpp, mb, rc, gemm_max, half_dim,
                low_precision_factor=1.0, etp=None, sh=SH_OPTIMIZER,
                profile=None, moe_bytes=16.0, expert_half_tokens=256.0, expert_fixed_us=0.0,
                elementwise_bytes=ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN,
                peak_fraction=1.0) -> dict[str, Any]:
    """The terms of :func:`step_components` that do not depend on the network: compute
    per layer, bytes per transfer, parameters, micro-batches (same arguments, without
    the network); a grid timed on many networks computes them once (:func:`on_network`
    finishes the step)."""
    tp, pp, dp, cp, ep, vpp, mb, rc, sh = (np.asarray(x) for x in (tp, pp, dp, cp, ep, vpp,
                                                                    mb, rc, sh))
    etp = tp if etp is None else np.asarray(etp)
    h, s = arch.hidden, arch.seq_len
    per_rank = np.ceil(arch.global_batch / dp)
    m = np.ceil(per_rank / mb)
    f_output = arch.fwd_last_stage
    f_layers = arch.fwd_gemm - f_output
    tokens_mb = mb * s
    shard = tp * cp * pp
    # every term below is per layer of the GPU that paces the pipeline (paced_stage)
    per_gpu = tokens_mb / (arch.layers * tp * cp)    # tokens x (one layer / L) per GPU
    full = rc == RC_FULL
    rc_gemm = np.where(full, f_layers, 0.0)
    f_gemm = per_gpu * (3.0 * f_layers + rc_gemm)
    peak_gemm = peak_tflops(system, arch.precision) * 1e12 * peak_fraction
    peak_bf16 = system.bf16_tflops * 1e12 * peak_fraction
    precision_factor = low_precision_factor if arch.precision != "bf16" else 1.0

    def efficiency(n):
        return gemm_max * n / (n + half_dim)

    eff = efficiency(h / tp)
    # the output layer (2*V*h per token; and MTP modules) runs whole on the last stage
    t_output = tokens_mb / (tp * cp) * 3.0 * f_output / (peak_gemm * eff * precision_factor)
    # each GPU runs the routed copies of its own sequence-parallel share of the tokens
    # (b*s/(cp*tp)), whatever etp: an expert sharded etp ways sees the copies its etp
    # ranks received (all-gathered among them), so the tokens per local expert are
    # ep*etp*(b*s/(cp*tp))*top_k/experts
    f_routed = per_gpu * arch.fwd_routed * np.where(full, 4.0, 3.0)
    expert_tokens = ep * etp / tp * tokens_mb / cp * arch.top_k / arch.experts
    expert_eff = (efficiency(arch.expert_ffn / etp) * expert_tokens
                  / (expert_tokens + expert_half_tokens))
    t_gemm = ((f_gemm - f_routed) / (peak_gemm * eff * precision_factor)
              + f_routed * arch.routing_imbalance
              / (peak_gemm * np.maximum(expert_eff, 1e-9) * precision_factor))
    fused = profile is not None and profile.fused_attention
    if fused:   # 'selective' recomputes no attention core here (module recompute)
        passes = FLASH_BACKWARD_FACTOR + np.where(full, 1.0, 0.0)
        f_core = per_gpu * arch.fwd_attn_core * arch.causal_attn_fraction * passes
        t_core = f_core / (peak_bf16 * ATTENTION_EFFICIENCY.get(system.generation, 0.5)
                           * attention_head_factor(arch.attn_head_dim))
    else:
        f_core = per_gpu * arch.fwd_attn_core * np.where(rc == RC_NONE, 3.0, 4.0)
        score_bytes = UNFUSED_SCORE_BYTES + np.where(rc == RC_NONE, 0.0,
                                                     UNFUSED_SCORE_BYTES_FORWARD)
        t_core = (f_core / (peak_bf16 * eff) + per_gpu * arch.attn_scores
                  * score_bytes / (system.hbm_tbps * 1e12 * HBM_EFFICIENCY))
    hbm = system.hbm_tbps * 1e12 * HBM_EFFICIENCY
    moe_share = arch.moe_layers / arch.layers
    rerun = np.where(full, 1.3, np.where((rc == RC_NONE) | (not fused), 1.0,
                                         SELECTIVE_ELEMENTWISE_FACTOR))
    t_elementwise = (tokens_mb / (cp * tp) * rerun
                     * (h * elementwise_bytes
                        + moe_bytes * arch.top_k * moe_share
                        * (h + arch.expert_ffn / etp))) / hbm

    act_bytes = tokens_mb / cp * h * 2.0      # the micro-batch's hidden states on this CP rank
    n_coll = np.where(full, 12.0, 8.0)
    tp_bytes = n_coll * (tp - 1) / tp * act_bytes
    tp_exposed = TP_EXPOSED if profile is None else profile.tp_exposed
    kv_bytes = 2.0 * arch.kv_ratio * act_bytes / tp
    cp_bytes = 3.0 * (cp - 1) * kv_bytes
    t_core_alone = t_core  # before an overlapped schedule slows it (t_cp hides behind it)
    ep_bytes = (4.0 * moe_share * (tokens_mb / (cp * tp)) * arch.top_k * h * 2.0
                * (ep - 1) / ep)
    span_ep = etp * cp * ep
    ep_wire_bytes = ep_bytes * all_to_all_off_domain(span_ep, system)
    overlapped = arch.schedule != "1f1b"
    # overlapped schedules hide a micro-batch's all-to-all behind another's compute,
    # which runs on the SMs the all-to-all kernels leave
    if overlapped:
        sm_left = np.where(ep > 1, 1.0 - OVERLAP_SM_SHARE, 1.0)
        t_gemm, t_core, t_elementwise = (t / sm_left for t in (t_gemm, t_core,
                                                                t_elementwise))
    t_gemm = t_gemm + (expert_fixed_us * 1e-6 * moe_share * arch.experts / ep
                       * np.where(full, 4.0 / 3.0, 1.0))     # t_expert, per layer
    t_layer_compute = t_gemm + t_core + t_elementwise
    pp_bytes = np.where(pp > 1, 2.0 * vpp * act_bytes / tp, 0.0)
    dense, expert = params_per_gpu(arch, tp, pp, ep, etp)
    n_dp, n_edp = replica_groups(tp, dp, cp, ep, etp)
    ring_params = dense * (n_dp - 1) / n_dp + expert * (n_edp - 1) / n_edp
    owned = dense / n_dp + expert / n_edp
    return {"tp": tp, "pp": pp, "cp": cp, "ep": ep, "vpp": vpp, "sh": sh, "m": m,
            "t_output": t_output, "t_gemm": t_gemm, "t_core": t_core,
            "t_core_alone": t_core_alone, "t_elementwise": t_elementwise,
            "t_layer_compute": t_layer_compute, "tp_bytes": tp_bytes,
            "tp_exposed": tp_exposed, "cp_bytes": cp_bytes, "ep_bytes": ep_bytes,
            "ep_wire_bytes": ep_wire_bytes, "span_ep": span_ep, "overlapped": overlapped,
            "pp_bytes": pp_bytes, "ring_params": ring_params, "used": shard * dp,
            "inner": tp * cp * pp, "t_opt": owned * OPTIMIZER_BYTES_PER_PARAM / hbm}


def on_network(arch: Arch, system: GpuSystemLike, network: NetworkSpec,
               local: dict[str, Any], profile=None) -> dict[str, np.ndarray]:
    """:func:`step_components` from its :func:`local_terms` (`profile` the same) on
    `network`: the transfers, the pipeline and the data-parallel exchange."""
    tp, pp, cp, vpp, sh, m = (local[k] for k in ("tp", "pp", "cp", "vpp", "sh", "m"))
    ep, t_output, t_layer_compute = local["ep"], local["t_output"], local["t_layer_compute"]
    tp_bytes, cp_bytes, ep_bytes = local["tp_bytes"], local["cp_bytes"], local["ep_bytes"]
    t_tp = local["tp_exposed"] * _link_time(tp_bytes, tp, system, network)
    t_cp = np.maximum(_link_time(cp_bytes, tp * cp, system, network) - local["t_core_alone"],
                      0.0)
    t_ep_wire = _link_time(local["ep_wire_bytes"], local["span_ep"], system, network)
    t_ep = (np.maximum(t_ep_wire - t_layer_compute, 0.0) if local["overlapped"]
            else EP_EXPOSED * t_ep_wire)

    t_layer = t_layer_compute + t_tp + t_cp + t_ep
    layers_stage, output_share = paced_stage(arch.layers, pp, vpp, t_layer, t_output,
                                             profile is not None and profile.balanced_pipeline)
    t_compute = (layers_stage * (local["t_gemm"] + local["t_core"] + local["t_elementwise"])
                 + output_share * t_output)
    t_tp, t_cp, t_ep = (layers_stage * t for t in (t_tp, t_cp, t_ep))
    tp_bytes, cp_bytes, ep_bytes = (layers_stage * b for b in (tp_bytes, cp_bytes, ep_bytes))

    pp_bytes = local["pp_bytes"]
    t_pp = _link_time(pp_bytes, tp * cp * ep * pp, system, network)
    if arch.schedule == "dualpipe":  # point-to-point hidden behind the compute left over
        t_pp = np.maximum(t_pp - np.maximum(t_compute - layers_stage * t_ep_wire, 0.0), 0.0)

    t_mb = t_compute + t_tp + t_cp + t_ep + t_pp
    bubble = pipeline_bubble(arch.schedule, pp, vpp) * t_mb

    per_step, per_mb = dp_bytes_per_param(profile, arch.precision, sh,
                                          network.in_network_reduction)
    dp_bytes = local["ring_params"] * (per_step + m * per_mb)
    used, inner = local["used"], local["inner"]
    t_dp = dp_bytes / np.where(used <= system.nvlink_domain_gpus,
                               system.nvlink_gbytes_per_s / 2.0 * 1e9 * NVLINK_EFFICIENCY,
                               _nic_bandwidth(used, network))
    if network.pod_gpus is not None:
        in_pod = np.maximum(network.pod_gpus // inner, 1)
        t_dp = t_dp * np.where(used > network.pod_gpus,
                               1.0 + network.oversubscription / in_pod, 1.0)
    overlap = DP_OVERLAP if profile is None or profile.dp_overlap else 0.0
    window = overlap * t_mb * np.where(sh == SH_FULL, m, 1.0 + (pp - 1) / vpp)
    t_dp_exposed = np.maximum(t_dp - window, 0.0)

    out = {"compute": m * t_compute, "tp_comm": m * t_tp, "cp_comm": m * t_cp,
           "ep_comm": m * t_ep, "pp_comm": m * t_pp, "pipeline_bubble": bubble,
           "dp_comm": t_dp_exposed, "optimizer": local["t_opt"]}
    step = sum(np.broadcast_arrays(*out.values()))
    traffic = {"tp": m * tp_bytes, "cp": m * cp_bytes, "ep": m * ep_bytes,
               "pp": m * pp_bytes, "dp": dp_bytes}
    return {**out, "step": step, "m": m, "traffic": traffic}
