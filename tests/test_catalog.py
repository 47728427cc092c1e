"""The shipped catalog: it loads, every figure is sourced, and its figures obey physics.

The sanity checks are deliberately coarse (orderings and ratios that hold for any
sensible catalog), so re-sourcing a figure does not break them, but a typo such as a
multimode module dearer than its single-mode sibling, or a missing medium class, does.
"""

from __future__ import annotations

import copy
import re

import pytest

from solver import loading
from solver.errors import InvalidInstance
from solver.loading import load_catalog, raw_catalog
from solver.schema.catalog import Catalog

SLUG = re.compile(r"^[a-z0-9][a-z0-9.\-]*$")
COPPER = ("dac", "acc", "aec")
OPTICAL = ("aoc", "multimode", "singlemode", "coherent")

REQUIRED = {
    "gpu": ["a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h800-sxm", "h200-sxm", "b200",
            "b300", "gb200-nvl72", "gb300-nvl72", "mi300x"],
    "switch": ["quantum-qm8700", "quantum2-qm9700", "quantumx800-q3400", "spectrum4-sn5600",
               "tomahawk5", "tomahawk6"],
    "nic": ["connectx-6", "connectx-7", "bluefield-3", "connectx-8"],
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def nic_speeds(catalog: Catalog) -> list[int]:
    return sorted({n.port_gbps for n in catalog.nic.values()})


def media(catalog: Catalog, gbps: int, kinds: tuple[str, ...]) -> list:
    return [m for m in catalog.medium.values() if m.gbps == gbps and m.kind in kinds]


# ---------------------------------------------------------------- loading and ids
def test_catalog_loads_every_kind(catalog):
    assert catalog.gpu and catalog.switch and catalog.nic and catalog.medium
    assert catalog.facility.id == "default"


@pytest.mark.parametrize("kind", sorted(REQUIRED))
def test_required_ids_present(catalog, kind):
    missing = sorted(set(REQUIRED[kind]) - set(getattr(catalog, kind)))
    assert not missing, f"{kind}: missing {missing}"


def test_ids_are_slugs_and_unique_across_kinds(catalog):
    ids = [i for kind in ("gpu", "switch", "nic", "medium") for i in getattr(catalog, kind)]
    assert all(SLUG.match(i) for i in ids), [i for i in ids if not SLUG.match(i)]
    assert len(ids) == len(set(ids))


def test_files_do_not_write_the_id_field():
    """The loader copies the table key into `id`; a hand-written id could disagree."""
    raw = {kind: loading.read_document(loading.CATALOG_DIR / f"{kind}.toml")
           for kind in loading.CATALOG_KINDS}
    assert not [(k, i) for k, items in raw.items() for i, v in items.items() if "id" in v]


# ---------------------------------------------------------------- sources
def all_items(catalog: Catalog):
    for kind in ("gpu", "switch", "nic", "medium"):
        yield from getattr(catalog, kind).values()
    yield catalog.facility


def test_every_numeric_figure_has_a_web_source(catalog):
    for item in all_items(catalog):
        for field in item.numeric_fields():
            src = item.sources[field]
            assert src.url.startswith("https://"), (item.id, field, src.url)


def test_estimates_and_assumptions_say_whose_and_why(catalog):
    for item in all_items(catalog):
        for field, src in item.sources.items():
            if src.kind in ("estimate", "assumption"):
                assert src.by, (item.id, field)
                assert src.note, (item.id, field)


@pytest.mark.parametrize("kind,item_id,field", [
    ("gpu", "h100-sxm", "node_price_usd"),
    ("switch", "quantum2-qm9700", "radix_by_gbps"),
    ("nic", "bluefield-3", "power_w"),
    ("medium", "sr4-400g", "fiber_usd_per_link"),
])
def test_removing_a_source_fails_naming_the_field(monkeypatch, kind, item_id, field):
    raw = copy.deepcopy(raw_catalog())
    del raw[kind][item_id]["sources"][field]
    monkeypatch.setattr(loading, "raw_catalog", lambda: raw)
    with pytest.raises(InvalidInstance) as exc:
        loading.load_catalog()
    text = "\n".join(exc.value.problems)
    assert f"catalog.{kind}.{item_id}" in text and field in text


def test_removing_a_facility_source_fails_naming_the_field(monkeypatch):
    raw = copy.deepcopy(raw_catalog())
    del raw["facility"]["sources"]["pue"]
    monkeypatch.setattr(loading, "raw_catalog", lambda: raw)
    with pytest.raises(InvalidInstance) as exc:
        loading.load_catalog()
    assert any("catalog.facility" in p and "pue" in p for p in exc.value.problems)


# ---------------------------------------------------------------- media coverage and physics
@pytest.mark.parametrize("distance_m", [3, 50, 500, 2000, 10_000])
def test_every_nic_speed_has_a_medium_for_each_distance(catalog, distance_m):
    for gbps in nic_speeds(catalog):
        reach = [m.reach_m for m in catalog.medium.values() if m.gbps == gbps]
        assert max(reach, default=0) >= distance_m, (gbps, distance_m)


def test_every_nic_speed_has_every_medium_class(catalog):
    classes = {"copper": COPPER, "aoc": ("aoc",), "multimode": ("multimode",),
               "singlemode": ("singlemode",), "coherent": ("coherent",)}
    for gbps in nic_speeds(catalog):
        for name, kinds in classes.items():
            assert media(catalog, gbps, kinds), (gbps, name)


def test_singlemode_dearer_than_multimode_but_at_most_2_5x(catalog):
    for gbps in nic_speeds(catalog):
        mm = [m.price_usd_per_end for m in media(catalog, gbps, ("multimode",))]
        sm = [m.price_usd_per_end for m in media(catalog, gbps, ("singlemode",))]
        assert min(sm) > max(mm), gbps
        assert max(sm) <= 2.5 * min(mm), gbps


def test_copper_cheaper_and_cooler_than_any_optics(catalog):
    for gbps in nic_speeds(catalog):
        cu, opt = media(catalog, gbps, COPPER), media(catalog, gbps, OPTICAL)
        assert max(m.price_usd_per_end for m in cu) < min(m.price_usd_per_end for m in opt)
        assert max(m.power_w_per_end for m in cu) < min(m.power_w_per_end for m in opt)


def reach(catalog: Catalog, gbps: int, kinds: tuple[str, ...], pick) -> float:
    return pick(m.reach_m for m in media(catalog, gbps, kinds))


def test_reach_ordering(catalog):
    for g in nic_speeds(catalog):
        assert reach(catalog, g, COPPER, max) <= 7 < reach(catalog, g, ("aoc", "multimode"), min)
        assert reach(catalog, g, ("multimode",), max) < reach(catalog, g, ("singlemode",), max)
        sm_max = reach(catalog, g, ("singlemode",), max)
        assert sm_max <= 2000 < reach(catalog, g, ("coherent",), min)


def test_coherent_link_is_ten_times_a_multimode_link(catalog):
    def link_usd(m):
        return 2 * m.price_usd_per_end / m.links_per_module + m.fiber_usd_per_link
    for gbps in nic_speeds(catalog):
        mm = min(link_usd(m) for m in media(catalog, gbps, ("multimode",)))
        zr = min(link_usd(m) for m in media(catalog, gbps, ("coherent",)))
        assert zr >= 10 * mm, (gbps, zr, mm)


def test_cable_assemblies_need_no_separate_fibre(catalog):
    for m in catalog.medium.values():
        if not m.is_transceiver and m.kind != "aoc":
            assert m.fiber_usd_per_link == 0, m.id
        if m.is_transceiver:
            assert m.fiber_usd_per_link > 0, m.id


# ---------------------------------------------------------------- switches and NICs
def test_infiniband_has_sharp_and_ethernet_does_not(catalog):
    for s in catalog.switch.values():
        assert s.in_network_reduction == (s.family == "infiniband"), s.id
        assert (s.product_line == "quantum") == (s.family == "infiniband"), s.id


def test_switch_radices_match_the_datasheets(catalog):
    sw = catalog.switch
    assert sw["quantum-qm8700"].radix(200) == 40
    assert (sw["quantum2-qm9700"].radix(400), sw["quantum2-qm9700"].radix(200)) == (64, 128)
    assert sw["quantumx800-q3400"].radix(800) == 144
    for sid in ("spectrum4-sn5600", "tomahawk5"):
        assert [sw[sid].radix(g) for g in (800, 400, 200)] == [64, 128, 256]
    assert sw["tomahawk6"].radix(400) == 2 * sw["tomahawk5"].radix(400)
    assert sw["spectrum4-sn5600"].required_nic == "bluefield-3"


def test_each_switch_port_bandwidth_is_constant_across_speeds(catalog):
    """radix x speed is the ASIC bandwidth: it cannot change with the port split."""
    for s in catalog.switch.values():
        assert len({g * n for g, n in s.radix_by_gbps.items()}) == 1, s.id


def test_every_nic_speed_has_a_switch(catalog):
    for nic in catalog.nic.values():
        fam = [s for s in catalog.switch.values()
               if nic.port_gbps in s.radix_by_gbps and s.family in nic.families]
        assert fam, nic.id


def test_bluefield3_premium_over_connectx7(catalog):
    cx7, bf3 = catalog.nic["connectx-7"], catalog.nic["bluefield-3"]
    assert bf3.port_gbps == cx7.port_gbps == 400
    assert bf3.power_w - cx7.power_w == pytest.approx(50, abs=10)
    assert bf3.price_usd - cx7.price_usd == pytest.approx(300, abs=100)


# ---------------------------------------------------------------- GPU systems
def test_fp4_only_on_blackwell(catalog):
    for g in catalog.gpu.values():
        assert (g.fp4_tflops is not None) == g.generation.startswith("blackwell"), g.id


def test_peak_ordering_per_gpu(catalog):
    for g in catalog.gpu.values():
        peaks = [p for p in (g.bf16_tflops, g.fp8_tflops, g.fp4_tflops) if p is not None]
        assert peaks == sorted(peaks), g.id


def test_node_shapes(catalog):
    for g in catalog.gpu.values():
        nvl72 = g.id.endswith("nvl72")
        assert g.gpus_per_node == (72 if nvl72 else 8), g.id
        assert g.nvlink_domain_gpus == g.gpus_per_node, g.id
        assert g.nics_per_node == g.gpus_per_node, g.id
        assert g.liquid_cooled == nvl72, g.id
        assert g.max_nodes_per_rack == (1 if nvl72 else 4), g.id
        assert g.node_rack_units * g.max_nodes_per_rack <= 52, g.id


def test_rack_power_within_design_densities(catalog):
    """Air racks: ~26-60 kW at 4 nodes; NVL72: ~120-140 kW."""
    for g in catalog.gpu.values():
        nic = catalog.nic[g.default_nic]
        node_w = (g.gpus_per_node * g.gpu_power_w + g.node_other_power_w
                  + g.nics_per_node * nic.power_w)
        rack_kw = node_w * g.max_nodes_per_rack / 1000
        lo, hi = (115, 145) if g.liquid_cooled else (25, 60)
        assert lo <= rack_kw <= hi, (g.id, rack_kw)


def test_100k_h100_lands_near_150_mw(catalog):
    """SemiAnalysis: 700 W GPU + ~575 W rest of server per GPU (NICs included), ~150 MW
    critical IT. The catalog keeps the back-end NICs out of node_other_power_w (they are
    powered in nic.toml): 550 W + 25 W per GPU.

    Back-end fabric for the check: a 3-tier non-blocking 400G fat tree of QM9700s
    ((2L-1)/k switches per endpoint, 2L link ends per endpoint, SR4/DR4 optics mix).
    Itemised, the campus lands at ~141 MW (SemiAnalysis's ~10% share for storage and
    networks was a rough figure; the parts give ~9% with the back-end fabric).
    """
    g, nic = catalog.gpu["h100-sxm"], catalog.nic["connectx-7"]
    sw = catalog.switch["quantum2-qm9700"]
    per_gpu_server = g.gpu_power_w + g.node_other_power_w / g.gpus_per_node
    assert per_gpu_server + nic.power_w * g.nics_per_node / g.gpus_per_node == pytest.approx(
        700 + 575, rel=0.02)
    tiers, k = 3, sw.radix(400)
    optics_w = (catalog.medium["sr4-400g"].power_w_per_end
                + catalog.medium["dr4-400g"].power_w_per_end) / 2
    fabric_w = (2 * tiers - 1) / k * sw.power_w + 2 * tiers * optics_w
    # Itemised support IT (models/support.py) per GPU: storage writing 1 GB/s per node,
    # one out-of-band switch per 4-node rack, a 3-tier 400G front-end port per node.
    f, fe = catalog.facility, catalog.switch[catalog.facility.frontend_switch]
    support_w = (f.storage_appliance_w / f.storage_appliance_write_gbytes_per_s
                 + f.management_switch_w / g.max_nodes_per_rack
                 + 5 / fe.radix(400) * fe.power_w) / g.gpus_per_node
    total_mw = 100_000 * (per_gpu_server + nic.power_w + fabric_w + support_w) \
        * (1 + f.non_server_it_fraction) / 1e6
    assert 140 <= total_mw <= 160, total_mw


def test_default_nic_matches_generation_link_speed(catalog):
    expected = {"ampere": 200, "hopper": 400, "blackwell": 400, "blackwell-ultra": 800,
                "cdna3": 400}
    for g in catalog.gpu.values():
        assert catalog.nic[g.default_nic].port_gbps == expected[g.generation], g.id


# ---------------------------------------------------------------- facility
def test_facility_defaults_are_in_published_ranges(catalog):
    f = catalog.facility
    assert 1.05 <= f.pue <= 1.6
    assert 9e6 <= f.build_usd_per_mw <= 20e6
    assert 0.05 <= f.electricity_usd_per_kwh <= 0.2
    assert 0 < f.non_server_it_fraction <= 0.10
