"""`clusterplan place design.json`: the file is validated (bounds named, exit 3), must
belong to the instance, and what follows from the design's decisions is re-derived from
the instance, never trusted (issue 12 B, "place design.json trusts its file")."""

from __future__ import annotations

import copy
import json

import pytest

from solver import load_instance, solve
from solver.api import place
from solver.design_file import placeable_design, read_design_file
from solver.errors import InvalidInstance
from solver.loading import DEFAULT_INSTANCE, INSTANCES_DIR
from solver.placement import design_to_place
from solver.schema.design_file import DesignFile

TINY = INSTANCES_DIR / "tiny" / "power-bound.toml"


@pytest.fixture(scope="module")
def solved():
    """The tiny power-bound instance solved without placement, and its design.json."""
    result = solve(load_instance(TINY), place=False)
    assert result.status.has_solution
    return result, json.loads(json.dumps(result.to_dict()))


def edited(doc: dict, path: str, value) -> dict:
    """`doc` with the dotted `path` set to `value` (a missing last key is added)."""
    out = copy.deepcopy(doc)
    *head, last = path.split(".")
    node = out
    for key in head:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return out


def refusal(result, doc: dict) -> str:
    """The InvalidInstance message placing `doc` on the solved instance raises."""
    with pytest.raises(InvalidInstance) as err:
        placeable_design(result.inputs, DesignFile.model_validate(doc))
    assert err.value.exit_code == 3
    return str(err.value)


def test_a_design_json_re_derives_what_the_solve_placed(solved):
    """Re-derived from the instance and the decisions: the same design placement gets
    inside `solve` (spares, fabric, TCO rate, failure figures)."""
    result, doc = solved
    assert placeable_design(result.inputs, DesignFile.model_validate(doc)) == design_to_place(
        result.design, result.inputs)


def test_a_placed_design_json_places_again_from_its_design_stage_media(cli, tmp_path):
    """A placed solve's design.json holds the placed media in ``design.media`` (several
    media per link class by length) and the designed ones in ``design_estimate.media``;
    `place` reads the designed ones, and finds the shipped instance by the file's name."""
    two = INSTANCES_DIR / "tiny" / "space-bound.toml"
    placed = solve(load_instance(two), place=True)
    doc = json.loads(json.dumps(placed.to_dict()))
    assert doc["design_estimate"]["media"]
    path = tmp_path / "design.json"
    path.write_text(json.dumps(doc))
    run = cli("place", str(path), "--out", str(tmp_path / "out"), "--json")
    assert run.exit_code == 0, run.output
    again = placeable_design(placed.inputs, DesignFile.model_validate(doc))
    assert again == design_to_place(placed.design, placed.inputs)


def test_negative_nodes_are_refused_naming_the_field_and_bound(solved, cli, tmp_path):
    """Was: `design.nodes = -64` placed 23 nodes and said verified: true."""
    _, doc = solved
    path = tmp_path / "design.json"
    path.write_text(json.dumps(edited(doc, "design.nodes", -64)))
    out = cli("place", path, "--instance", TINY, "--out", tmp_path / "out", "--json")
    assert out.exit_code == 3, out.output
    assert "design.nodes: Input should be greater than or equal to 1" in out.output
    assert out.stdout == "" and not (tmp_path / "out").exists()


def test_a_forged_tco_never_changes_the_placement(solved):
    """Was: `cost.tco_usd = -1e15` flipped cables from copper to AOC. Cost and throughput
    sections are not read: the design to place (all placement sees) is unchanged."""
    result, doc = solved
    honest = placeable_design(result.inputs, DesignFile.model_validate(doc))
    for path, value in [("cost.tco_usd", -1e15), ("cost.tco_years", 0),
                        ("throughput.reliability.restart_s", -5.0),
                        ("throughput.reliability.mtbf_hours", 1e-9)]:
        forged = placeable_design(result.inputs, DesignFile.model_validate(
            edited(doc, path, value)))
        assert forged == honest, path


def test_a_design_from_another_instance_is_refused(solved, cli, tmp_path):
    """Was: a design from another instance was placed on --instance h100-100k with exit 0."""
    _, doc = solved
    path = tmp_path / "design.json"
    path.write_text(json.dumps(doc))
    out = cli("place", path, "--instance", DEFAULT_INSTANCE, "--out", tmp_path / "out")
    assert out.exit_code == 3, out.output
    assert "solved on 'tiny-power-bound'" in out.output and "not on 'h100-100k'" in out.output
    renamed = edited(doc, "instance", "h100-100k")  # the name alone does not pass
    path.write_text(json.dumps(renamed))
    out = cli("place", path, "--out", tmp_path / "out")
    assert out.exit_code == 3 and "sha256" in out.output, out.output


@pytest.mark.parametrize(("path", "value", "named"), [
    ("design.nodes", "64", "design.nodes"),
    ("design.nodes", 1.5, "design.nodes"),
    ("design.nodes", 0, "design.nodes"),
    ("design.nodes", 10**12, "design.nodes"),
    ("design.nodes", None, "design.nodes"),
    ("design.spare_nodes", -1, "design.spare_nodes"),
    ("design.gpus", 0, "design.gpus"),
    ("design.tiers", 0, "design.tiers"),
    ("design.tiers", 99, "design.tiers"),
    ("design.pods", 0, "design.pods"),
    ("design.oversubscription", 0, "design.oversubscription"),
    ("design.oversubscription", 1e9, "design.oversubscription"),
    ("design.oversubscription_requested", 0.5, "design.oversubscription_requested"),
    ("design.rail_optimized", "yes", "design.rail_optimized"),
    ("design.rail_optimized", 1, "design.rail_optimized"),
    ("design.nic_attachment", "quad", "design.nic_attachment"),
    ("design.recovery", "prayer", "design.recovery"),
    ("design.gpu", "../../etc", "design.gpu"),
    ("design.switches_per_tier", [], "design.switches_per_tier"),
    ("design.switches_per_tier", [-1], "design.switches_per_tier.0"),
    ("design.links_per_tier", "many", "design.links_per_tier"),
    ("design.media", [], "design.media"),
    ("design.media.0.length_m", -3, "design.media.0.length_m"),
    ("design.media.0.links", -3, "design.media.0.links"),
    ("design", [], "design"),
    ("instance", "../../../tmp/x", "instance"),
    ("instance_sha256", "abc", "instance_sha256"),
])
def test_out_of_bounds_fields_are_refused_naming_them(solved, path, value, named):
    _, doc = solved
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        DesignFile.model_validate(edited(doc, path, value))
    assert named in {".".join(str(p) for p in e["loc"]) for e in err.value.errors()}


@pytest.mark.parametrize(("path", "named"), [
    ("design.spare_nodes", "design.spare_nodes"),
    ("design.gpus", "design.gpus"),
    ("design.tiers", "design.tiers"),
])
def test_derived_counts_that_disagree_are_refused(solved, path, named):
    result, doc = solved
    *_, key = path.split(".")
    message = refusal(result, edited(doc, path, doc["design"][key] + 1))
    assert named in message and "differs" in message


def test_edited_fabric_counts_and_media_are_refused(solved):
    result, doc = solved
    d = doc["design"]
    assert "design.switches_per_tier" in refusal(result, edited(
        doc, "design.switches_per_tier", [n + 1 for n in d["switches_per_tier"]]))
    assert "design.links_per_tier" in refusal(result, edited(
        doc, "design.links_per_tier", [n * 2 for n in d["links_per_tier"]]))
    assert "design.media.0.links" in refusal(result, edited(
        doc, "design.media.0.links", d["media"][0]["links"] + 1))
    assert "not in the instance's catalog" in refusal(result, edited(
        doc, "design.media.0.medium", "no-such-medium"))
    assert "no configuration" in refusal(result, edited(doc, "design.switch", "tomahawk5"))
    assert "design.nodes" in refusal(result, edited(doc, "design.nodes", 10**6))


@pytest.mark.parametrize("text", [
    '{"instance": "power-bound", "design": {"nodes": NaN}}',
    "[" * 100_000,
    '{"instance": "power-bound", "design": ',
    "[1, 2]",
])
def test_malformed_design_files_exit_3(cli, tmp_path, text):
    path = tmp_path / "design.json"
    path.write_text(text)
    out = cli("place", path, "--instance", TINY, "--out", tmp_path / "out")
    assert out.exit_code == 3, out.output


def test_a_design_json_places_through_the_cli(solved, cli, tmp_path):
    result, doc = solved
    path = tmp_path / "design.json"
    path.write_text(json.dumps(doc))
    out = cli("place", path, "--instance", TINY, "--out", tmp_path / "out", "--json",
              "--time-limit", "10")
    assert out.exit_code == 0, out.output
    placed = json.loads(out.stdout)
    direct = place(result.inputs, read_design_file(path))
    assert placed["verified"] is True and placed["racks_total"] == direct.summary["racks_total"]
    for name in ("placement.csv", "cables.csv", "floorplan.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0


@pytest.mark.parametrize(("path", "value", "named"), [
    ("design.rail_optimized", "yes", "design.rail_optimized"),
    ("design.switches_per_tier", [1, 2], "design.switches_per_tier"),
    ("design.spare_nodes", 10**5, "design.spare_nodes"),
    ("instance_sha256", "0" * 64, "sha256"),
    ("design", None, "design"),
    ("instance", None, "instance"),
])
def test_edits_exit_3_through_the_cli(solved, cli, tmp_path, path, value, named):
    """Was: most edits of design.json gave exit 1 (internal error)."""
    _, doc = solved
    file = tmp_path / "design.json"
    file.write_text(json.dumps(edited(doc, path, value)))
    out = cli("place", file, "--instance", TINY, "--out", tmp_path / "out")
    assert out.exit_code == 3 and named in out.output, out.output


@pytest.mark.parametrize(("path", "value", "named"), [
    ("design_estimate.media.0.medium", "no-such-medium", "design_estimate.media.0.medium: "),
    ("design_estimate.media.0.medium", "dac-200g", "design_estimate.media.0.medium: "),
    ("design_estimate.media.1.links", 7, "design_estimate.media.1.links: "),
    ("design_estimate.media.0.link_class", "node-spine", "design_estimate.media: "),
    ("design_estimate.media.0.length_m", -1.0, "design_estimate.media.0.length_m"),
    ("design_estimate.media.0.links", 10**12, "design_estimate.media.0.links"),
])
def test_a_placed_files_designed_media_are_checked_naming_their_field(
        solved, cli, tmp_path, path, value, named):
    """`place` reads a placed design.json's designed media from ``design_estimate.media``;
    each is checked against the catalog and the fabric as ``design.media`` is, and a
    refusal names the field it came from (was: named ``design.media``)."""
    _, doc = solved
    doc = edited(doc, "design_estimate", {"media": copy.deepcopy(doc["design"]["media"])})
    file = tmp_path / "design.json"
    file.write_text(json.dumps(edited(doc, path, value)))
    out = cli("place", file, "--instance", TINY, "--out", tmp_path / "out")
    assert out.exit_code == 3 and named in out.output, out.output
    assert not (tmp_path / "out").exists()


def test_a_design_json_keeps_its_facility_decisions():
    """With the facility built from parts, the file's redundancy and cooling pick the
    configuration, so placement lays the racks out at the designed cooling's rack power
    and prices the same design (re-derived: same cost rate)."""
    from solver.loading import instance_from_dict, read_document

    doc = read_document(INSTANCES_DIR / "tiny" / "min-capex.toml")
    doc["catalog"]["facility"].pop("facility_cost_mode")
    doc["catalog"]["facility"].update(
        cooling_max_rack_kw={"air": 25.0, "rdhx": 75.0, "dlc": 140.0},
        white_space_usd_per_m2=100.0)
    doc["site"]["buildings"][0]["halls"] = [
        {"name": "hall-1", "rows": 2, "positions_per_row": 12, "rack_power_kw": 25.0,
         "power_kw": 1900.0}]
    inst = instance_from_dict(doc)
    result = solve(inst, place=False)
    summary = json.loads(json.dumps(result.to_dict()))
    assert summary["design"]["facility"]["cooling"] == "rdhx"
    from_file = placeable_design(result.inputs, DesignFile.model_validate(summary))
    assert from_file == design_to_place(result.design, result.inputs)
    assert from_file.cooling == "rdhx"
    other = edited(summary, "design.facility.cooling", "air")
    assert placeable_design(result.inputs, DesignFile.model_validate(other)).cooling == "air"


@pytest.fixture(scope="module")
def wired_below_one():
    """tiny/two-buildings (3 MW buildings, 6 MW, at most 512 GPUs) in 3 pods at 1:1 on
    QM9700, middle-of-rack, solved without placement, and its design.json."""
    from solver.loading import instance_from_dict, read_document

    doc = read_document(INSTANCES_DIR / "tiny" / "two-buildings.toml")
    doc["limits"].update(max_gpus=512, it_power_mw=6.0)
    doc["site"]["buildings"] = [{"name": "hall-a", "it_power_mw": 3.0},
                                {"name": "hall-b", "it_power_mw": 3.0}]
    doc["choices"]["fabrics"] = [{"switch": "quantum2-qm9700", "pods": 3,
                                  "oversubscription": 1.0}]
    result = solve(instance_from_dict(doc), place=False)
    assert result.status.has_solution
    return doc, result, json.loads(json.dumps(result.to_dict()))


def test_a_design_wired_below_one_between_pods_places_again(wired_below_one, cli, tmp_path):
    """512 GPUs = 64 nodes in 3 pods of ⌈64/3⌉ = 22 nodes: 3 x 22 x 8 = 528 endpoints, and
    the fabric's 600 links leave the pods (uplinks round up), so they are wired at
    528/600 = 0.88:1, below the 1:1 asked for: effectively non-blocking. The design file
    reports 0.88 and places again with the fabric it asked for. (Was: `place` refused
    its own solve's file, exit 3, "design.oversubscription: ... greater than or equal
    to 1".)"""
    doc, result, summary = wired_below_one
    design = summary["design"]
    assert (design["gpus"], design["pods"], design["links_per_tier"][-1]) == (512, 3, 600)
    assert (design["oversubscription"], design["oversubscription_requested"]) == (
        528 / 600, 1.0)
    assert placeable_design(result.inputs, DesignFile.model_validate(summary)) == (
        design_to_place(result.design, result.inputs))
    instance, path = tmp_path / "w2.json", tmp_path / "design.json"
    instance.write_text(json.dumps(doc))
    path.write_text(json.dumps(summary))
    run = cli("place", path, "--instance", instance, "--out", tmp_path / "out", "--json")
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["design"]["links_per_tier"] == design["links_per_tier"]


@pytest.mark.parametrize("value", [2.0, True, 1.0])
def test_a_wired_ratio_that_contradicts_the_requested_one_is_refused(wired_below_one,
                                                                       value):
    """The requested ratio (1:1) decides the fabric; an ``oversubscription`` other than
    the 0.88 it wires is refused naming the field (was: silently ignored)."""
    _, result, summary = wired_below_one
    message = refusal(result, edited(summary, "design.oversubscription", value))
    assert "design.oversubscription: " in message and "differs from 0.88" in message


def test_without_the_requested_ratio_oversubscription_is_the_one_asked_for(wired_below_one):
    """A file without ``oversubscription_requested`` (written before the wired ratio was
    reported) has the requested ratio in ``oversubscription``, so at least 1."""
    from pydantic import ValidationError

    _, _, summary = wired_below_one
    old = copy.deepcopy(summary)
    del old["design"]["oversubscription_requested"]
    with pytest.raises(ValidationError, match="design.oversubscription 0.88 is below 1"):
        DesignFile.model_validate(old)


def test_a_placed_file_with_more_media_lines_than_tiers_is_read(solved):
    """Placement splits a link class over the media its routed lengths call for, so a
    placed design.json's ``design.media`` may hold more lines than MAX_TIERS (was: exit 3,
    "design.media: List should have at most 6 items"); the decisions are its
    ``design_estimate.media``, one per class."""
    result, doc = solved
    doc = edited(doc, "design_estimate", {"media": copy.deepcopy(doc["design"]["media"])})
    doc = edited(doc, "design.media", doc["design"]["media"] * 7)
    assert len(doc["design"]["media"]) > 6
    assert placeable_design(result.inputs, DesignFile.model_validate(doc)) == design_to_place(
        result.design, result.inputs)


def test_the_configuration_has_the_designs_tiers(solved):
    """Two fabric choices differing only in ``tiers``: the design's file picks the one
    whose re-derived fabric has its counts (was: the first, exit 3 "design.tiers: 3
    differs from 4"); with only the other choice offered it is refused naming tiers."""
    from solver.loading import instance_from_dict, read_document
    from solver.prepare import prepare

    _, doc = solved
    tiers = doc["design"]["tiers"]
    inst = read_document(TINY)
    fabric = inst["choices"]["fabrics"][0]
    for fabrics in ([fabric | {"tiers": tiers + 1}, fabric], [fabric | {"tiers": tiers + 1}]):
        inst["choices"]["fabrics"] = fabrics
        inputs = prepare(instance_from_dict(inst))
        file = DesignFile.model_validate(edited(doc, "instance_sha256", inputs.sha256))
        if len(fabrics) == 2:
            assert placeable_design(inputs, file).tiers == tiers
        else:
            with pytest.raises(InvalidInstance, match=f"design.tiers: {tiers} differs"):
                placeable_design(inputs, file)
