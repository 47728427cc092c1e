"""Infeasible instances: status 'infeasible' and a diagnosis in the instance's own terms
(which limit, and the value the requirements need), from the elastic re-solve.

Needed values are worked by hand (see the header of instances/tiny/power-bound.toml).
The shipped infeasible-power: the smallest design with >= 512 GPUs is 64 nodes on
quantum2-qm9700, critical IT 708,464.5 W. The variants of power-bound below are on the
per-node support shortcut the brute force re-derives (brute_force.PER_NODE_SUPPORT): there
the same design draws 1.07 x 691,822.4 = 740,249.968 W and costs $31,987,924.63 + the
cold-spare pool's $405,100 (the header's table) = $32,393,024.63, 5-year TCO
$35,275,611.61 + $405,100 = $35,680,711.61; one scalable unit (32 nodes, 256 GPUs) draws
1.07 x 332,800 = 356,096 W without its network and takes 8 racks, plus 1 network rack
for its 12 switches.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from brute_force import brute_force, per_node_support

from solver import load_instance, solve
from solver.loading import instance_from_dict, read_document

TINY = Path(__file__).resolve().parents[1] / "instances" / "tiny"
BASE = per_node_support(read_document(TINY / "power-bound.toml"))


def variant(limits=None, objective=None, buildings=None, choices=None):
    d = {**BASE, "limits": {**BASE["limits"], **(limits or {})},
         "objective": {**BASE["objective"], **(objective or {})},
         "choices": {**BASE["choices"], **(choices or {})}}
    if buildings is not None:
        d["site"] = {**BASE["site"], "buildings": buildings}
    return instance_from_dict(d)


def diagnosis(inst) -> list[str]:
    result = solve(inst, place=False)
    assert result.status == result.summary["status"] == "infeasible"
    assert result.design is None and result.summary["verified"] is False
    if inst.catalog.facility.support_networks == "per-node":  # what the brute force prices
        assert brute_force(inst) is None  # the enumeration agrees: nothing is feasible
    return result.summary["diagnosis"]


def needed(message: str) -> float:
    """The value after 'needs >= ' in a diagnosis message."""
    match = re.search(r"needs >= ([\d,.]+)", message)
    assert match, message
    return float(match.group(1).replace(",", ""))


def only(messages: list[str], fragment: str) -> str:
    hits = [m for m in messages if fragment in m]
    assert len(hits) == 1, messages
    return hits[0]


def test_power_too_small_for_min_gpus_names_the_limit():
    msgs = diagnosis(load_instance(TINY / "infeasible-power.toml"))
    assert len(msgs) == 1
    msg = only(msgs, "limits.it_power_mw")
    assert "512 GPUs" in msg and "0.5" in msg
    assert needed(msg) == pytest.approx(0.7084645, abs=0.05)


def test_needed_power_is_never_rounded_below_the_need():
    msg = only(diagnosis(load_instance(TINY / "infeasible-power.toml")), "limits.it_power_mw")
    assert needed(msg) >= 0.7084645


def test_budget_too_small_for_min_gpus():
    msgs = diagnosis(variant(limits={"min_gpus": 512, "budget_usd": 20e6}))
    msg = only(msgs, "limits.budget_usd")
    assert len(msgs) == 1 and "(capex)" in msg
    assert 32_393_024.63 <= needed(msg) <= 32_393_024.63 + 1


def test_tco_budget_basis_reports_the_tco_needed():
    msgs = diagnosis(variant(limits={"min_gpus": 512, "budget_usd": 20e6,
                                     "budget_basis": "tco"}))
    msg = only(msgs, "limits.budget_usd")
    assert "(tco)" in msg
    assert 35_680_711.61 <= needed(msg) <= 35_680_711.61 + 1


def test_power_and_budget_both_short_are_both_named():
    msgs = diagnosis(variant(limits={"min_gpus": 512, "budget_usd": 20e6, "it_power_mw": 0.5}))
    assert len(msgs) == 2
    assert needed(only(msgs, "limits.it_power_mw")) == pytest.approx(0.74, abs=0.05)
    assert needed(only(msgs, "limits.budget_usd")) == pytest.approx(32_393_024.63, abs=1)


def test_building_too_small_for_one_scalable_unit():
    msgs = diagnosis(variant(limits={"min_gpus": 256},
                             buildings=[{"name": "east", "it_power_mw": 0.3},
                                        {"name": "west", "it_power_mw": 0.3}]))
    assert len(msgs) == 1
    msg = msgs[0]
    assert re.search(r"site\.buildings\[(east|west)\]\.it_power_mw 0\.3", msg), msg
    # the SU's 356,096 W must sit in one building; its network can go to the other
    assert 0.356096 <= needed(msg) <= 0.4 + 1e-9


def test_space_too_small_for_one_scalable_unit():
    msgs = diagnosis(variant(limits={"min_gpus": 256},
                             buildings=[{"name": "hall", "it_power_mw": 2.0, "max_racks": 5}]))
    msg = only(msgs, "site.buildings[hall].max_racks 5")
    assert len(msgs) == 1 and needed(msg) == 9  # 8 compute racks + 1 network rack


def test_throughput_requirement_under_too_little_power():
    msgs = diagnosis(variant(limits={"it_power_mw": 0.5},
                             objective={"kind": "min_capex", "required_tokens_per_s": 1e9}))
    msg = only(msgs, "limits.it_power_mw")
    assert "1,000,000,000 effective tokens/s" in msg
    assert needed(msg) == pytest.approx(0.74, abs=0.05)  # 1e9 / 2,968,200 -> 512 GPUs


def test_max_gpus_below_the_throughput_requirement_is_named():
    msgs = diagnosis(variant(limits={"max_gpus": 256},
                             objective={"kind": "min_capex", "required_tokens_per_s": 1e9}))
    assert any("max_gpus" in m for m in msgs), msgs


def test_no_compatible_choice_says_why():
    msgs = diagnosis(variant(choices={"fabrics": [{"switch": "quantum-qm8700"}]}))
    assert len(msgs) == 1
    assert "quantum-qm8700" in msgs[0] and "no 400G ports" in msgs[0]


def test_a_feasible_instance_has_no_diagnosis():
    result = solve(load_instance(TINY / "power-bound.toml"), place=False)
    assert result.status == "optimal" and "diagnosis" not in result.summary


def test_a_budget_below_one_scalable_unit_still_names_the_budget():
    msgs = diagnosis(variant(limits={"budget_usd": 1e5}))
    assert any(m.startswith("limits.budget_usd") for m in msgs), msgs


def gb200_site(rack_power_kw: float) -> dict:
    """GB200 NVL72 (rail, DLC) on one 8 MW building without halls: its generated halls
    take racks of rack_power_kw (air-cooled up to 50 kW, liquid above)."""
    return {"schema_version": 1, "name": "gb-no-halls",
            "workload": {"name": "tiny dense", "layers": 1, "hidden": 1000, "heads": 1,
                         "vocab": 4000, "seq_len": 2000, "global_batch": 64},
            "limits": {"budget_usd": 5e9, "it_power_mw": 8.0},
            "site": {"rack_power_kw": rack_power_kw,
                     "buildings": [{"name": "hall", "it_power_mw": 8.0}]},
            "choices": {"gpus": ["gb200-nvl72"], "fabrics": [{"switch": "quantum2-qm9700"}],
                        "rail_optimized": [True], "cooling": ["dlc"]},
            "objective": {"kind": "max_effective_throughput", "performance": "assumed_mfu",
                          "assumed_mfu": 0.4, "reliability_model": "overhead",
                          "overhead_fraction": 0.1},
            "catalog": {"facility": {"facility_cost_mode": "per-mw"}}}


def test_racks_below_one_gb200_node_name_rack_power_kw(cli, tmp_path):
    """A GB200 NVL72 node is its own rack: 72 x 1,200 W GPUs + 31,800 W + 72 x 25 W
    ConnectX-7 = 120,000 W, liquid-cooled. At 45 kW a rack (air-cooled halls) no hall
    takes one, so no design exists: exit 4 naming site.rack_power_kw. (Was: exit 1,
    ZeroDivisionError in the building check, the block power of no hall being 0.)"""
    import json

    msgs = solve(instance_from_dict(gb200_site(45.0)), place=False).summary["diagnosis"]
    msg = only(msgs, "site.rack_power_kw")
    assert "gb200-nvl72 node, which needs 120.0 kW a rack and a liquid-cooled hall" in msg
    assert "at most 45 kW" in msg
    path = tmp_path / "gb.json"
    path.write_text(json.dumps(gb200_site(45.0)))
    run = cli("solve", path, "--no-place")
    assert run.exit_code == 4, run.output
    assert "site.rack_power_kw" in run.output
    # at 140 kW a rack takes a node: no such note (the halls' rows are what lacks there)
    msgs = solve(instance_from_dict(gb200_site(140.0)), place=False).summary["diagnosis"]
    assert not any("rack_power_kw" in m for m in msgs), msgs


REVIEWED = Path(__file__).resolve().parent / "data" / "review"


def test_min_gpus_with_no_rack_for_any_node_leads_with_rack_power(cli):
    """tests/data/review/gb200-min-gpus-on-45kw-racks.toml: GB200 NVL72 (a 120 kW rack of
    its own) on 45 kW racks, with limits.min_gpus 144. No hall takes a node, so no size
    exists: the diagnosis blamed min_gpus ("limits.min_gpus 144 is beyond every fabric");
    it now leads with the rack power, exit 4. Requirements far beyond the limits
    (min_gpus 1,000,000, the far_beyond_limits path) do not take the lead either."""
    run = cli("solve", REVIEWED / "gb200-min-gpus-on-45kw-racks.toml", "--no-place")
    assert run.exit_code == 4, run.output
    text = " ".join(run.output.split())
    assert "no hall takes a node of any configuration in `choices`" in text
    assert "site.rack_power_kw (or the halls' rack_power_kw) lets a rack draw at most 45 kW" \
        in text
    assert "min_gpus" not in text
    far = gb200_site(45.0)
    far["limits"]["min_gpus"] = 1_000_000
    msgs = solve(instance_from_dict(far), place=False).summary["diagnosis"]
    assert len(msgs) == 1 and msgs[0].startswith("no hall takes a node"), msgs


def test_a_site_availability_out_of_reach_is_named():
    """Review 5's c9: redundancy N on a facility built from parts reaches a site
    availability of 0.996710 (the best chain in `choices`), below the 0.9998 target. No
    other requirement is set, so the diagnosis read "no single design meets even the
    smallest design together"; it now names reliability.site_availability_target."""
    d = {**BASE, "reliability": {"site_availability_target": 0.9998},
         "choices": {**BASE["choices"], "redundancy": ["N"], "cooling": ["air"]},
         "catalog": {**BASE["catalog"], "facility": {
             **BASE["catalog"]["facility"], "facility_cost_mode": "parts"}}}
    msgs = solve(instance_from_dict(d), place=False).summary["diagnosis"]
    msg = only(msgs, "reliability.site_availability_target 0.9998")
    assert "the best reaches 0.996710" in msg and "choices.redundancy" in msg
    assert not any("together" in m or "even the smallest" in m for m in msgs)



def test_a_requirement_and_the_best_reached_read_in_the_stated_order():
    """tests/data/review/site-availability-target-of-nine-nines.json (review 6, defect
    6): a target of 0.999999999 was printed with :g as "1 is above ... the best reaches
    0.999950". Both now print at the same decimals, enough to show the target as given
    and to tell the two apart, so the stated relation reads true."""
    from solver.diagnose import above, given

    msgs = solve(load_instance(REVIEWED / "site-availability-target-of-nine-nines.json"),
                 place=False).summary["diagnosis"]
    msg = only(msgs, "reliability.site_availability_target 0.999999999 is above")
    assert "the best reaches 0.999950000;" in msg
    need, best = re.search(r"target ([\d.]+) is above .* reaches ([\d.]+);", msg).groups()
    assert len(need) == len(best) and float(need) > float(best)
    # rounding to the first decimals would make them equal (0.999950 and 0.999950), or
    # turn the order round (1.000 above 1.000): more decimals are printed
    assert above(0.99995, 0.9999499, 6) == ("0.9999500", "0.9999499")
    assert above(0.9996, 0.99955, 3) == ("0.99960", "0.99955")
    assert above(0.95, 0.9, 3) == ("0.950", "0.900")
    assert (given(0.999999999), given(0.749), given(2.0)) == ("0.999999999", "0.749", "2")


@pytest.mark.parametrize("name, budget, need", [("min-capex", 3e6, 2000e6),
                                               ("min-tco", 5e6, 3000e6)])
def test_a_cost_objectives_budget_is_named_when_it_cannot_buy_the_requirement(
        name, budget, need):
    """Was (for a stop): with the budget bounding a cost objective's ladder in the
    diagnosis too, the requirement was called out of reach (the best design reaching
    1.5e9 tokens/s) where the budget was what stood in the way."""
    doc = read_document(Path("instances/tiny") / f"{name}.toml")
    doc["limits"]["budget_usd"] = budget
    doc["objective"]["required_tokens_per_s"] = need
    result = solve(instance_from_dict(doc))
    assert result.status == "infeasible"
    assert any(d.startswith(f"limits.budget_usd {budget:,.0f} cannot buy")
               for d in result.summary["diagnosis"]), result.summary["diagnosis"]
