"""Calibration of the performance model on published training runs.

Reads calibration_runs.csv from shared/reference beside the clone (../shared/reference,
as CI lays it out; /work/shared/reference as a fallback) and the shipped GPU catalog.
Each row's notes give what the columns cannot (vocab, FFN, GQA, MoE, MLA, head_dim,
sliding window) and the source's FLOP convention: rows with a measured tokens/s are
compared on tokens/s (no convention involved); the others on MFU (Megatron's full-
attention count, this model's) or, for NAR21 whose FLOP formula counts recomputation,
on HFU. Run `pytest tests/test_perf_calibration.py -s` to print the tables.
"""

from __future__ import annotations

import csv
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from models.perf import NetworkSpec
from models.perf.calibration import (
    BANDS,
    FITTED,
    CalibrationRun,
    Predictor,
    fit_all,
    leave_one_source_out,
    relative_errors,
)
from models.perf.flops import arch_of
from models.perf.memory import GIB
from models.perf.search import candidate_grid, evaluate_grid

REPO = Path(__file__).resolve().parents[1]
CSV_NAME = "calibration_runs.csv"
CSV_CANDIDATES = (REPO.parent / "shared" / "reference" / CSV_NAME,
                  Path("/work/shared/reference") / CSV_NAME)
GPU_TOML = REPO / "instances" / "catalog" / "gpu.toml"

VOCAB = {"NAR21": 51200, "KOR22": 51200, "MCORE24": 131072}
"""Rows whose notes give no vocabulary: Megatron GPT (NAR21, KOR22), MCORE24's note."""
SYSTEM = {"A100": "a100-sxm-80gb", "H100": "h100-sxm", "B200": "b200",
          "GB200": "gb200-nvl72", "GB300": "gb300-nvl72"}
NIC_GBPS = {"A100": 200.0, "H100": 400.0, "B200": 400.0, "GB200": 400.0, "GB300": 800.0}
"""Back-end NIC per GPU from each row's network column (Selene HDR 200G; ConnectX-7
400G; GB300 ConnectX-8 800G). No in-network reduction assumed (not stated)."""
PROFILE = {"NAR21": "megatron-2021", "KOR22": "megatron-2021"}
"""Everything else runs the tuned-2025 stack (Megatron-Core 2024 and later)."""
FSDP_ROWS = {"MB2511-LLAMA3-8B-H100-8"}
"""The source table lists FSDP (Megatron-FSDP) for this row; all other tuned rows use the
distributed optimizer (Megatron-Core / Bridge / MLPerf default)."""
NOT_EXPRESSIBLE = {
    "MB2511-LLAMA3-8B-H100-8": "full recompute of 5 of 32 layers (the model recomputes "
                               "all layers or none)",
    "MB2511-GPTOSS-120B-GB200-64": "attention sinks",
    "MB2511-GPTOSS-120B-H100-64": "attention sinks",
}
"""What a row used that the model lacks (the rest of the row is expressed)."""
MTP_LAYERS = {"DSV3": 1}
"""Multi-token-prediction modules per model (run-id family): Megatron-Bridge's
DeepSeek-V3 runs keep DeepSeek-V3's one MTP module (its pipeline layouts end in an MTP
stage, 'tmL'), which the notes do not state; the table's own FLOP count says so:
259.9 GFLOP/token = 250.4 for the main model (causal) + 10.2 for one MTP module (an MoE
layer, the 2h -> h projection and a second pass through the 129k-token output layer),
checked by test_flops_per_token_match_the_tables."""


def csv_path() -> Path:
    for path in CSV_CANDIDATES:
        if path.exists():
            return path
    pytest.skip(f"{CSV_NAME} not found in {', '.join(map(str, CSV_CANDIDATES))}")


def _num(text: str) -> float | None:
    text = text.strip().rstrip("%")
    return float(text) if text else None


def _system(gpu_id: str) -> SimpleNamespace:
    table = tomllib.loads(GPU_TOML.read_text())[gpu_id]
    fields = {k: v for k, v in table.items() if k != "sources"}
    fields.setdefault("fp8_tflops", None)
    fields.setdefault("fp4_tflops", None)
    return SimpleNamespace(id=gpu_id, **fields)


def _gpu_kind(gpu: str) -> str:
    for kind in ("GB300", "GB200", "B200", "H100", "A100"):
        if gpu.startswith(kind):
            return kind
    raise ValueError(f"unknown GPU '{gpu}'")


def _precision(text: str) -> str:
    if "FP4" in text:
        return "fp4"
    return "fp8" if "FP8" in text else "bf16"


def _note_int(notes: str, pattern: str) -> int | None:
    match = re.search(pattern, notes)
    return int(match.group(1)) if match else None


def workload_of(row: dict) -> SimpleNamespace:
    """The row's architecture: columns, then its notes."""
    notes, family = row["notes"], row["run_id"].split("-")[0]
    hidden = int(row["hidden"])
    moe = None
    m = re.search(r"MoE (\d+) experts top-(\d+) expert_ffn (\d+) shared (\d+)", notes)
    if m:
        experts, top_k, f_e, shared = map(int, m.groups())
        moe = SimpleNamespace(experts=experts, top_k=top_k, expert_ffn_hidden=f_e,
                              shared_experts=shared, moe_layer_freq=1,
                              first_dense_layers=_note_int(notes, r"first (\d+) layers dense")
                              or 0, routing_imbalance=1.0)   # force-balanced benchmarks
    mla = re.search(r"MLA \(q_lora (\d+), kv_lora (\d+), qk (\d+)\+(\d+) rope, v (\d+)\)",
                    notes)
    window = _note_int(notes, r"alternating (\d+)-token sliding-window")
    return SimpleNamespace(
        name=row["run_id"], layers=int(row["layers"]), hidden=hidden,
        heads=int(row["heads"]) if row["heads"] else hidden // 128,
        kv_heads=_note_int(notes, r"kv_heads (\d+)"),
        ffn_hidden=_note_int(notes, r"; ffn (\d+)"),
        # MoE experts are SwiGLU in all three MoE families (their published active
        # parameter counts need 3 matrices; checked in a test), whatever the note's
        # activation says
        gated_mlp="SwiGLU" in notes or moe is not None,
        vocab=_note_int(notes, r"vocab (\d+)") or VOCAB[family],
        seq_len=int(row["seq_len"]), global_batch=int(row["global_batch_seqs"]),
        precision=_precision(row["precision"]), moe=moe,
        head_dim=_note_int(notes, r"head_dim (\d+)"),
        q_lora_rank=int(mla.group(1)) if mla else None,
        kv_lora_rank=int(mla.group(2)) if mla else None,
        qk_nope_head_dim=int(mla.group(3)) if mla else None,
        qk_rope_head_dim=int(mla.group(4)) if mla else None,
        v_head_dim=int(mla.group(5)) if mla else None,
        sliding_window=window, local_layers_per_global=1 if window else None,
        mtp_layers=MTP_LAYERS.get(row["run_id"].split("-")[1], 0))


def fixed_degrees(row: dict, arch) -> dict[str, int | str]:
    """The degrees the row states. MCORE24 strong-scaling rows state none: TP8/PP6 of
    the weak-scaling 177B row, as their note suggests; dp = GPUs / (tp*pp*cp)."""
    family, gpus = row["run_id"].split("-")[0], int(row["n_gpus"])
    tp = int(float(row["tp"])) if row["tp"] else 8
    pp = int(float(row["pp"])) if row["pp"] else 6
    cp = int(float(row["cp"])) if row["cp"] else 1
    fixed: dict[str, int | str] = {"tp": tp, "pp": pp, "cp": cp, "dp": gpus // (tp * pp * cp)}
    for key, col in (("ep", "ep"), ("vpp", "vpp"), ("micro_batch", "micro_batch")):
        if row[col]:
            fixed[key] = int(float(row[col]))
    if family == "KOR22":
        fixed.setdefault("vpp", 1)
    if arch.is_moe:
        fixed.setdefault("ep", 1)
        fixed["etp"] = 1            # Megatron-Bridge MoE presets: expert TP 1
    rc = row["recompute"]
    if rc.startswith(("none", "selective", "full")) and row["run_id"] not in FSDP_ROWS:
        fixed["recompute"] = rc.split()[0]
    if family not in PROFILE:
        fixed["sharding"] = "full" if row["run_id"] in FSDP_ROWS else "optimizer"
    return fixed


def load_runs() -> list[CalibrationRun]:
    runs = []
    with csv_path().open() as f:
        for row in csv.DictReader(f):
            family = row["run_id"].split("-")[0]
            kind = _gpu_kind(row["gpu"])
            wl = workload_of(row)
            arch = arch_of(wl)
            if row["tokens_per_s"]:
                metric, measured = "tokens_per_s", float(row["tokens_per_s"])
            elif row["mfu"]:
                metric, measured = "mfu", _num(row["mfu"]) / 100.0
            else:
                metric, measured = "hfu", _num(row["hfu"]) / 100.0
            runs.append(CalibrationRun(
                run_id=row["run_id"], workload=wl, system=_system(SYSTEM[kind]),
                network=NetworkSpec(NIC_GBPS[kind], False), gpus=int(row["n_gpus"]),
                fixed=fixed_degrees(row, arch), metric=metric, measured=measured,
                profile=PROFILE.get(family, "tuned-2025"), notes=row["notes"],
                extra={"params_b": _num(row["params_b"]),
                       "active_params_b": _num(row["active_params_b"])}))
    return runs


@pytest.fixture(scope="module")
def runs():
    return load_runs()


TABLE_FLOPS_CONVENTION = {"NEMO2407": "full", "MB2511": "causal", "MB2602": "causal"}
"""The FLOP count behind each source's 'Model TFLOP/sec/GPU' (the rows' notes)."""
TABLE_FLOPS_EXCEPTIONS = {
    "MB2511-GPTOSS-120B-GB200-64": "the table counts ~6 x active parameters (30.7 GFLOP "
                                   "per token): no attention core; the model's causal "
                                   "count with the 128-token windows is 34.5",
    "MB2511-GPTOSS-120B-H100-64": "as on GB200: 27.2 GFLOP per token vs 32.7",
}


def test_flops_per_token_match_the_tables(runs):
    """Rows that publish both TFLOP/s per GPU and tokens/s fix the source's FLOPs per
    token = TFLOP/s * GPUs / tokens/s; the workload read from the notes reproduces it
    under the source's convention (so a miss on such a row is not a wrong architecture
    or FLOP convention): within 1% (the tables give 3-4 figures), DeepSeek-V3 with its
    MTP module (MTP_LAYERS; 3.7% short without it)."""
    with csv_path().open() as f:
        table = {row["run_id"]: row for row in csv.DictReader(f)}
    checked = 0
    for r in runs:
        row = table[r.run_id]
        if not (row["tflops_per_gpu"] and row["tokens_per_s"]):
            continue
        published = (float(row["tflops_per_gpu"]) * 1e12 * r.gpus
                     / float(row["tokens_per_s"]))
        arch = arch_of(r.workload)
        model = (arch.model_flops_per_token if TABLE_FLOPS_CONVENTION[r.source] == "full"
                 else arch.causal_flops_per_token)
        if r.run_id in TABLE_FLOPS_EXCEPTIONS:
            assert published < 0.92 * model, r.run_id
            continue
        assert published == pytest.approx(model, rel=0.01), r.run_id
        checked += 1
    assert checked == 23


@pytest.fixture(scope="module")
def fitted(runs):
    return fit_all(runs)


def test_every_row_is_expressed(runs):
    """61 rows; the workload reproduces each row's published parameter counts (total
    within 8%: "8B" is a rounded name; active within 12%: publishers differ on whether
    the input embedding counts as active), so the architecture read from the notes is
    right (a 2- instead of 3-matrix expert would miss active counts by ~25%)."""
    assert len(runs) == 61
    for r in runs:
        arch = arch_of(r.workload)
        if r.extra["params_b"]:
            assert arch.params_total / 1e9 == pytest.approx(r.extra["params_b"], rel=0.08), \
                r.run_id
        if r.extra["active_params_b"]:
            assert arch.params_active / 1e9 == pytest.approx(r.extra["active_params_b"],
                                                             rel=0.12), r.run_id


def test_every_run_fits_at_its_published_configuration(runs):
    """Memory at the published degrees (unstated ones searched) is within HBM."""
    rows = []
    for r in runs:
        arch = arch_of(r.workload)
        grid = candidate_grid(arch, r.system, r.gpus, r.fixed, profile=r.profile)
        res = evaluate_grid(arch, r.system, r.network, grid, r.gpus, profile=r.profile)
        least = float(res["memory_gib"].min())
        rows.append(f"| {r.run_id} | {least:.1f} | {r.system.hbm_gib:.0f} |")
        assert res["fits"].any(), f"{r.run_id}: {least:.1f} GiB > {r.system.hbm_gib} GiB"
    print("\n| run | least memory at its configuration [GiB] | HBM [GiB] |\n|---|---|---|")
    print("\n".join(rows))


def test_fit_reproduces_the_shipped_constants(fitted):
    for key, params in FITTED.items():
        for name, value in params.items():
            assert fitted[key][name] == pytest.approx(value, abs=2e-3), (key, name)


def _table(runs, errors) -> str:
    lines = ["| run | profile | metric | published | error |", "|---|---|---|---|---|"]
    for r, e in zip(runs, errors, strict=True):
        lines.append(f"| {r.run_id} | {r.profile} | {r.metric} | {r.measured:,.4g} | "
                     f"{e:+.1%} |")
    return "\n".join(lines)


OUTLIERS = {
    "MB2511-QWEN3-30B-A3B-H100-16": "121 TFLOP/s/GPU, 12% of the BF16 peak, 4.5x below "
                                    "the same model on GB200 in the same table (the "
                                    "table's TFLOP/s and tokens/s agree: 23 GFLOP/token "
                                    "on both) where peaks and HBM differ 2.4-2.5x; same "
                                    "local experts x MoE layers x micro-batches per step "
                                    "(16 x 768) on both, so no per-expert or per-layer "
                                    "fixed cost (calibration's expert_fixed_us) can "
                                    "separate them; the stack differs (FP8 current "
                                    "scaling vs MXFP8; Megatron-Bridge's later presets "
                                    "graph the router and attention on GB200 and not on "
                                    "H100 FP8): not in the model",
}
"""Rows the model misses by more than 30% in-sample, and what is known about why.
(MB2511-QWEN3-235B-A22B-B200-64 was one at +44% until the per-expert fixed cost:
16 local experts at ep8, now +16%. NEMO2407-NEMOTRON-22B-64 was one at +44% until the
output layer was placed on the last pipeline stage: its 256k-vocabulary output layer
is 3.5 layers' worth of GEMMs on a pp4 x vpp10 stage of 10; now +25%.)"""


def test_in_sample_error_per_row(runs):
    """With the shipped constants the mean error is within 10% and every row within 30%
    except the named OUTLIERS (which must still be outliers: the list stays current)."""
    errors = relative_errors(runs, Predictor(runs)(FITTED))
    print("\n" + _table(runs, errors))
    print(f"in-sample MAPE {np.mean(np.abs(errors)):.1%} over {len(runs)} runs")
    for r, e in zip(runs, errors, strict=True):
        assert (abs(e) > 0.30) == (r.run_id in OUTLIERS), (r.run_id, e)
    assert np.mean(np.abs(errors)) <= 0.10


def _groups(runs, key):
    out: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        out.setdefault(key(r), []).append(i)
    return out


@pytest.fixture(scope="module")
def cv_errors(runs):
    return leave_one_source_out(runs)


LOSO_MAPE = {"ampere": 0.087, "hopper": 0.089, "blackwell": 0.090, "blackwell-ultra": 0.045}
"""Leave-one-source-out MAPE per GPU generation as measured (the test fails if it gets
worse); the target, <= 10% for every generation, is met by all four:
- ampere 7.3-8.7% (was 10.3% before the unfused-attention term): the 2021 stack's
  unfused attention moves every score element through HBM ~30-43 bytes per layer
  (timing.UNFUSED_SCORE_BYTES, a count, not fitted). Its NAR21 fold fits two parameters
  on KOR22's rows alone, a ridge: round-off in the code's operation order moves that
  fold's fit (0.75 / 154 or 0.71 / 101) and Ampere between 8.7% and 7.3% with the 2021
  model unchanged (2026-12-01); the bound keeps 8.7%;
- hopper 8.9% (9.1% before B200's delivered fraction of peak, 2026-12-02, which moved
  moe_bytes and expert_fixed_us; 10.1% before the per-expert fixed cost): its 3 MoE rows
  miss by 27% on average, one of them (MB2511-QWEN3-30B-A3B-H100-16, OUTLIERS) by +74%
  held out; the dense rows 7.0%;
- blackwell 9.0% (11.3% before calibration's delivered:b200, 2026-12-02; 17.0% before
  the per-expert fixed cost): its 8 dense rows 4.5% (were 8.4%: held out, MLPerf's GPT-3
  on B200 -15% -> -9%, Llama 3.1 405B on GB200 +9..+15% -> +3..+8%, the 8B B200 row
  -6% -> +1%, at delivered:b200's bound in that fold; 9.7% for Blackwell without the
  bound, that row +10%); its 5 MoE rows 16% (16%): GPT-OSS on GB200 +30% (attention
  sinks, not expressed), the same Qwen3-235B on GB200 at ep32 and B200 at ep8 -17% and
  +16% (Megatron-Bridge's presets run GB200 with HybridEP and CUDA graphs, B200 with the
  plain all-to-all dispatcher and none), DeepSeek-V3 on B200 -13% when Megatron-Bridge
  26.02 is held out;
- blackwell-ultra 4.5% (4.4% before delivered:b200, through the shared MoE parameters;
  6.4% before the per-expert fixed cost)."""
LOSO_TARGET = 0.10


def test_leave_one_source_out_error(runs, cv_errors):
    """Each source predicted from a fit without it, reported per source and per GPU
    generation (LOSO_MAPE); the bands are this distribution's p10/p50/p90."""
    print("\n" + _table(runs, cv_errors))
    lines = ["| group | rows | LOSO MAPE | worst |", "|---|---|---|---|"]
    for name, key in (("source", lambda r: r.source),
                      ("generation", lambda r: r.system.generation)):
        for group, idx in sorted(_groups(runs, key).items()):
            e = cv_errors[idx]
            lines.append(f"| {name} {group} | {len(idx)} | {np.mean(np.abs(e)):.1%} | "
                         f"{e[np.argmax(np.abs(e))]:+.1%} |")
    print("\n".join(lines))
    print(f"all rows: LOSO MAPE {np.mean(np.abs(cv_errors)):.1%}")
    for gen, idx in _groups(runs, lambda r: r.system.generation).items():
        assert np.mean(np.abs(cv_errors[idx])) <= min(LOSO_MAPE[gen] + 0.002, LOSO_TARGET), gen
    for profile, idx in _groups(runs, lambda r: r.profile).items():
        ratio = 1.0 / (1.0 + cv_errors[idx])          # measured / predicted
        expected = np.percentile(ratio, (10, 50, 90))
        assert np.allclose(BANDS[profile], expected, atol=0.01), (profile, expected)


def _memory_gib(run, **extra) -> float:
    """The model's memory at a run's published degrees (one configuration)."""
    arch = arch_of(run.workload)
    fixed = {**run.fixed, **extra}
    grid = candidate_grid(arch, run.system, run.gpus, fixed, profile=run.profile)
    assert len(grid["tp"]) == 1, run.run_id
    res = evaluate_grid(arch, run.system, run.network, grid, run.gpus, profile=run.profile)
    return float(res["memory_gib"][0])


def _attention(h, heads, kv_heads, d):
    return 2 * h * heads * d + 2 * h * kv_heads * d


def test_memory_of_published_configurations_by_hand(runs):
    """First-principles memory of three published configurations under tuned-2025:
    FP8 runs keep 1-byte weights (FP8 parameter gather), bf16 gradients (2 B), fp32
    Adam state (12 B) sharded over dp*cp (routed experts over tp*dp*cp/(etp*ep)),
    fused attention (no s x s scores), Korthikanti's stored activations per layer
    divided by tp (sequence parallel) and cp, pp micro-batches in flight on the first
    stage times (1 + (pp-1)/(pp*vpp)), fp32 logits of one micro-batch, 4 GiB reserve."""
    by_id = {r.run_id: r for r in runs}

    # MLPerf v5.0 Llama 3.1 405B, 512 H100: tp8 pp8 cp2 dp4 vpp8 mb1, no recompute
    h, s, v, f = 16384, 8192 / 2, 128256, 53248
    layer = _attention(h, 128, 8, 128) + 3 * h * f
    stage = 126 * layer / 64 + v * h / 8                # busiest stage holds the embedding
    per_layer = s * h * (7 + 4 * 8 / 128 + 4 + 3 + 6 * f / h) / 8
    acts = per_layer * 16 * 8 * (1 + 7 / 64) + 4 * s * v / 8
    expected = (3 * stage + 12 * stage / 8 + acts) / GIB + 4.0
    assert _memory_gib(by_id["MLPERF50-L405B-H100-512"]) == pytest.approx(expected, rel=1e-9)
    assert 60 < expected < 80      # fits the 80 GB H100 it ran on

    # MLPerf v4.1 GPT-3 175B, 256 H100: tp4 pp8 dp8 vpp6 mb2, no recompute
    h, s, v = 12288, 2048 * 2, 51200
    stage = 96 * 12 * h * h / 32 + v * h / 4
    acts = s * h * 34 / 4 * 12 * 8 * (1 + 7 / 48) + 4 * s * v / 4
    expected = (3 * stage + 12 * stage / 8 + acts) / GIB + 4.0
    assert _memory_gib(by_id["MLPERF41-GPT3-256"]) == pytest.approx(expected, rel=1e-9)
    assert 60 < expected < 80

    # Megatron-Bridge DeepSeek-V3, 256 B200: tp1 pp16 ep8 (etp1) dp16 mb1, MXFP8; the
    # table states neither recompute nor interleaving: counted without either
    h, s, v = 7168, 4096, 129280
    mla = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h
    expert = 3 * h * 2048
    # 61 layers and the MTP module (one more MoE layer and a 2h x h projection), whose
    # weights the model spreads over the stages like the layers'
    nonexpert = 62 * mla + 3 * 3 * h * 18432 + 59 * (expert + h * 256) + 2 * h * h
    dense = nonexpert / 16 + v * h
    routed = 59 * 256 * expert / (8 * 16)
    r_kv = 128 * (192 + 128) / (2 * h)
    moe_ffn = 3 + 8 * (2 + 6 * 2048 / h) + 6 * 2048 / h
    per_token = 7 + 4 * r_kv + 4 + (3 * (3 + 6 * 18432 / h) + 58 * moe_ffn) / 61
    acts = s * h * per_token * 4 * 16 + 4 * s * v
    expected = (3 * (dense + routed) + 12 * (dense / 16 + routed / 2) + acts) / GIB + 4.0
    assert _memory_gib(by_id["MB2602-DSV3-B200-256-MXFP8"], recompute="none", vpp=1) == \
        pytest.approx(expected, rel=1e-9)
    assert expected < 180
