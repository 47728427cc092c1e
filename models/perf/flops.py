"""Model shape, parameter counts and FLOPs of a (dense or MoE) decoder transformer.

Conventions (the same as Megatron-LM, Narayanan et al. 2021, and PaLM's MFU):
- a GEMM of (m x k) by (k x n) costs 2*m*k*n FLOPs; backward = 2x forward, so a
  training step costs 3x the forward pass (model FLOPs, used for MFU);
- attention scores count the full (non-causal) s x s product: forward QK^T and AV cost
  2*s*a*(d_qk + d_v) FLOPs per token per layer (4*s*h for plain multi-head attention);
  a sliding-window layer counts min(s, window) instead of s;
- recomputation adds forward FLOPs that count in HFU only: 'selective' re-runs the
  attention core (Korthikanti et al. 2022), 'full' re-runs the whole forward pass.
Closed form check (dense GPT, ffn = 4h, no GQA, untied output layer):
  model FLOPs per token = 72*l*h^2 * (1 + s/(6h) + V/(12*l*h)), the Megatron formula.

Attention shapes: a = heads, d = head_dim (default hidden/heads), GQA with kv_heads;
multi-head latent attention (MLA, DeepSeek-V2/V3) when kv_lora_rank is set:
  Q: h x q_lora + q_lora x a*(d_nope + d_rope)  (or h x a*(d_nope + d_rope) without q_lora)
  KV down h x (kv_lora + d_rope), KV up kv_lora x a*(d_nope + d_v), O a*d_v x h;
  the core uses d_qk = d_nope + d_rope and d_v.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from models.perf.types import WorkloadLike


@dataclass(frozen=True)
class Arch:
    """Per-workload constants the vectorised model needs (plain floats)."""

    layers: int
    hidden: int
    heads: int
    kv_ratio: float          # bytes of K+V per token relative to 2*hidden (1 = MHA)
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
    fwd_attn_core: float     # QK^T and AV, full (non-causal) count within each window
    fwd_routed: float        # the routed-expert share of fwd_gemm (0 for dense models)
    fwd_last_stage: float    # the share of fwd_gemm only the last pipeline stage runs: the
                             # output layer and the multi-token-prediction modules
    # parameters
    params_nonexpert: float  # per-layer weights that every TP rank shards (attn, dense FFN,
                             # shared experts, router), all layers
    params_expert: float     # routed expert weights, all layers
    params_embedding: float  # input embedding + output layer (untied), V*h each
    attn_width: float = 0.0  # a*d_v: width of the attention output (hidden for MHA)
    causal_attn_fraction: float = 0.5
    """Share of fwd_attn_core a causal (block-skipping) kernel executes: (1/l) * sum over
    layers of (w - w^2/(2s))/s', w = min(s, window), s' = the counted span."""
    routing_imbalance: float = 1.0
    """Tokens on the busiest expert-parallel rank / the mean (1 = balanced)."""
    kv_latent_ratio: float | None = None
    """MLA: width of the compressed K/V latent / 2h, what is kept when the per-head K/V
    up-projection is recomputed (None = kv_ratio, no latent)."""
    mtp_layers: int = 0
    """Multi-token-prediction modules (DeepSeek-V3: 1), on the last stage."""
    attn_scores: float = 0.0
    """Attention-score elements per token, whole model: heads x the counted span, summed
    over layers (what an unfused kernel writes to HBM as an s x s matrix per head)."""
    attn_head_dim: float = 128.0
    """(d_qk + d_v)/2 of the attention core: the size of its per-head matrix products."""
    schedule: str = "1f1b"
    """Pipeline schedule and MoE communication overlap of the run's stack (SCHEDULES)."""

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

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
    def causal_flops_per_token(self) -> float:
        """Forward + backward FLOPs per token counting only the attention blocks a
        causal (or sliding-window) kernel computes: the convention of DeepSeek's and
        Megatron-Bridge's published figures."""
        return 3.0 * (self.fwd_gemm + self.fwd_attn_core * self.causal_attn_fraction)

    @property
    def model_flops_per_step(self) -> float:
        return self.model_flops_per_token * self.seq_len * self.global_batch


Schedule = Literal["1f1b", "1f1b-a2a-overlap", "dualpipe"]
SCHEDULES: tuple[str, ...] = get_args(Schedule)
"""Pipeline schedules (models.perf.timing says how each is timed):
  1f1b              Megatron's (interleaved) 1F1B; the MoE all-to-all partly exposed
                    (timing.EP_EXPOSED);
  1f1b-a2a-overlap  Megatron-Core's combined 1F1B with expert-parallel overlap
                    (moe_a2a_overlap): one micro-batch's forward runs beside another's
                    backward, each one's all-to-all hidden behind the other's compute;
  dualpipe          DeepSeek-V3's DualPipe (arXiv 2412.19437, Sec. 3.2.1): the same
                    overlap, also for the pipeline's point-to-point transfers, and
                    micro-batches fed from both ends of the pipeline (smaller bubble)."""


def ffn_matrices(gated: bool) -> int:
    """Weight matrices of one FFN: 3 for SwiGLU-style gated MLPs, else 2."""
    return 3 if gated else 2


def moe_layer_count(layers: int, freq: int, first_dense: int = 0) -> int:
    """After `first_dense` dense layers, layers i = 1.. with i % freq == 0 are MoE."""
    return (layers - first_dense) // freq


def attention_shape(wl: WorkloadLike) -> tuple[float, float, float, float, float]:
    """(projection parameters per layer, d_qk, d_v, K+V values per token the core reads,
    K+V values per token before up-projection: the MLA latent, else the same)."""
    h, a = wl.hidden, wl.heads
    kv_lora = getattr(wl, "kv_lora_rank", None)
    if kv_lora:
        d_rope = getattr(wl, "qk_rope_head_dim", None) or 64
        d_nope = getattr(wl, "qk_nope_head_dim", None) or 128
        d_v = getattr(wl, "v_head_dim", None) or d_nope
        q_lora = getattr(wl, "q_lora_rank", None)
        q = (h * q_lora + q_lora * a * (d_nope + d_rope)) if q_lora else h * a * (d_nope + d_rope)
        params = q + h * (kv_lora + d_rope) + kv_lora * a * (d_nope + d_v) + a * d_v * h
        # training materialises per-head K and V from the latent (what the core reads)
        return (float(params), float(d_nope + d_rope), float(d_v),
                float(a * (d_nope + d_rope + d_v)), float(kv_lora + d_rope))
    d = getattr(wl, "head_dim", None) or h // a
    kv = wl.kv_heads or a
    params = 2 * h * a * d + 2 * h * kv * d
    return float(params), float(d), float(d), float(2 * kv * d), float(2 * kv * d)


def arch_of(wl: WorkloadLike) -> Arch:
    """Derive shapes, parameter counts [parameters] and forward FLOPs [FLOP/token]."""
    h, n_layers, s, v = wl.hidden, wl.layers, wl.seq_len, wl.vocab
    attn_params, d_qk, d_v, kv_floats, kv_latent = attention_shape(wl)
    ffn = wl.ffn_hidden or 4 * h
    mats = ffn_matrices(wl.gated_mlp)
    dense_ffn_params = mats * h * ffn
    moe = wl.moe
    if moe is not None:
        experts, top_k, f_e = moe.experts, moe.top_k, moe.expert_ffn_hidden
        first_dense = getattr(moe, "first_dense_layers", 0) or 0
        shared = moe.shared_experts
        n_moe = moe_layer_count(n_layers, moe.moe_layer_freq, first_dense)
        imbalance = getattr(moe, "routing_imbalance", None) or 1.0
    else:
        experts, top_k, f_e, shared, n_moe, imbalance = 1, 1, ffn, 0, 0, 1.0
    expert_params = mats * h * f_e
    n_dense = n_layers - n_moe
    params_nonexpert = (n_layers * attn_params + n_dense * dense_ffn_params
                        + n_moe * (shared * expert_params + h * experts))
    params_expert = n_moe * experts * expert_params if n_moe else 0.0
    params_embedding = 2.0 * v * h
    # forward FLOPs per token = 2 * (weights a token multiplies) + attention core
    active_ffn = n_dense * dense_ffn_params + n_moe * ((top_k + shared) * expert_params
                                                       + h * experts)
    # multi-token prediction (DeepSeek-V3): each module is one more layer (an MoE layer
    # in an MoE model) after a 2h -> h projection, and a pass through the shared output
    # layer; it runs on the last stage
    mtp = getattr(wl, "mtp_layers", None) or 0
    mtp_ffn = (((top_k + shared) * expert_params + h * experts) if n_moe
               else dense_ffn_params)
    params_nonexpert += mtp * (attn_params + 2 * h * h + (
        shared * expert_params + h * experts if n_moe else dense_ffn_params))
    params_expert += mtp * experts * expert_params if n_moe else 0.0
    fwd_last_stage = 2.0 * (v * h + mtp * (attn_params + mtp_ffn + 2 * h * h + v * h))
    fwd_gemm = 2.0 * (n_layers * attn_params + active_ffn) + fwd_last_stage   # the input
    # embedding is a lookup
    window = getattr(wl, "sliding_window", None)
    local_per_global = getattr(wl, "local_layers_per_global", None) or 1
    n_local = n_layers * local_per_global // (local_per_global + 1) if window else 0
    w = min(window or s, s)
    spans = [(n_layers - n_local + mtp, s), (n_local, w)]   # (layers, counted span)
    counted = sum(n * span for n, span in spans)
    executed = sum(n * (span - span * span / (2.0 * s)) for n, span in spans)
    fwd_attn_core = 2.0 * wl.heads * (d_qk + d_v) * counted
    schedule = getattr(wl, "schedule", None) or SCHEDULES[0]
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule '{schedule}' is not one of {', '.join(SCHEDULES)}")
    return Arch(layers=n_layers, hidden=h, heads=wl.heads, kv_ratio=kv_floats / (2.0 * h),
                ffn=ffn, gated=wl.gated_mlp, vocab=v, seq_len=s,
                global_batch=wl.global_batch, precision=wl.precision, experts=experts,
                top_k=top_k, expert_ffn=f_e, shared_experts=shared, moe_layers=n_moe,
                fwd_gemm=fwd_gemm, fwd_attn_core=fwd_attn_core,
                fwd_routed=2.0 * n_moe * top_k * expert_params if n_moe else 0.0,
                fwd_last_stage=fwd_last_stage,
                params_nonexpert=float(params_nonexpert),
                params_expert=float(params_expert),
                params_embedding=params_embedding, attn_width=wl.heads * d_v,
                causal_attn_fraction=executed / counted, routing_imbalance=float(imbalance),
                kv_latent_ratio=kv_latent / (2.0 * h), mtp_layers=mtp,
                attn_scores=float(wl.heads * counted), schedule=schedule,
                attn_head_dim=(d_qk + d_v) / 2.0)
