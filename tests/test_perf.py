"""Performance model: FLOP closed forms, hand-computed memory, evaluate/search
behaviour, CP-SAT mapping against exhaustive enumeration, and the `perf` command."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from models.perf import DEFAULT_PROFILE, NetworkSpec, Parallelism, arch_of, evaluate, search
from models.perf.mapping import Level, map_groups, map_groups_exhaustive
from models.perf.memory import GIB, RESERVED_BYTES
from models.perf.search import candidate_grid


def gpt(layers=96, hidden=12288, heads=96, seq=2048, batch=1536, vocab=51200, **kw):
    return SimpleNamespace(name="gpt", layers=layers, hidden=hidden, heads=heads,
                           kv_heads=kw.get("kv_heads"), ffn_hidden=kw.get("ffn"),
                           gated_mlp=kw.get("gated", False), vocab=vocab, seq_len=seq,
                           global_batch=batch, precision=kw.get("precision", "bf16"),
                           moe=kw.get("moe"))


A100 = SimpleNamespace(generation="ampere", gpus_per_node=8, nvlink_domain_gpus=8,
                       bf16_tflops=312.0, fp8_tflops=None, fp4_tflops=None, hbm_gib=80.0,
                       hbm_tbps=2.039, nvlink_gbytes_per_s=600.0)
H100 = SimpleNamespace(generation="hopper", gpus_per_node=8, nvlink_domain_gpus=8,
                       bf16_tflops=989.4, fp8_tflops=1978.9, fp4_tflops=None, hbm_gib=80.0,
                       hbm_tbps=3.35, nvlink_gbytes_per_s=900.0)
IB = NetworkSpec(400.0, False)


def test_dense_flops_match_megatron_closed_form():
    for n_l, h, s, v in [(96, 12288, 2048, 51200), (24, 2048, 4096, 131072)]:
        a = arch_of(gpt(layers=n_l, hidden=h, heads=h // 128, seq=s, vocab=v))
        closed = 72 * n_l * h * h * (1 + s / (6 * h) + v / (12 * n_l * h))
        assert a.model_flops_per_token == pytest.approx(closed, rel=1e-12)
        assert a.params_total == pytest.approx(12 * n_l * h * h + 2 * v * h)


def test_moe_flops_count_only_active_experts():
    moe = SimpleNamespace(experts=8, top_k=2, expert_ffn_hidden=1024, shared_experts=0,
                          moe_layer_freq=2)
    a = arch_of(gpt(layers=4, hidden=512, heads=4, seq=128, vocab=1000, moe=moe))
    h, f = 512, 1024
    attn = 4 * h * h
    dense_layers, moe_layers = 2, 2
    fwd = 2 * (4 * attn + dense_layers * 2 * h * 4 * h + moe_layers * (2 * 2 * h * f + 8 * h)
               + 1000 * h) + 4 * 128 * h * 4
    assert a.model_flops_per_token == pytest.approx(3 * fwd)
    assert a.params_expert == pytest.approx(moe_layers * 8 * 2 * h * f)
    assert a.params_active < a.params_total


@pytest.mark.parametrize(("workload", "seq", "published", "rel"), [
    # arXiv 2505.09343 (DeepSeek, "Insights into DeepSeek-V3"), Table 2: training
    # GFLOPs per token at sequence 4096, causal attention: DeepSeek-V3 250, Llama 3.1
    # 405B 2448
    ("deepseek-v3", 4096, 250e9, 0.01),
    ("llama3-405b", 4096, 2448e9, 0.015),
])
def test_flops_per_token_match_published_figures(workload, seq, published, rel):
    from solver.loading import load_workload

    # the published figures are the main model's: without DeepSeek-V3's MTP module
    wl = load_workload(workload).model_copy(update={"seq_len": seq, "mtp_layers": 0})
    assert arch_of(wl).causal_flops_per_token == pytest.approx(published, rel=rel)


def test_deepseek_v3_mtp_module_by_hand():
    """The shipped DeepSeek-V3 carries its one MTP module (mtp_layers = 1, DeepSeek-V3
    report Sec. 2.2): one more MoE layer (MLA + 1 shared and 8 of 256 routed experts +
    router) after a 2h -> h projection, and a second pass through the 129,280 x 7168
    output layer. Per token, forward: 2 x (187.0M MLA + 9 x 44.0M experts + 7168 x 256
    router + 2 x 7168^2 + 129,280 x 7168) plus its causal attention core; x3 for the
    step = 10.2 GFLOP, what Megatron-Bridge's DeepSeek-V3 table counts (259.9 = 250.4 +
    10.2, tests/test_perf_calibration.py). Parameters: +11.6B (671B -> 682.6B; the
    released checkpoint's 685B also stores the shared embedding and output head again,
    2 x 0.93B)."""
    from solver.loading import load_workload

    wl = load_workload("deepseek-v3")
    assert wl.mtp_layers == 1
    h, v = 7168, 129280
    mla = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h
    expert = 3 * h * 2048
    core = 2 * 128 * (192 + 128) * 4096 / 2          # causal: half the s x s blocks
    forward = 2 * (mla + 9 * expert + h * 256 + 2 * h * h + v * h) + core
    main = arch_of(wl.model_copy(update={"mtp_layers": 0}))
    with_mtp = arch_of(wl)
    assert with_mtp.causal_flops_per_token - main.causal_flops_per_token == \
        pytest.approx(3 * forward, rel=1e-9)
    assert 3 * forward == pytest.approx(10.2e9, rel=0.01)
    assert with_mtp.params_total - main.params_total == \
        pytest.approx(mla + 257 * expert + h * 256 + 2 * h * h, rel=1e-9)
    assert with_mtp.params_total + 2 * v * h == pytest.approx(685e9, rel=0.005)


def test_gpt3_flops_match_mlperf_convention():
    """MLPerf's GPT-3 175B (seq 2048, vocab 51200, full attention count): NVIDIA's
    1.0767 TFLOP per token (calibration_runs.csv notes)."""
    assert arch_of(gpt()).model_flops_per_token == pytest.approx(1.0767e12, rel=5e-4)


def test_mla_and_dense_layers_reproduce_deepseek_v3_parameters():
    """671B total and 37B active (DeepSeek-V3 report); MLA projections ~187M per layer:
    q 7168*1536 + 1536*128*192, kv down 7168*576, kv up 512*128*256, out 128*128*7168."""
    from models.perf.flops import attention_shape
    from solver.loading import load_workload

    wl = load_workload("deepseek-v3").model_copy(update={"mtp_layers": 0})
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    assert attention_shape(wl)[0] == mla
    a = arch_of(wl)
    assert a.moe_layers == 58 and a.dense_layers == 3
    assert a.params_total == pytest.approx(671e9, rel=0.01)
    assert a.params_active == pytest.approx(37e9, rel=0.02)


def test_sliding_window_counts_only_the_window():
    """Half the layers see 128 tokens: attention FLOPs of those layers scale with 128,
    not s; a causal kernel runs (w - w^2/2s)/w of them, s/2 of a full layer's."""
    base = gpt(layers=4, hidden=512, heads=8, seq=4096, vocab=1000)
    windowed = SimpleNamespace(**{**vars(base), "sliding_window": 128,
                                  "local_layers_per_global": 1})
    a, w = arch_of(base), arch_of(windowed)
    assert w.fwd_attn_core == pytest.approx(a.fwd_attn_core * (2 * 4096 + 2 * 128) / (4 * 4096))
    executed = 2 * (4096 - 4096 / 2) + 2 * (128 - 128 * 128 / (2 * 4096))
    assert w.causal_attn_fraction == pytest.approx(executed / (2 * 4096 + 2 * 128))


def test_unfused_attention_moves_its_scores_through_hbm(monkeypatch):
    """megatron-2021 (unfused attention): every score element of every head costs
    UNFUSED_SCORE_BYTES of HBM traffic per step, +UNFUSED_SCORE_BYTES_FORWARD when the
    core is recomputed. GPT 1.7B-like (24 layers, h 2304, 18 heads, s 2048) at tp1 on
    an A100, 4 micro-batches of 1: 4 x 2048 tokens x 18 x 2048 scores x 24 layers x
    (30 | 43) B over 0.8 x 2.039 TB/s of compute time, and nothing else moves."""
    import models.perf.timing as timing
    from models.perf.calibration import profile_of
    from models.perf.memory import RC_NONE, RC_SELECTIVE

    arch = arch_of(gpt(layers=24, hidden=2304, heads=18, seq=2048, batch=4))

    def compute(rc):
        return float(timing.step_components(
            arch, A100, IB, 1, 1, 1, 1, 1, 1, 1, rc, 0.6, 100.0,
            profile=profile_of("megatron-2021"))["compute"])

    with_scores = {rc: compute(rc) for rc in (RC_NONE, RC_SELECTIVE)}
    monkeypatch.setattr(timing, "UNFUSED_SCORE_BYTES", 0.0)
    monkeypatch.setattr(timing, "UNFUSED_SCORE_BYTES_FORWARD", 0.0)
    scores = 4 * 2048 * 18 * 2048 * 24
    hbm = 0.8 * 2.039e12
    for rc, nbytes in ((RC_NONE, 30.0), (RC_SELECTIVE, 43.0)):
        assert with_scores[rc] - compute(rc) == pytest.approx(scores * nbytes / hbm,
                                                              rel=1e-9)


def test_memory_matches_hand_computation():
    """GPT-3 175B, tp8 pp8 dp16, mb1, vpp3, selective: Korthikanti's 34*s*b*h*L/t per
    in-flight factor (1 + (p-1)/(p*v)), 18 B/param with a 12 B optimizer share / dp
    (the 2021 Megatron profile: fp32 main gradients, unfused attention)."""
    wl = gpt()
    r = evaluate(wl, A100, IB, Parallelism(8, 8, 16, vpp=3, micro_batch=1),
                 profile="megatron-2021")
    h, v, n_l = 12288, 51200, 96
    p_stage = 12 * h * h * n_l / 64 + v * h / 8
    assert r.memory_breakdown_gib["weights"] == pytest.approx(2 * p_stage / GIB)
    assert r.memory_breakdown_gib["gradients"] == pytest.approx(4 * p_stage / GIB)
    assert r.memory_breakdown_gib["optimizer"] == pytest.approx(12 * p_stage / 16 / GIB)
    act = 34 * 2048 * h * n_l / 8 * (1 + 7 / 24) + 4 * 2048 * v / 8
    assert r.memory_breakdown_gib["activations"] == pytest.approx(act / GIB)
    total = (18 * p_stage - 12 * p_stage * 15 / 16 + act + RESERVED_BYTES) / GIB
    assert r.memory_gib_per_gpu == pytest.approx(total)
    assert r.fits


def test_dualpipe_memory_by_hand():
    """The hand computation above under DualPipe (DeepSeek-V3 Table 2), vpp 1: each rank
    holds two stages, so 2x the weights, gradients and (sharded) Adam state, and pp+1 = 9
    micro-batches' activations in flight instead of pp = 8 (m = 1536/16 = 96 >= 9)."""
    wl = SimpleNamespace(**vars(gpt()), schedule="dualpipe")
    r = evaluate(wl, A100, IB, Parallelism(8, 8, 16, vpp=1, micro_batch=1),
                 profile="megatron-2021")
    h, v, n_l = 12288, 51200, 96
    p_stage = 12 * h * h * n_l / 64 + v * h / 8
    assert r.memory_breakdown_gib["weights"] == pytest.approx(2 * 2 * p_stage / GIB)
    assert r.memory_breakdown_gib["gradients"] == pytest.approx(2 * 4 * p_stage / GIB)
    assert r.memory_breakdown_gib["optimizer"] == pytest.approx(2 * 12 * p_stage / 16 / GIB)
    act = 34 * 2048 * h * (n_l / 8) / 8 * 9 + 4 * 2048 * v / 8
    assert r.memory_breakdown_gib["activations"] == pytest.approx(act / GIB)
    plain = evaluate(gpt(), A100, IB, Parallelism(8, 8, 16, vpp=1, micro_batch=1),
                     profile="megatron-2021")
    extra = (18 * p_stage - 12 * p_stage * 15 / 16 + 34 * 2048 * h * (n_l / 8) / 8) / GIB
    assert r.memory_gib_per_gpu - plain.memory_gib_per_gpu == pytest.approx(extra)


def test_dualpipe_needs_an_even_pipeline():
    """DualPipe pairs rank i with rank pp-1-i: the search offers only even pp >= 2, and
    an odd or single stage is refused naming --pp."""
    wl = SimpleNamespace(**vars(gpt()), schedule="dualpipe")
    pps = set(candidate_grid(arch_of(wl), A100, 1024)["pp"].tolist())
    assert pps and all(pp >= 2 and pp % 2 == 0 for pp in pps)
    assert {1, 3} <= set(candidate_grid(arch_of(gpt()), A100, 1024)["pp"].tolist())
    for pp in (1, 3):
        with pytest.raises(ValueError, match=f"--pp {pp}: schedule 'dualpipe'"):
            evaluate(wl, A100, IB, Parallelism(8, pp, 16, vpp=1, micro_batch=1))
    assert search(wl, A100, IB, 1024).parallelism.pp % 2 == 0


def test_breakdown_sums_to_step_and_metrics_are_consistent():
    wl = gpt()
    r = evaluate(wl, A100, IB, Parallelism(8, 8, 16, vpp=3, micro_batch=1))
    assert sum(r.breakdown.values()) == pytest.approx(r.step_time_s)
    assert r.tokens_per_s == pytest.approx(1536 * 2048 / r.step_time_s)
    flops = arch_of(wl).model_flops_per_step
    assert r.model_tflops_per_gpu == pytest.approx(flops / r.step_time_s / 1024 / 1e12)
    assert r.mfu == pytest.approx(r.model_tflops_per_gpu / 312.0)
    assert r.hfu > r.mfu      # selective recompute adds the attention core


def test_recompute_trades_memory_for_time():
    """Both profiles: full < selective < none in memory, the reverse in time. (2021:
    selective drops the s x s scores; tuned-2025 stores no scores, its selective is
    Megatron-Core's module recompute of norms and activation functions.)"""
    wl = gpt()
    res = {(prof, rc): evaluate(wl, A100, IB, Parallelism(8, 8, 16, micro_batch=1,
                                                          recompute=rc), profile=prof)
           for prof in ("megatron-2021", "tuned-2025")
           for rc in ("none", "selective", "full")}
    for prof in ("megatron-2021", "tuned-2025"):
        r = {rc: res[prof, rc] for rc in ("none", "selective", "full")}
        assert r["full"].memory_gib_per_gpu < r["selective"].memory_gib_per_gpu \
            < r["none"].memory_gib_per_gpu
        assert r["full"].step_time_s > r["selective"].step_time_s > r["none"].step_time_s
        assert r["full"].hfu > r["full"].mfu


def test_oversubscription_and_sharp_move_dp_time():
    wl = gpt(layers=24, hidden=2048, heads=16, seq=4096, batch=192, vocab=131072)
    par = Parallelism(1, 1, 48, micro_batch=1)
    flat = evaluate(wl, H100, NetworkSpec(400.0, False), par)
    sharp = evaluate(wl, H100, NetworkSpec(400.0, True), par)
    split = evaluate(wl, H100, NetworkSpec(400.0, False, pod_gpus=16, oversubscription=8),
                     par)
    assert sharp.breakdown["dp_comm"] < flat.breakdown["dp_comm"]
    assert split.breakdown["dp_comm"] > flat.breakdown["dp_comm"]


def test_dp_bytes_by_precision_sharding_and_sharp():
    """Per parameter and (n-1)/n (tuned-2025): distributed optimizer = reduce-scatter of
    bf16 gradients (2 B) + all-gather of parameters (2 B, 1 B when an FP8 run gathers
    FP8); SHARP halves the reduction only; DDP all-reduces (2 x 2 B, halved by SHARP);
    FSDP moves 2 B + 2 x gather per micro-batch."""
    from models.perf.calibration import PROFILES
    from models.perf.memory import SH_FULL, SH_NONE, SH_OPTIMIZER
    from models.perf.timing import dp_bytes_per_param

    tuned = PROFILES["tuned-2025"]
    cases = [("bf16", SH_OPTIMIZER, False, (4.0, 0.0)), ("fp8", SH_OPTIMIZER, False, (3.0, 0.0)),
             ("fp8", SH_OPTIMIZER, True, (2.0, 0.0)), ("bf16", SH_NONE, False, (4.0, 0.0)),
             ("bf16", SH_NONE, True, (2.0, 0.0)), ("bf16", SH_FULL, False, (0.0, 6.0)),
             ("fp8", SH_FULL, True, (0.0, 3.0))]
    for precision, sh, sharp, expected in cases:
        got = dp_bytes_per_param(tuned, precision, np.array(sh), sharp)
        assert tuple(float(x) for x in got) == expected, (precision, sh, sharp)


def test_megatron_2021_all_reduces_after_the_backward():
    """The 2021 stack all-reduces the gradients once the last backward is done (no
    overlap): its exposed DP time is the whole transfer, 16-bit all-reduce (2 x 2 B per
    parameter, (n-1)/n) at the NIC rate; the tuned stack hides part of it."""
    from models.perf.timing import NETWORK_EFFICIENCY

    wl = gpt(layers=24, hidden=2304, heads=24, seq=2048, batch=512, vocab=51200)
    par = Parallelism(1, 1, 32, micro_batch=4, recompute="full", sharding="optimizer")
    old = evaluate(wl, A100, NetworkSpec(200.0), par, profile="megatron-2021")
    new = evaluate(wl, A100, NetworkSpec(200.0), par, profile="tuned-2025")
    params = arch_of(wl).params_total
    expected = params * 4.0 * 31 / 32 / (200e9 / 8 * NETWORK_EFFICIENCY)
    assert old.breakdown["dp_comm"] == pytest.approx(expected, rel=1e-9)
    assert new.breakdown["dp_comm"] < 0.5 * expected


def test_output_layer_runs_whole_on_the_last_stage():
    """Megatron splits the layers evenly over the pipeline stages and puts the output
    layer (2*V*h FLOPs per token forward) on the last one, which then paces the
    pipeline: per micro-batch, compute(pp=2) = (compute(pp=1) - t_out)/2 + t_out with
    t_out = tokens * 3 * 2*V*h / (peak * efficiency)."""
    from models.perf.timing import step_components

    wl = gpt(layers=8, hidden=2048, heads=16, seq=4096, batch=64, vocab=256000)
    arch = arch_of(wl)
    kw = dict(tp=1, dp=8, cp=1, ep=1, vpp=1, mb=1, rc=0, gemm_max=0.6, half_dim=0.0)
    one = step_components(arch, H100, IB, pp=1, **kw)
    two = step_components(arch, H100, IB, pp=2, **kw)
    t_out = 4096 * 3 * 2 * 256000 * 2048 / (H100.bf16_tflops * 1e12 * 0.6)
    m = 8                                        # micro-batches of one sequence per rank
    assert two["compute"] / m == pytest.approx((one["compute"] / m - t_out) / 2 + t_out,
                                               rel=1e-12)


def test_expert_work_per_gpu_does_not_depend_on_expert_tp():
    """Each GPU runs the routed copies of its own sequence-parallel token share whatever
    etp (etp < tp spreads whole experts over the TP ranks instead of splitting them), so
    with shape-independent GEMM efficiency (half_dim = expert_half_tokens = 0) the
    compute time is the same for etp = tp and etp = 1; the tokens per local expert are
    ep * etp/tp * b*s/cp * top_k/experts."""
    from models.perf.timing import step_components

    arch = arch_of(_moe_workload())
    kw = dict(tp=np.array([2, 2]), pp=1, dp=np.array([64, 64]), cp=1, ep=np.array([8, 16]),
              vpp=1, mb=1, rc=0, gemm_max=0.6, half_dim=0.0, expert_half_tokens=0.0,
              moe_bytes=0.0, etp=np.array([2, 1]))
    comp = step_components(arch, H100, IB, **kw)
    assert comp["compute"][0] == pytest.approx(comp["compute"][1], rel=1e-12)
    # with expert_half_tokens = t_half the routed GEMMs slow by (t + t_half) / t
    slow = step_components(arch, H100, IB, **{**kw, "expert_half_tokens": 1000.0})
    tokens = np.array([8 * 2 / 2, 16 * 1 / 2]) * 4096 * 8 / 64
    routed = 4096 / 2 * 3 * arch.fwd_routed / (H100.bf16_tflops * 1e12 * 0.6)
    m = 1024 // 64                                 # micro-batches of one sequence per rank
    assert slow["compute"] - comp["compute"] == pytest.approx(
        m * routed * 1000.0 / tokens, rel=1e-9)


def test_per_expert_fixed_cost_by_hand():
    """expert_fixed_us adds its time once per local expert (experts/ep), MoE layer and
    micro-batch, 4/3 of it with full recompute, on every GPU whatever its speed."""
    from models.perf.timing import step_components

    arch = arch_of(_moe_workload())          # 64 experts, 32 MoE layers, 1024 sequences
    kw = dict(tp=1, pp=1, dp=np.array([64, 64, 64]), cp=1, ep=np.array([8, 16, 16]),
              vpp=1, mb=1, rc=np.array([0, 0, 2]), gemm_max=0.6, half_dim=128.0)
    base = step_components(arch, H100, IB, **kw)
    plus = step_components(arch, H100, IB, **kw, expert_fixed_us=200.0)
    m = 1024 // 64
    expected = m * 32 * 200e-6 * np.array([64 / 8, 64 / 16, 64 / 16 * 4 / 3])
    assert plus["compute"] - base["compute"] == pytest.approx(expected, rel=1e-9)
    dense = arch_of(gpt(layers=4, hidden=1024, heads=8, seq=1024, batch=64))
    kw_dense = dict(tp=1, pp=1, dp=8, cp=1, ep=1, vpp=1, mb=1, rc=0, gemm_max=0.6,
                    half_dim=128.0)
    assert step_components(dense, H100, IB, **kw_dense, expert_fixed_us=200.0)["step"] == \
        pytest.approx(step_components(dense, H100, IB, **kw_dense)["step"], rel=1e-12)


def test_delivered_fraction_scales_compute_only():
    """peak_fraction f divides the GEMM and attention-core time by f and leaves the
    HBM-bound work alone: compute(f) = t_hbm + t_flops / f, so f = 1 and 0.5 fix both
    parts, f = 0.25 must give t_hbm + 4 t_flops, and with the FLOP rates made ~infinite
    only t_hbm is left. The catalog's B200 takes calibration's delivered:b200; GB200,
    H100 and a system without an id take 1."""
    from models.perf.calibration import FITTED, efficiency_for
    from models.perf.timing import step_components

    arch = arch_of(gpt(layers=4, hidden=4096, heads=32, seq=2048, batch=64))
    kw = dict(tp=1, pp=1, dp=8, cp=1, ep=1, vpp=1, mb=1, rc=0, gemm_max=0.6, half_dim=128.0)
    t1, t_half, t_quarter = (float(step_components(arch, H100, IB, **kw, peak_fraction=f)
                                   ["compute"]) for f in (1.0, 0.5, 0.25))
    flops_part = t_half - t1                      # t_flops (1/0.5 - 1) = t_flops
    assert flops_part > 0
    assert t_quarter == pytest.approx(t1 + 3.0 * flops_part, rel=1e-9)
    memory_only = step_components(arch, H100, IB, **{**kw, "gemm_max": 1e9},
                                  peak_fraction=1e9)["compute"]
    assert t1 - flops_part == pytest.approx(float(memory_only), rel=1e-3)
    assert efficiency_for("blackwell", "fp8", system_id="b200").peak_fraction == \
        FITTED[("tuned-2025", "blackwell")]["delivered:b200"]
    for gen, system_id in (("blackwell", "gb200-nvl72"), ("hopper", "h100-sxm"),
                           ("blackwell", None)):
        assert efficiency_for(gen, "fp8", system_id=system_id).peak_fraction == 1.0


def _schedule_steps(schedule, pp=4, nic_gbps=400.0, **kw):
    from models.perf.timing import step_components

    arch = arch_of(SimpleNamespace(**{**vars(_moe_workload()), "schedule": schedule}))
    return step_components(arch, H100, NetworkSpec(nic_gbps), tp=1, pp=pp, dp=64, cp=1,
                           ep=32, vpp=1, mb=1, rc=0, gemm_max=0.6, half_dim=128.0, **kw)


def test_overlapped_schedules_hide_the_all_to_all_behind_compute():
    """1f1b exposes EP_EXPOSED of the all-to-all; 1f1b-a2a-overlap and dualpipe only what
    exceeds the layer's compute, which runs on the 112 of 132 SMs the communication
    leaves (OVERLAP_SM_SHARE), so their compute is 132/112 of 1f1b's; DualPipe's bubble is
    (pp/2-1)/3 micro-batch times against 1F1B's pp-1, and it hides the point-to-point
    transfers too."""
    from models.perf.timing import EP_EXPOSED, OVERLAP_SM_SHARE

    plain, over, dual = (_schedule_steps(s) for s in ("1f1b", "1f1b-a2a-overlap",
                                                       "dualpipe"))
    m = 1024 // 64
    # the output layer (on the last stage, no all-to-all beside it) keeps its rate
    t_output = m * 4096 * 3 * 2 * 51200 * 4096 / (H100.bf16_tflops * 1e12 * 0.6 * 4096 / 4224)
    assert over["compute"] - t_output == pytest.approx(
        (plain["compute"] - t_output) / (1 - OVERLAP_SM_SHARE), rel=1e-12)
    assert plain["ep_comm"] > 0 and over["ep_comm"] == 0 and dual["ep_comm"] == 0
    assert over["pp_comm"] == pytest.approx(plain["pp_comm"]) and dual["pp_comm"] == 0
    t_mb = over["compute"] / m + over["pp_comm"] / m
    assert over["pipeline_bubble"] == pytest.approx(3 * t_mb, rel=1e-12)
    assert dual["pipeline_bubble"] == pytest.approx((4 / 2 - 1) / 3 * dual["compute"] / m,
                                                    rel=1e-12)
    # on a slow network the all-to-all outlasts the compute: the excess stays exposed
    wire = _schedule_steps("1f1b", nic_gbps=25.0)["ep_comm"] / EP_EXPOSED
    slow = _schedule_steps("1f1b-a2a-overlap", nic_gbps=25.0)
    assert slow["ep_comm"] == pytest.approx(wire - (slow["compute"] - t_output), rel=1e-9)


def test_attention_efficiency_follows_head_size():
    """Fused attention at head dim d runs at d/(d+64) / (128/192) of the d = 128 rate:
    0.75 at 64, 1 at 128, 1.2 at 256 (FlashAttention-3's ~0.7 and ~1.1)."""
    from models.perf.timing import attention_head_factor

    assert [attention_head_factor(d) for d in (64, 128, 256)] == pytest.approx([0.75, 1, 1.2])


def test_fsdp_shards_weights_and_gradients():
    """Llama-3-8B-like on 8 H100, tp1 dp8: FSDP keeps 1/8 of weights, gradients and Adam
    state per GPU plus two layers' bf16 weights being gathered."""
    wl = gpt(layers=32, hidden=4096, heads=32, seq=8192, batch=128, vocab=128256,
             kv_heads=8, ffn=14336, gated=True)
    opt = evaluate(wl, H100, IB, Parallelism(1, 1, 8, micro_batch=1, recompute="none",
                                             sharding="optimizer"))
    fsdp = evaluate(wl, H100, IB, Parallelism(1, 1, 8, micro_batch=1, recompute="none",
                                              sharding="full"))
    p = arch_of(wl).params_total
    assert fsdp.memory_breakdown_gib["gradients"] == pytest.approx(2 * p / 8 / GIB)
    assert fsdp.memory_breakdown_gib["weights"] == pytest.approx(
        (2 * p / 8 + 2 * 2 * p / 32) / GIB)
    assert opt.memory_breakdown_gib["gradients"] == pytest.approx(2 * p / GIB)
    assert fsdp.memory_gib_per_gpu < opt.memory_gib_per_gpu


def test_middle_of_rack_slows_cross_leaf_traffic():
    """DP traffic of a group larger than the leaf crosses the spine (SPINE_EFFICIENCY):
    a rail group of 256 GPUs keeps 64-way DP on its leaf, a 32-GPU middle-of-rack leaf
    does not."""
    from models.perf.timing import SPINE_EFFICIENCY

    wl = gpt(layers=24, hidden=2048, heads=16, seq=4096, batch=64, vocab=131072)
    par = Parallelism(1, 1, 64, micro_batch=1, recompute="none")
    rail = evaluate(wl, H100, NetworkSpec(400.0, leaf_gpus=256), par)
    mor = evaluate(wl, H100, NetworkSpec(400.0, rail_optimized=False, leaf_gpus=32), par)
    flat = evaluate(wl, H100, NetworkSpec(400.0), par)
    assert rail.step_time_s == pytest.approx(flat.step_time_s)
    assert mor.breakdown["dp_comm"] > rail.breakdown["dp_comm"] > 0
    assert mor.traffic_bytes["dp"] == pytest.approx(rail.traffic_bytes["dp"])
    assert SPINE_EFFICIENCY < 1


def test_config_that_does_not_fit_still_returns_numbers():
    r = evaluate(gpt(), A100, IB, Parallelism(1, 1, 8, micro_batch=1))
    assert not r.fits and r.memory_gib_per_gpu > 80 and r.step_time_s > 0


def test_impossible_degrees_raise():
    with pytest.raises(ValueError, match="--tp 16"):
        evaluate(gpt(), A100, IB, Parallelism(16, 1, 1))
    with pytest.raises(ValueError, match="heads"):
        evaluate(gpt(heads=96), A100, IB, Parallelism(64, 1, 1))


def test_search_fits_and_is_monotone_in_gpus():
    wl = gpt()
    prev = 0.0
    for n in (256, 300, 512, 700, 1024, 1536, 2048, 3000):
        r = search(wl, A100, IB, n)
        assert r.fits and r.gpus_used <= n and r.gpus == n
        assert r.tokens_per_s >= prev * (1 - 1e-12)
        prev = r.tokens_per_s
        best = evaluate(wl, A100, IB, r.parallelism)
        assert best.tokens_per_s == pytest.approx(r.tokens_per_s)


def test_search_honours_fixed_degrees_and_beats_them():
    wl = gpt()
    free = search(wl, A100, IB, 1024)
    fixed = search(wl, A100, IB, 1024, {"tp": 8, "pp": 16, "vpp": 1})
    assert (fixed.parallelism.tp, fixed.parallelism.pp, fixed.parallelism.vpp) == (8, 16, 1)
    assert free.tokens_per_s >= fixed.tokens_per_s


def test_moe_search_uses_expert_parallelism():
    wl = _moe_workload()
    r = search(wl, H100, IB, 512, {"sharding": "optimizer"})
    assert r.fits and r.parallelism.ep > 1
    assert r.breakdown["ep_comm"] > 0


NETWORKS = [NetworkSpec(400.0), NetworkSpec(50.0), NetworkSpec(200.0, True),
            NetworkSpec(400.0, pod_gpus=512, oversubscription=7.0),
            NetworkSpec(100.0, pod_gpus=96, oversubscription=3.0, leaf_gpus=32,
                        rail_optimized=False)]


def _moe_workload():
    moe = SimpleNamespace(experts=64, top_k=8, expert_ffn_hidden=1024, shared_experts=1,
                          moe_layer_freq=1)
    return gpt(layers=32, hidden=4096, heads=32, seq=4096, batch=1024, gated=True,
               ffn=11008, moe=moe)


@pytest.mark.parametrize(("wl", "system", "gpus"), [
    (gpt(), A100, 1024), (gpt(layers=80, hidden=8192, heads=64, seq=4096, batch=512),
                          H100, 1000), (_moe_workload(), H100, 512)])
def test_step_bound_is_below_the_step_on_every_network(wl, system, gpus):
    """The ideal-network step time bounds each fitting configuration's step from below
    on slow, oversubscribed, small-leaf and SHARP networks alike (brute force over the
    whole feasible grid)."""
    from models.perf import feasible_candidates
    from models.perf.search import time_grid

    cands = feasible_candidates(wl, system, gpus)
    assert cands.fits and len(cands) > 1000
    arch, grid = arch_of(wl), cands.grid()
    for net in NETWORKS:
        step = time_grid(arch, system, net, grid, gpus, profile=DEFAULT_PROFILE)["step"]
        assert (cands.step_bound <= step * (1 + 1e-12)).all()
        assert (cands.step_bound < step).any()


@pytest.mark.parametrize(("wl", "system", "gpus"), [
    (gpt(), A100, 1024), (gpt(layers=80, hidden=8192, heads=64, seq=4096, batch=512),
                          H100, 1000), (_moe_workload(), H100, 512), (gpt(), A100, 8)])
def test_search_on_shared_candidates_equals_the_full_search(wl, system, gpus):
    """Reusing feasible_candidates across networks (and timing only the contenders the
    bound leaves) gives exactly the full search's answer, numbers and all; the bound
    does prune. 8 A100s: nothing fits, the least-memory answer."""
    from models.perf import feasible_candidates
    from models.perf.search import timed_contenders

    cands = feasible_candidates(wl, system, gpus)
    for net in NETWORKS:
        assert search(wl, system, net, gpus, candidates=cands) == search(wl, system, net, gpus)
    if cands.fits:  # on a fast network most configurations cannot compete
        grid, _ = timed_contenders(arch_of(wl), system, NETWORKS[0], cands, gpus,
                                   DEFAULT_PROFILE)
        assert 0 < len(grid["tp"]) < len(cands) / 2


@pytest.mark.parametrize("first", [1, 8, 64])
def test_search_equals_the_full_search_when_the_first_timing_is_not_enough(monkeypatch,
                                                                           first):
    """With few configurations timed first, the contenders often lie beyond them and are
    timed again (timed_contenders' second path): the answer is still the full search's,
    numbers and all."""
    import sys

    from models.perf import feasible_candidates

    search_module = sys.modules["models.perf.search"]
    monkeypatch.setattr(search_module, "FIRST_CONFIGURATIONS", first)
    wl = gpt(layers=80, hidden=8192, heads=64, seq=4096, batch=512)
    cands = feasible_candidates(wl, H100, 1000)
    assert len(cands.first) == first and cands.beyond_first < float("inf")
    for net in NETWORKS:
        assert search(wl, H100, net, 1000, candidates=cands) == search(wl, H100, net, 1000)


def test_fp8_is_faster_than_bf16_on_hopper():
    wl = gpt(layers=80, hidden=8192, heads=64, seq=4096, batch=512)
    bf16 = search(wl, H100, IB, 512)
    fp8 = search(gpt(layers=80, hidden=8192, heads=64, seq=4096, batch=512, precision="fp8"),
                 H100, IB, 512)
    assert 1.1 < fp8.tokens_per_s / bf16.tokens_per_s < 2.0


# --- CP-SAT mapping --------------------------------------------------------------------

HIER = [Level("nvlink", 8, 4), Level("leaf", 32, 1), Level("pod", 128, 7),
        Level("cluster", None, 0)]
CASES = [
    ({"tp": 4, "pp": 4, "dp": 8, "cp": 2}, {"tp": 100, "pp": 5, "dp": 3, "cp": 20}),
    ({"tp": 8, "pp": 2, "dp": 16}, {"tp": 50, "pp": 10, "dp": 1}),
    ({"tp": 2, "ep": 4, "pp": 3, "dp": 6}, {"tp": 40, "ep": 30, "pp": 2, "dp": 5}),
    ({"tp": 2, "pp": 8, "dp": 4}, {"tp": 1, "pp": 9, "dp": 8}),
    ({"tp": 1, "cp": 4, "pp": 2, "dp": 64}, {"tp": 0, "cp": 25, "pp": 4, "dp": 2}),
]


@pytest.mark.parametrize(("degrees", "volumes"), CASES)
def test_cpsat_mapping_equals_exhaustive_optimum(degrees, volumes):
    a = map_groups(HIER, degrees, volumes)
    b = map_groups_exhaustive(HIER, degrees, volumes)
    assert a is not None and b is not None
    assert a.cost == b.cost
    for d, n in degrees.items():
        assert int(np.prod(a.factors[d])) == n
    assert all(x == 1 for x in a.factors["tp"][1:])


def test_mapping_keeps_heavy_traffic_inside_and_tp_in_nvlink():
    a = map_groups(HIER, {"tp": 8, "pp": 4, "dp": 8}, {"tp": 100, "pp": 10, "dp": 1})
    assert a.crosses["tp"] == ()
    assert "pod" not in a.crosses["pp"] and "pod" in a.crosses["dp"]
    assert map_groups(HIER, {"tp": 16, "dp": 2}, {"tp": 1, "dp": 1}) is None


# --- CLI -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cli():
    from solver.commands import perf

    app = typer.Typer()
    perf.register(app)
    app.command("noop")(lambda: None)   # keep `perf` a named sub-command
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["perf", *args])


def test_cli_search_json_contract(cli):
    res = cli("--workload", "llama3-405b", "--gpu", "h100-sxm", "--gpus", "2048", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    for key in ("step_time_s", "tokens_per_s", "model_tflops_per_gpu", "mfu", "hfu",
                "memory_gib_per_gpu", "fits", "parallelism", "breakdown"):
        assert key in doc
    assert set(doc["parallelism"]) == {"tp", "pp", "dp", "cp", "ep", "etp", "vpp",
                                       "micro_batch", "recompute", "sharding"}
    assert doc["profile"] == "tuned-2025"
    low, high = doc["tokens_per_s_band"]
    assert low < doc["tokens_per_s"] < high
    assert doc["fits"] is True and doc["mode"] == "search"


def test_cli_fsdp_flag(cli):
    args = ["--workload", "llama3-405b", "--gpu", "h100-sxm", "--gpus", "1024", "--json"]
    fsdp = json.loads(cli(*args, "--fsdp").stdout)
    assert fsdp["parallelism"]["sharding"] == "full"
    res = cli(*args, "--profile", "megatron-2021")
    assert json.loads(res.stdout)["profile"] == "megatron-2021"
    bad = cli(*args, "--profile", "2019")
    assert bad.exit_code == 3 and "--profile" in bad.output


def test_cli_evaluate_and_not_fitting(cli):
    args = ["--workload", "gpt3-175b", "--gpu", "a100-sxm-80gb", "--gpus", "64", "--tp", "8",
            "--pp", "1", "--dp", "8", "--cp", "1", "--ep", "1", "--vpp", "1",
            "--micro-batch", "1", "--recompute", "none", "--json"]
    res = cli(*args)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["mode"] == "evaluate" and doc["fits"] is False


@pytest.mark.parametrize(("args", "needle"), [
    (["--tp", "16", "--pp", "1", "--dp", "4"], "--tp 16"),
    (["--tp", "8", "--pp", "2", "--dp", "5"], "--gpus"),
    (["--tp", "7"], "heads"),
    (["--recompute", "some"], "--recompute"),
    (["--oversubscription", "nan"], "--oversubscription"),
    (["--oversubscription", "inf"], "--oversubscription"),
    (["--pod-gpus", "0"], "--pod-gpus"),
    (["--pod-gpus", "-1"], "--pod-gpus"),
])
def test_cli_impossible_degrees_exit_3(cli, args, needle):
    full = ["--workload", "gpt3-175b", "--gpu", "h100-sxm", "--gpus", "64", *args]
    if "--dp" in args:
        full += ["--cp", "1", "--ep", "1", "--vpp", "1", "--micro-batch", "1",
                 "--recompute", "selective"]
    res = cli(*full)
    assert res.exit_code == 3
    assert needle in res.output


def test_cli_refuses_dualpipe_on_an_odd_pipeline(cli):
    """The shipped DeepSeek-V3 workload runs DualPipe: --pp 3 is refused (exit 3)."""
    res = cli("--workload", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "2048", "--tp", "1",
              "--pp", "3", "--ep", "64")
    assert res.exit_code == 3
    assert "--pp 3: schedule 'dualpipe'" in res.output
    searched = cli("--workload", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "256", "--tp",
                   "1", "--ep", "64", "--json")   # pp left to the search: an even one
    assert searched.exit_code == 0, searched.output
    assert json.loads(searched.stdout)["parallelism"]["pp"] % 2 == 0


def test_cli_maps_the_groups_onto_the_fabric(cli):
    res = cli("--workload", "gpt3-175b", "--gpu", "h100-sxm", "--gpus", "1024",
              "--switch", "quantum2-qm9700", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    groups = doc["mapping"]["groups"]
    assert groups["tp"]["crosses"] == [] and groups["tp"]["degree"] == doc["parallelism"]["tp"]
    for dim, g in groups.items():
        assert g["degree"] == doc["parallelism"][dim]
        assert math.prod(g["factors"].values()) == g["degree"]


# --- prediction bands ----------------------------------------------------------------------

def test_quantile_factor_interpolates_the_cv_quantiles():
    from models.perf.calibration import BANDS, quantile_factor

    p10, p50, p90 = BANDS["tuned-2025"]
    assert quantile_factor(0.1) == pytest.approx(p10)
    assert quantile_factor(0.5) == pytest.approx(p50)
    assert quantile_factor(0.3) == pytest.approx((p10 + p50) / 2)
    assert quantile_factor(0.0) == pytest.approx(p10)      # constant outside [0.1, 0.9]
    assert quantile_factor(1.0) == pytest.approx(p90)
    assert p10 < p50 < p90


def test_design_throughput_at_a_quantile():
    """objective.throughput_quantile scales the design's throughput by the quantile
    factor and keeps the point prediction and band in the details."""
    from models.design.evaluate import exact_throughput
    from models.perf.calibration import quantile_factor
    from solver.loading import load_catalog, load_workload

    cat = load_catalog()
    parts = SimpleNamespace(gpu=cat.gpu["h100-sxm"], nic=cat.nic["connectx-7"],
                            switch=cat.switch["quantum2-qm9700"], radix=64,
                            rail_optimized=True)
    fabric = SimpleNamespace(spec=SimpleNamespace(pods=1, oversubscription=1.0))
    wl = load_workload("llama3-405b")
    point = exact_throughput(SimpleNamespace(workload=wl, objective=SimpleNamespace(
        throughput_quantile=None)), parts, fabric, 4096)
    low = exact_throughput(SimpleNamespace(workload=wl, objective=SimpleNamespace(
        throughput_quantile=0.1)), parts, fabric, 4096)
    assert low.tokens_per_s == pytest.approx(point.tokens_per_s * quantile_factor(0.1))
    assert low.details["predicted_tokens_per_s"] == pytest.approx(point.tokens_per_s)
    lo, hi = point.details["tokens_per_s_band"]
    assert lo < point.tokens_per_s < hi and point.details["profile"] == "tuned-2025"


def test_balanced_pipeline_paces_the_busier_gpu_by_hand():
    """DeepSeek-V3's 61 layers at pp 16 (Megatron-Core's layout: 4 layers on 15 stages,
    1 layer + MTP + loss on the last). Unbalanced: ceil(61/16) = 4 layers and the output
    on top. Balanced: the last GPU holds 61 - 15*4 = 1 layer + the output, and paces
    only if 1*t_layer + t_output >= 4*t_layer. Interleaved unbalanced: ceil(94/24)*3."""
    from models.perf.timing import paced_stage
    one = np.array([1.0])
    assert paced_stage(61, 16, 1, one, 2.0 * one, balanced=False) == (4.0, 1.0)
    assert paced_stage(61, 16, 1, one, 3.5 * one, balanced=True) == (1.0, 1.0)
    assert paced_stage(61, 16, 1, one, 2.5 * one, balanced=True) == (4.0, 0.0)
    assert paced_stage(94, 8, 3, one, one, balanced=False)[0] == 12.0
    assert paced_stage(94, 8, 3, one, one, balanced=True) == (12.0, 0.0)   # 10 + 1 < 12
    assert paced_stage(48, 1, 1, one, 0.1 * one, balanced=True) == (48.0, 1.0)


def test_balanced_pipeline_is_never_slower_than_the_even_split():
    """The same grid under tuned-2025 with and without the balanced layout: the balanced
    step is never longer (its paced GPU holds at most the even split's layers and at
    most its output), and strictly shorter at pp 16 (DeepSeek-V3's output layer and MTP
    module are ~4 layers' worth of GEMMs on a stage of 4)."""
    import dataclasses

    from models.perf.calibration import efficiency_for, profile_of
    from models.perf.search import candidate_grid
    from models.perf.timing import step_components
    from solver.loading import load_catalog, load_workload

    arch = arch_of(load_workload("deepseek-v3"))
    gpu = load_catalog().gpu["h100-sxm"]
    grid = candidate_grid(arch, gpu, 2048, {"ep": 64, "etp": 1, "tp": 1})
    e = efficiency_for(gpu.generation, arch.precision)
    balanced = profile_of(None)
    steps = {}
    for name, prof in (("balanced", balanced),
                       ("even", dataclasses.replace(balanced, balanced_pipeline=False))):
        steps[name] = step_components(
            arch, gpu, NetworkSpec(400.0), grid["tp"], grid["pp"], grid["dp"], grid["cp"],
            grid["ep"], grid["vpp"], grid["mb"], grid["rc"], e.gemm_max, e.half_dim,
            e.precision_factor, etp=grid["etp"], sh=grid["sh"], profile=prof,
            moe_bytes=e.moe_bytes, expert_half_tokens=e.expert_half_tokens,
            elementwise_bytes=e.elementwise_bytes)["step"]
    assert np.all(steps["balanced"] <= steps["even"] * (1 + 1e-12))
    pp16 = grid["pp"] == 16
    assert pp16.any() and np.all(steps["balanced"][pp16] < steps["even"][pp16])
