"""Model shape, parameter counts and FLOPs of a (dense or MoE) decoder transformer.

Conventions (the same as Megatron-LM, Narayanan et al. 2021, and PaLM's MFU):
- a GEMM of (m x k) by (k x n) costs 2*m*k*n FLOPs; backward = 2x forward, so a
  training step costs 3x the forward pass (model FLOPs, used for MFU);
- attention scores count the full (non-causal) s x s product: forward QK^T and AV cost
  2*s*d_qk + 2*s*d_v = 4*s*h FLOPs per token per layer;
- recomputation adds forward FLOPs that count in HFU only: 'selective' re-runs the
  attention core (Korthikanti et al. 2022), 'full' re-runs the whole forward pass.
Closed form check (dense GPT, ffn = 4h, no GQA, untied output layer):
  model FLOPs per token = 72*l*h^2 * (1 + s/(6h) + V/(12*l*h)), the Megatron formula.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.perf.types import WorkloadLike


@dataclass(frozen=True)
class Arch:
    """Per-workload constants the vectorised model needs (plain floats)."""

    layers: int
    hidden: int
    heads: int
    kv_ratio: float          # kv_heads / heads (1 = multi-head attention)
    ffn: int                 # dense FFN inner size
    gated: bool
    vocab: int
    seq_len: int
    global_batch: int
    precision: str
    experts: int             # 1 for dense models
    top_k: int
    expert_ffn: int
    shared_experts: int
    moe_layers: int          # layers whose FFN is a mixture of experts
    # forward FLOPs per token, whole model
    fwd_gemm: float          # all GEMMs (attention projections, FFN/experts, router, logits)
    fwd_attn_core: float     # QK^T and AV
    fwd_routed: float        # the routed-expert share of fwd_gemm (0 for dense models)
    # parameters
    params_nonexpert: float  # per-layer weights that every TP rank shards (attn, dense FFN,
                             # shared experts, router), all layers
    params_expert: float     # routed expert weights, all layers
    params_embedding: float  # input embedding + output layer (untied), V*h each

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def params_total(self) -> float:
        return self.params_nonexpert + self.params_expert + self.params_embedding

    @property
    def params_active(self) -> float:
        """Parameters a token touches (routed experts: top_k of them)."""
        routed = self.params_expert * self.top_k / self.experts if self.is_moe else 0.0
        return self.params_nonexpert + routed + self.params_embedding

    @property
    def model_flops_per_token(self) -> float:
        """Forward + backward FLOPs per token (3x forward), without recomputation."""
        return 3.0 * (self.fwd_gemm + self.fwd_attn_core)

    @property
    def model_flops_per_step(self) -> float:
        return self.model_flops_per_token * self.seq_len * self.global_batch


def ffn_matrices(gated: bool) -> int:
    """Weight matrices of one FFN: 3 for SwiGLU-style gated MLPs, else 2."""
    return 3 if gated else 2


def moe_layer_count(layers: int, freq: int) -> int:
    """Layers i = 1..layers with i % freq == 0 are MoE layers (freq 1 = all)."""
    return layers // freq


def arch_of(wl: WorkloadLike) -> Arch:
    """Derive shapes, parameter counts [parameters] and forward FLOPs [FLOP/token]."""
    h, n_layers, s, v = wl.hidden, wl.layers, wl.seq_len, wl.vocab
    kv_heads = wl.kv_heads or wl.heads
    kv_ratio = kv_heads / wl.heads
    ffn = wl.ffn_hidden or 4 * h
    mats = ffn_matrices(wl.gated_mlp)
    attn_params = 2 * h * h + 2 * h * h * kv_ratio          # Q, O and K, V projections
    dense_ffn_params = mats * h * ffn
    moe = wl.moe
    if moe is not None:
        experts, top_k, f_e = moe.experts, moe.top_k, moe.expert_ffn_hidden
        shared, n_moe = moe.shared_experts, moe_layer_count(n_layers, moe.moe_layer_freq)
    else:
        experts, top_k, f_e, shared, n_moe = 1, 1, ffn, 0, 0
    expert_params = mats * h * f_e
    n_dense = n_layers - n_moe
    params_nonexpert = (n_layers * attn_params + n_dense * dense_ffn_params
                        + n_moe * (shared * expert_params + h * experts))
    params_expert = n_moe * experts * expert_params if n_moe else 0.0
    params_embedding = 2.0 * v * h
    # forward FLOPs per token = 2 * (weights a token multiplies) + attention core
    active_ffn = n_dense * dense_ffn_params + n_moe * ((top_k + shared) * expert_params
                                                       + h * experts)
    fwd_gemm = 2.0 * (n_layers * attn_params + active_ffn + v * h)   # output layer only (the
    # input embedding is a lookup)
    fwd_attn_core = 4.0 * s * h * n_layers
    return Arch(layers=n_layers, hidden=h, heads=wl.heads, kv_ratio=kv_ratio, ffn=ffn,
                gated=wl.gated_mlp, vocab=v, seq_len=s, global_batch=wl.global_batch,
                precision=wl.precision, experts=experts, top_k=top_k, expert_ffn=f_e,
                shared_experts=shared, moe_layers=n_moe, fwd_gemm=fwd_gemm,
                fwd_attn_core=fwd_attn_core,
                fwd_routed=2.0 * n_moe * top_k * expert_params if n_moe else 0.0,
                params_nonexpert=float(params_nonexpert),
                params_expert=float(params_expert),
                params_embedding=params_embedding)


def recompute_fwd_flops_per_token(arch: Arch, recompute: str) -> float:
    """Extra forward FLOPs per token that recomputation adds (counted in HFU only)."""
    if recompute == "full":
        return arch.fwd_gemm - 2.0 * arch.vocab * arch.hidden + arch.fwd_attn_core
    if recompute == "selective":
        return arch.fwd_attn_core
    return 0.0
