"""Candidate data: interpolated throughput/goodput against exact evaluations, and
independence of a size's figures from where its ladder ends (sweeps reuse ladders)."""

from __future__ import annotations

import copy

import pytest

from models.design.candidates import build_design_data, links_of
from models.design.evaluate import default_evaluators, exact_throughput
from models.fabric import design_fabric
from solver import load_instance, solve
from solver.loading import INSTANCES_DIR, instance_from_dict, read_document
from solver.prepare import prepare

LLAMA = INSTANCES_DIR / "llama3-16k.toml"


def with_power(mw: float):
    doc = read_document(LLAMA)
    doc["limits"]["it_power_mw"] = mw
    doc["site"]["buildings"][0]["it_power_mw"] = mw
    return prepare(instance_from_dict(doc))


def test_a_sizes_figures_do_not_depend_on_the_ladder_end():
    small, large = with_power(12.0), with_power(30.0)
    a, _ = build_design_data(small, default_evaluators(small))
    b, _ = build_design_data(large, default_evaluators(large))
    by_key = {k.key: k for k in b.candidates}
    assert len(b.candidates) > len(a.candidates)
    for k in a.candidates:
        other = by_key[k.key]
        assert (k.tokens_per_s, k.goodput, k.spare_nodes) == (
            other.tokens_per_s, other.goodput, other.spare_nodes)


def test_throughput_bounds_hold_and_goodput_interpolation_is_close():
    inst = prepare(load_instance(LLAMA))
    ev = default_evaluators(inst)
    data, _ = build_design_data(inst, ev)
    sample = data.candidates[:: max(1, len(data.candidates) // 25)]
    for k in sample:
        parts = inst.config(k.config)
        fabric = design_fabric(parts.fabric_spec(k.nodes + k.spare_nodes))
        perf = exact_throughput(inst, parts, fabric, k.gpus)
        rel = ev.goodput(inst, parts, fabric, k.nodes, k.spare_nodes,
                         links_of(inst, parts, data.configs[k.config].media, fabric))
        assert k.tokens_per_s <= perf.tokens_per_s * (1 + 1e-12)
        assert perf.tokens_per_s <= k.tokens_per_s_upper * (1 + 1e-12)
        if k.exact:
            assert k.tokens_per_s == pytest.approx(perf.tokens_per_s, rel=1e-12)
        assert k.goodput == pytest.approx(rel.goodput, rel=0.01)


def test_solve_reports_exact_next_to_milp_values():
    s = solve(load_instance(LLAMA), place=False).summary
    t = s["throughput"]
    assert t["effective_tokens_per_s"] == pytest.approx(t["tokens_per_s"] * t["goodput"])
    # the chosen candidate was evaluated exactly before the MILP (refine)
    assert t["milp"]["effective_tokens_per_s"] == pytest.approx(
        t["effective_tokens_per_s"], rel=1e-9)
    assert s["objective"]["value"] == t["effective_tokens_per_s"]
    assert t["performance"]["fits"] and t["performance"]["parallelism"]["tp"] <= 8
    assert s["design"]["spare_nodes"] == t["reliability"]["spare_nodes"]


def test_job_mapping_is_the_exhaustive_optimum_on_the_chosen_design():
    from math import prod

    from models.perf.mapping import Level, map_groups_exhaustive

    mapping = solve(load_instance(LLAMA), place=False).summary["design"]["job_mapping"]
    groups = mapping["groups"]
    assert groups["tp"]["crosses"] == []  # tensor parallelism stays on NVLink
    for g in groups.values():
        assert prod(g["factors"].values()) == g["degree"]
    levels = [Level(lv["name"], lv["gpus"], lv["crossing_weight"]) for lv in mapping["levels"]]
    best = map_groups_exhaustive(levels, {d: g["degree"] for d, g in groups.items()},
                                 {d: g["volume"] for d, g in groups.items()})
    assert best is not None and best.cost == mapping["cost"]


def test_failure_rate_multipliers_lower_goodput_and_effective_throughput():
    doc = read_document(LLAMA)
    base = solve(instance_from_dict(doc), place=False).summary
    doc["reliability"] = {"failure_rate_multipliers": {"gpu": 3.0, "optics": 2.0}}
    worse = solve(instance_from_dict(doc), place=False).summary
    r0, r1 = base["throughput"]["reliability"], worse["throughput"]["reliability"]
    assert r1["interruptions_per_day"] > r0["interruptions_per_day"]
    assert worse["throughput"]["goodput"] < base["throughput"]["goodput"]
    assert worse["objective"]["value"] < base["objective"]["value"]


def test_checkpoint_storage_bandwidth_and_recovery_are_decisions():
    doc = read_document(LLAMA)
    doc["choices"]["checkpoint_storage_gbytes_per_s_per_node"] = [0.05, 1.0, 4.0]

    def chosen(recovery: list[str]) -> tuple[float, str, dict]:
        doc["choices"]["recovery"] = recovery
        s = solve(instance_from_dict(doc), place=False).summary
        per_node = s["design"]["checkpoint_storage_gbytes_per_s_per_node"]
        storage = s["design"]["support"]["storage"]
        nodes = s["design"]["nodes"] + s["design"]["spare_nodes"]
        assert storage["write_gbytes_per_s"] == pytest.approx(per_node * nodes)
        assert any(b["category"] == "storage" and b["quantity"] == storage["appliances"]
                   for b in s["bom"])
        return per_node, s["throughput"]["reliability"]["recovery"], s

    # storage checkpoints only: faster storage shortens every checkpoint, the budget is
    # slack, so the fastest tier is bought; its cost and power are in the BOM
    per_node, mode, s = chosen(["storage"])
    assert (per_node, mode) == (4.0, "storage")
    assert s["verified"]
    # in-memory recovery still writes and reads storage (persist and reload at every
    # planned stop, rollback after silent corruption), so storage bandwidth still pays:
    # with a slack budget it buys the fastest tier too, not the cheapest
    per_node, mode, _ = chosen(["storage", "in-memory"])
    assert (per_node, mode) == (4.0, "in-memory")


def test_hot_spares_follow_the_chosen_node_link_medium():
    from models.design.evaluate import ModelGoodput

    doc = read_document(LLAMA)
    doc["choices"]["rail_optimized"] = [True]
    inst = prepare(instance_from_dict(doc))
    data, _ = build_design_data(inst, default_evaluators(inst))
    model = ModelGoodput(inst)
    kinds = set()
    for k in data.candidates[::7]:
        cfg = data.configs[k.config]
        kinds.add(cfg.media[0].kind)
        expected = model.spare_nodes(inst, inst.config(k.config), k.nodes,
                                     cfg.media[0].kind)
        assert k.spare_nodes == expected
    assert kinds  # node-leaf media of rail-optimized designs (optical)


@pytest.mark.parametrize("parts", [1, 2, 3, 50])
def test_candidates_built_in_parts_and_merged_equal_one_build(parts):
    """Sweeps build the shared candidates in parts on several processes
    (solver.sweeps.shared_parts): every configuration lands in exactly one group, and
    the merged parts equal one build, to the order of configurations and candidates."""
    import dataclasses

    from models.design.candidates import config_groups, merge_design_data

    inputs = with_power(30.0)
    whole, _ = build_design_data(inputs, default_evaluators(inputs))
    groups = config_groups(inputs, parts)
    assert 1 <= len(groups) <= parts
    assert sorted(p.key for g in groups for p in g) == sorted(p.key for p in inputs.configs)
    if parts > 1:
        assert len(groups) > 1  # the instance has several GPU system/NIC/layout families
    merged = merge_design_data(inputs, [
        build_design_data(dataclasses.replace(inputs, configs=g),
                          default_evaluators(inputs))[0] for g in reversed(groups)])
    assert merged == whole
    assert list(merged.configs) == list(whole.configs)
    assert [k.key for k in merged.candidates] == [k.key for k in whole.candidates]
    # the parts' limit columns, joined, are the whole's (not laid out again)
    assert merged.columns.candidates is merged.candidates
    assert_same_columns(merged.columns, whole.columns)


def test_joined_columns_of_parts_with_and_without_pods_equal_one_layout():
    """The default campus in 3 parts: one part's configurations have no pods aligned with
    the halls (its per-pod columns have no width), the others' have 3 pods and 6 halls;
    joined, the columns equal one layout of all candidates."""
    import dataclasses

    from models.design.candidates import config_groups, merge_design_data
    from solver.loading import DEFAULT_INSTANCE

    inputs = prepare(load_instance(DEFAULT_INSTANCE))
    whole, _ = build_design_data(inputs, default_evaluators(inputs))
    parts = [build_design_data(dataclasses.replace(inputs, configs=g),
                               default_evaluators(inputs))[0]
             for g in config_groups(inputs, 3)]
    assert len({p.columns.pod_nodes.shape[1] for p in parts}) > 1
    assert_same_columns(merge_design_data(inputs, parts).columns, whole.columns)


def assert_same_columns(mine, theirs):
    """Two LimitColumns hold the same arrays (values, shapes and types)."""
    import dataclasses

    import numpy as np

    for f in dataclasses.fields(mine):
        a, b = getattr(mine, f.name), getattr(theirs, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, f.name
            np.testing.assert_array_equal(a, b, err_msg=f.name)
    assert list(mine.block_slots) == list(theirs.block_slots)
    for name, slots in mine.block_slots.items():
        assert slots.dtype == theirs.block_slots[name].dtype
        np.testing.assert_array_equal(slots, theirs.block_slots[name], err_msg=name)


def test_the_solves_second_process_builds_the_same_candidates_and_notes():
    """solver.api.candidates with 2 processes (the CLI's solve): a forked process builds
    one group of configurations; the data after refine and the notes equal one build."""
    from solver.api import candidates

    doc = read_document(INSTANCES_DIR / "tiny" / "power-bound.toml")
    doc["choices"] |= {"fabrics": [{"switch": "quantum2-qm9700"}, {"switch": "tomahawk5"},
                                   {"switch": "spectrum4-sn5600"}],
                       "rail_optimized": [True, False]}
    inputs = prepare(instance_from_dict(doc))
    one = candidates(inputs, default_evaluators(inputs), processes=1)
    two = candidates(inputs, default_evaluators(inputs), processes=2)
    assert two == one and len(one[0].configs) > 2
    assert [k.key for k in two[0].candidates] == [k.key for k in one[0].candidates]


def test_refine_evaluations_in_two_processes_equal_one_by_one():
    """solver.api.exact_in_two (refine's rounds in the CLI's solve) splits candidates by
    GPU count between this process and a forked one; the exact candidates come back in
    order and equal exact_candidate's one by one."""
    from models.design.candidates import exact_candidate
    from solver.api import exact_in_two

    inputs = prepare(load_instance(INSTANCES_DIR / "tiny" / "power-bound.toml"))
    data, _ = build_design_data(inputs, default_evaluators(inputs))
    targets = list(data.candidates[::-1])  # reversed: the answer keeps their order
    assert len({k.gpus for k in targets}) >= 2  # both processes get some
    two = exact_in_two(inputs, default_evaluators(inputs))(data, targets)
    one = [exact_candidate(inputs, default_evaluators(inputs), data, k) for k in targets]
    assert two == one and all(k.exact for k in two)
    assert [k.key for k in two] == [k.key for k in targets]


def test_throughput_points_cover_every_feasible_set_the_build_reads():
    """solver.api.feasible_in_two computes the perf model's feasible sets before the
    build at models.design.candidates.throughput_points: every set the build then
    reads is among them (else the build computes it again, in both processes)."""
    from models.design.candidates import throughput_points
    from models.design.evaluate import InterpolatedThroughput, grid_bracket

    doc = read_document(INSTANCES_DIR / "tiny" / "power-bound.toml")
    doc["choices"] |= {"fabrics": [{"switch": "quantum2-qm9700"}, {"switch": "tomahawk5"}],
                       "rail_optimized": [True, False]}
    doc.setdefault("objective", {})["performance"] = "model"
    doc["limits"] |= {"it_power_mw": 4.0, "budget_usd": 4e9}  # sizes between grid points
    doc["site"]["buildings"][0]["it_power_mw"] = 8.0
    inputs = prepare(instance_from_dict(doc))
    evaluators = default_evaluators(inputs)
    throughput = evaluators.throughput
    assert isinstance(throughput, InterpolatedThroughput)
    read = set()
    computed = throughput.feasible

    def feasible(inputs, system, gpus):
        read.add((system.id, gpus))
        return computed(inputs, system, gpus)
    throughput.feasible = feasible
    data, _ = build_design_data(inputs, evaluators)
    points = {(system.id, gpus) for system, gpus in throughput_points(inputs)}
    # a lower grid point is read only where the upper one's configuration needs more GPUs
    # than the size has (InterpolatedThroughput); every upper one is read
    assert len(read) > 10 and read <= points
    uppers = {(inputs.config(k.config).gpu.id,
               grid_bracket(inputs.config(k.config).gpu.gpus_per_node, k.gpus)[1])
              for k in data.candidates}
    assert uppers <= read


def test_sizes_below_min_gpus_are_not_built_and_the_others_are_unchanged():
    """limits.min_gpus: of each media combination's sizes below it only the largest is
    built (the chosen size's next smaller, for the report's requirement rows); every size
    at or above it is the one the whole ladder builds, so the buildable designs are too."""
    from models.design.candidates import with_limits
    from models.design.prune import buildable_index

    whole = with_power(12.0)
    full, _ = build_design_data(whole, default_evaluators(whole))
    sizes = sorted({k.gpus for k in full.candidates})
    least = sizes[len(sizes) // 2] + 1  # between two sizes: the cut is not at a rung
    doc = read_document(LLAMA)
    doc["limits"]["it_power_mw"] = 12.0
    doc["site"]["buildings"][0]["it_power_mw"] = 12.0
    doc["limits"]["min_gpus"] = least
    inputs = prepare(instance_from_dict(doc))
    cut, _ = build_design_data(inputs, default_evaluators(inputs))
    expected = set()
    for config in full.configs:
        own = [k for k in full.candidates if k.config == config]
        below = [k for k in own if k.gpus < least]
        expected |= {k.key for k in own if k.gpus >= least}
        expected |= {max(below, key=lambda k: k.nodes).key} if below else set()
    assert len(cut.candidates) < len(full.candidates)
    assert sorted(k.key for k in cut.candidates) == sorted(expected)
    by_key = {k.key: k for k in full.candidates}
    assert all(k == by_key[k.key] for k in cut.candidates)
    on_full = with_limits(full, inputs)
    assert ([on_full.candidates[i].key for i in buildable_index(on_full)]
            == [cut.candidates[i].key for i in buildable_index(cut)])
    assert buildable_index(cut).size


def test_the_budget_bounds_the_size_ladders_whatever_the_objective():
    """Was: only max_effective_throughput bounded its ladders by the budget; a min-capex
    instance whose power limit was typed in kW (2 MW -> 2,000 MW) built ladders up to
    that power, ran to its time limit and took gigabytes for the same design."""
    from models.design.candidates import max_nodes

    doc = read_document(INSTANCES_DIR / "tiny" / "min-capex.toml")
    assert doc["objective"]["kind"] != "max_effective_throughput"
    big = copy.deepcopy(doc)
    big["limits"]["it_power_mw"] = 2000.0
    for building in big["site"]["buildings"]:
        building["it_power_mw"] = 2000.0
    inputs = prepare(instance_from_dict(big))
    for p in inputs.configs:
        assert max_nodes(inputs, p) * p.gpu.node_price_usd <= inputs.limits.budget_usd
    small, large = solve(instance_from_dict(doc)), solve(instance_from_dict(big))
    assert large.status == small.status == "optimal"
    assert large.design.candidate.key == small.design.candidate.key
