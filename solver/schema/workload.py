"""Training workload schema (`[workload]` table). Field names are a contract."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from solver.schema.catalog import PositiveInt, StrictModel


class MoE(StrictModel):
    experts: PositiveInt
    top_k: PositiveInt
    expert_ffn_hidden: PositiveInt
    shared_experts: int = Field(default=0, ge=0)
    moe_layer_freq: PositiveInt = 1
    """Every n-th layer is an MoE layer (1 = all layers)."""

    @model_validator(mode="after")
    def _top_k_within_experts(self) -> MoE:
        if self.top_k > self.experts:
            raise ValueError(f"top_k {self.top_k} exceeds experts {self.experts}")
        return self


class Workload(StrictModel):
    name: str
    layers: PositiveInt
    hidden: PositiveInt
    heads: PositiveInt
    kv_heads: PositiveInt | None = None
    """Key/value heads (grouped-query attention); default = heads."""
    ffn_hidden: PositiveInt | None = None
    """FFN inner size; default 4 * hidden."""
    gated_mlp: bool = False
    """SwiGLU-style FFN with three matrices."""
    vocab: PositiveInt
    seq_len: PositiveInt
    global_batch: PositiveInt
    """Sequences per optimizer step."""
    precision: Literal["bf16", "fp8", "fp4"] = "bf16"
    moe: MoE | None = None
    train_tokens: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    source: str | None = None
    """Where the architecture comes from."""

    @model_validator(mode="after")
    def _heads_consistent(self) -> Workload:
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not divisible by heads {self.heads}")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not divisible by kv_heads {self.kv_heads}")
        return self
