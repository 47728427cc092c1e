"""The performance model on published production runs that are NOT in the calibration
file (shared/reference/calibration_runs.csv): other scales, models and stacks. Never
fitted on; each case states its source, what the source gives and what is assumed.
Run `pytest tests/test_perf_out_of_sample.py -s` for the table.

Cases (published figure; prediction at the published parallelism, unstated degrees
searched under the default tuned-2025 profile unless said):
- Llama 3 405B, BF16, 8,192 and 16,384 H100 (Llama 3 paper, arXiv 2407.21783, Table 4:
  tp8 cp1 pp16, dp 64 / 128, seq 8192, 16M tokens per batch; 43% and 41% BF16 MFU);
  Meta's RoCE cluster: 400 Gb/s per GPU, pods of 3,072 GPUs, 1:7 oversubscribed above
  them (Sec. 3.3.1).
- MegaScale, GPT-3 175B on 12,288 GPUs, batch 6,144, 55.2% MFU (Jiang et al., NSDI 2024,
  arXiv 2402.15627, Table 2; Ampere GPUs, taken as A100 80GB with 200 Gb/s per GPU;
  degrees not stated: searched). A loose check: MegaScale's model also changes the
  architecture (parallel transformer blocks, sliding-window attention, LAMB), which the
  GPT-3 175B workload here does not, and the GPU type, NIC rate and batch are as read
  from the paper by the author of this test, to be re-checked against its Table 2.
- DeepSeek-V3 on 2,048 H800, FP8 (arXiv 2412.19437, Sec. 1 and 3.1-3.2: 180K H800 GPU
  hours per trillion tokens = 3.7 days on 2,048 GPUs, i.e. 1,543 tokens/s per GPU, wall
  clock; pp16, ep64 over 8 nodes, ZeRO-1, no tp, DualPipe (the shipped workload's
  schedule); H800 = H100 with 400 GB/s NVLink; 400 Gb/s InfiniBand per GPU).
- OPT-175B on 992 A100 80GB (Zhang et al. 2022, arXiv 2205.01068, Sec. 2.4: "up to
  147 TFLOP/s per GPU"; FSDP with Megatron tp8; ~2M tokens per batch, taken as 992
  sequences of 2,048).
"""

from __future__ import annotations

import pytest

from models.perf import NetworkSpec, search
from solver.loading import load_catalog, load_workload

META_ROCE = NetworkSpec(400.0, False, pod_gpus=3072, oversubscription=7.0)


@pytest.fixture(scope="module")
def gpus():
    catalog = load_catalog()
    h100 = catalog.gpu["h100-sxm"]
    # H800: the export H100, NVLink cut to 400 GB/s (DeepSeek-V3 report Sec. 3.1)
    return {"h100": h100, "h800": h100.model_copy(update={"nvlink_gbytes_per_s": 400.0}),
            "a100": catalog.gpu["a100-sxm-80gb"]}


def _cases(gpus):
    """(name, published, predicted, metric) per case."""
    llama = load_workload("llama3-405b")
    out = []
    for n, dp, mfu in ((8192, 64, 0.43), (16384, 128, 0.41)):
        r = search(llama, gpus["h100"], META_ROCE, n, {"tp": 8, "pp": 16, "cp": 1, "dp": dp})
        out.append((f"Llama 3 405B, {n:,} H100", mfu, r.mfu, "MFU"))
    gpt3 = load_workload("gpt3-175b").model_copy(update={"global_batch": 6144})
    r = search(gpt3, gpus["a100"], NetworkSpec(200.0), 12288)
    out.append(("MegaScale 175B, 12,288 A100", 0.552, r.mfu, "MFU"))
    dsv3 = load_workload("deepseek-v3")
    r = search(dsv3, gpus["h800"], NetworkSpec(400.0), 2048,
               {"tp": 1, "pp": 16, "ep": 64, "etp": 1, "cp": 1, "dp": 128})
    published = 1e12 / (180e3 * 3600.0) * 2048
    out.append(("DeepSeek-V3, 2,048 H800", published, r.tokens_per_s, "tokens/s"))
    return out


TOLERANCE = 0.10
"""Each dense case within 10% (the calibration's leave-one-source-out error)."""
KNOWN_MISSES = {
    "DeepSeek-V3, 2,048 H800": (
        (-0.12, -0.03),
        "predicted 2.92M tokens/s against 3.16M published (-7.5%), and only with full "
        "recomputation: DualPipe's memory (DeepSeek-V3 Table 2: two copies of the stage "
        "parameters, pp+1 micro-batches in flight; 2026-12-02) puts the published "
        "selective recompute (RMSNorm and MLA up-projection, Sec. 3.2.3) with ZeRO-1 at "
        "94.1 GiB per GPU (weights 4.8, gradients 9.5, Adam 7.6, activations 68.3, reserve "
        "4), over the 80 GB of an H800, so the search recomputes everything (32.5 GiB). "
        "Not expressed here, and what lets the real run fit (Sec. 3.3.3): activations "
        "cached in FP8 (2 B each here) and AdamW moments in BF16 (12 B/param here, 8 B "
        "there); the profile's bf16 gradients (DeepSeek keeps fp32) err the other way. "
        "Before DualPipe had a memory cost the model fitted selective recompute "
        "in 79.3 GiB and gave 3.58M (+13.3%), above the published wall-clock figure as a "
        "step-time model should be (the published one is GPU-hours: restarts, "
        "evaluation, checkpoints and the batch ramp are in it, not here). With '1f1b' "
        "(the all-to-all 70% exposed, timing.EP_EXPOSED) it was -34% (-40% before "
        "expert_fixed_us took half of moe_bytes' share, 2026-12-02)"),
}
"""Cases outside TOLERANCE, with the range their error must stay in (so the entry is
revisited when the model moves) and why."""


def test_published_production_runs(gpus):
    rows = ["| case | metric | published | predicted | error |", "|---|---|---|---|---|"]
    errors = {}
    for name, published, predicted, metric in _cases(gpus):
        errors[name] = predicted / published - 1.0
        rows.append(f"| {name} | {metric} | {published:,.4g} | {predicted:,.4g} | "
                    f"{errors[name]:+.1%} |")
    print("\n" + "\n".join(rows))
    for name, error in errors.items():
        if name in KNOWN_MISSES:
            low, high = KNOWN_MISSES[name][0]
            assert low <= error <= high, (name, error)
        else:
            assert abs(error) <= TOLERANCE, (name, error)


def test_opt_175b_lies_between_the_2021_and_2025_stacks(gpus):
    """Metaseq 2022 (FSDP + Megatron tp8, full activation checkpointing) sits between
    the megatron-2021 profile (unfused attention, nothing overlapped) and tuned-2025:
    its 147 TFLOP/s per GPU must fall between the two predictions (hardware TFLOP/s
    with the recomputation for 2021, as the 2022 stack recomputed; model TFLOP/s for
    2025). Measured: 2021 ~125 hardware TFLOP/s (-15%), 2025 ~185 (+26%)."""
    opt = load_workload("gpt3-175b").model_copy(update={"vocab": 50272, "global_batch": 992})
    fixed = {"tp": 8, "pp": 1, "dp": 124, "sharding": "full"}
    old = search(opt, gpus["a100"], NetworkSpec(200.0), 992, fixed, profile="megatron-2021")
    new = search(opt, gpus["a100"], NetworkSpec(200.0), 992, fixed, profile="tuned-2025")
    old_tflops = old.hfu * gpus["a100"].bf16_tflops
    print(f"\nOPT-175B: published 147, megatron-2021 {old_tflops:.0f} (hardware), "
          f"tuned-2025 {new.model_tflops_per_gpu:.0f} TFLOP/s per GPU")
    assert old_tflops < 147 < new.model_tflops_per_gpu
