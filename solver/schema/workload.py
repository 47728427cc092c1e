"""Training workload schema (`[workload]` table). Field names are a contract."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from models.perf.calibration import PROFILES
from models.perf.flops import Schedule, arch_of
from solver.schema.base import Bool
from solver.schema.catalog import PositiveInt, StrictModel


class MoE(StrictModel):
    experts: PositiveInt
    top_k: PositiveInt
    expert_ffn_hidden: PositiveInt
    shared_experts: int = Field(default=0, ge=0)
    moe_layer_freq: PositiveInt = 1
    """Every n-th layer is an MoE layer (1 = all layers)."""
    first_dense_layers: int = Field(default=0, ge=0)
    """Leading layers with a dense FFN (ffn_hidden) before the MoE layers (DeepSeek-V3: 3)."""
    routing_imbalance: float = Field(default=1.0, ge=1.0, allow_inf_nan=False)
    """Tokens on the busiest expert-parallel rank / the mean (1 = balanced)."""

    @model_validator(mode="after")
    def _top_k_within_experts(self) -> MoE:
        if self.top_k > self.experts:
            raise ValueError(f"top_k {self.top_k} exceeds experts {self.experts}")
        return self


MAX_PARAMETERS = 1e15
"""Largest model a workload may describe [parameters]: ~500x the largest trained today
(~2e12); a mistyped size (layers = 1e20) made the checkpoint storage's network larger
than any fabric, an internal error deep in the solve."""


class Workload(StrictModel):
    name: str
    layers: PositiveInt
    hidden: PositiveInt
    heads: PositiveInt
    kv_heads: PositiveInt | None = None
    """Key/value heads (grouped-query attention); default = heads."""
    ffn_hidden: PositiveInt | None = None
    """FFN inner size; default 4 * hidden."""
    gated_mlp: Bool = False
    """SwiGLU-style FFN with three matrices."""
    vocab: PositiveInt
    seq_len: PositiveInt
    global_batch: PositiveInt
    """Sequences per optimizer step."""
    precision: Literal["bf16", "fp8", "fp4"] = "bf16"
    moe: MoE | None = None
    head_dim: PositiveInt | None = None
    """Attention head size; default hidden / heads."""
    q_lora_rank: PositiveInt | None = None
    """MLA: rank of the query compression (None = queries projected directly)."""
    kv_lora_rank: PositiveInt | None = None
    """MLA (multi-head latent attention) when set: rank of the key/value latent."""
    qk_nope_head_dim: PositiveInt | None = None
    """MLA: per-head query/key size without rotary embedding (default 128)."""
    qk_rope_head_dim: PositiveInt | None = None
    """MLA: per-head rotary query/key size (default 64)."""
    v_head_dim: PositiveInt | None = None
    """MLA: per-head value size (default qk_nope_head_dim)."""
    sliding_window: PositiveInt | None = None
    """Tokens a local-attention layer sees (None = every layer attends to the sequence)."""
    local_layers_per_global: PositiveInt = 1
    """With sliding_window: local layers per full-attention layer (GPT-OSS 1, Gemma 3 5)."""
    mtp_layers: int = Field(default=0, ge=0)
    """Multi-token-prediction modules (DeepSeek-V3: 1), each one more transformer layer
    (an MoE layer in an MoE model) after a 2h -> h projection and a second pass through
    the output layer, run on the last pipeline stage; at most `layers`."""
    schedule: Schedule = "1f1b"
    """Pipeline schedule and MoE all-to-all overlap of the run's stack
    (models.perf.flops.SCHEDULES): Megatron 1F1B with the all-to-all partly exposed,
    Megatron-Core's 1F1B with expert-parallel overlap, or DeepSeek's DualPipe."""
    profile: str | None = None
    """Software stack the run assumes (models.perf.calibration.PROFILES; None = the
    default tuned-2025)."""
    train_tokens: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    source: str | None = None
    """Where the architecture comes from."""

    @model_validator(mode="after")
    def _heads_consistent(self) -> Workload:
        if self.head_dim is None and self.kv_lora_rank is None and self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not divisible by heads {self.heads} "
                             "(set head_dim)")
        if self.profile is not None and self.profile not in PROFILES:
            raise ValueError(f"profile '{self.profile}' is not one of "
                             f"{', '.join(sorted(PROFILES))}")
        if self.moe is not None and self.moe.first_dense_layers >= self.layers:
            raise ValueError(f"moe.first_dense_layers {self.moe.first_dense_layers} leaves "
                             f"no MoE layer of {self.layers}")
        if self.mtp_layers > self.layers:
            raise ValueError(f"mtp_layers {self.mtp_layers} exceeds layers {self.layers}")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not divisible by kv_heads {self.kv_heads}")
        if (params := arch_of(self).params_total) > MAX_PARAMETERS:
            raise ValueError(f"{params:.3g} parameters, more than {MAX_PARAMETERS:.0e}: check "
                             "layers, hidden and the experts")
        return self
