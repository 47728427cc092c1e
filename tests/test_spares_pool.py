"""Cold-spare parts pool (models/spares_pool.py): Poisson stock by hand and against
scipy, the BOM lines of a solve, and the checker failing a tampered pool."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest
from scipy.stats import poisson

from models.reliability.rates import Rate
from models.spares_pool import poisson_cdf, poisson_stock, spare_pool_lines
from solver import load_instance, solve
from solver.checker import check_design, poisson_quantile


def test_poisson_stock_by_hand_and_against_scipy():
    # mu = 2: P(<=4) = e^-2 (1 + 2 + 2 + 4/3 + 2/3) = 7 e^-2 = 0.947; P(<=5) = 0.983
    assert poisson_stock(2.0, 0.94) == 4 and poisson_stock(2.0, 0.95) == 5
    assert math.exp(-2) * 7 == pytest.approx(0.9473, abs=1e-4)
    for mu in (1e-9, 0.01, 0.5, 3.7, 40.0, 812.5, 23_456.7, 1.3e6):
        for fill in (0.5, 0.9, 0.99, 0.999, 0.999999):
            assert poisson_stock(mu, fill) == poisson.ppf(fill, mu)
            for s in (-1, 0, 1, int(mu), poisson_stock(mu, fill)):
                # scipy's cdf is 4e-11 off at mu = 1.3e6 (mpmath at 40 digits: this one 2e-17)
                assert poisson_cdf(s, mu) == pytest.approx(poisson.cdf(s, mu), abs=1e-10)


def test_the_checkers_poisson_quantile_against_scipy():
    """solver.checker.poisson_quantile: a route of its own (terms from lgamma, summed
    from 0) to the same quantiles."""
    for mu in (1e-9, 0.01, 0.5, 3.7, 40.0, 812.5, 23_456.7):
        for fill in (0.5, 0.9, 0.99, 0.999):
            assert poisson_quantile(fill, mu) == poisson.ppf(fill, mu)


def test_pool_lines_by_hand():
    """1,000 nodes of 8 GPUs, GPU rate 1/88,768 h, 30 days: mu = 8,000 x 720 / 88,768 =
    64.9 -> the 99% quantile; switches 100 at 1/1.43M h: mu = 0.05 -> 1."""
    rates = SimpleNamespace(gpu=Rate.fixed(1 / 88_768), nic=Rate.fixed(0.0),
                            switch=Rate.fixed(1 / 1.43e6), link={})
    gpu = SimpleNamespace(id="g", gpus_per_node=8, nics_per_node=8, node_price_usd=240_000.0)
    nic = SimpleNamespace(id="n", price_usd=2_000.0)
    switch = SimpleNamespace(id="s", price_usd=30_000.0)
    lines = {x.item: x for x in spare_pool_lines(rates, gpu, nic, switch, 1000, 100, [],
                                                 30.0, 0.99)}
    assert lines["cold spare g GPU"].quantity == poisson.ppf(0.99, 8000 * 720 / 88_768)
    assert lines["cold spare g GPU"].unit_cost_usd == 30_000.0
    assert lines["cold spare s switch"].quantity == 1
    assert lines["cold spare n NIC"].quantity == 0
    assert all(x.power_w == 0 for x in lines.values())


def test_solved_bom_has_the_pool_and_the_checker_rederives_it():
    r = solve(load_instance("instances/llama3-16k.toml"), place=False)
    spares = [x for x in r.design.bom() if x.category == "spares"]
    assert {x.item.split(" (")[0] for x in spares} >= {
        "cold spare h100-sxm GPU", "cold spare connectx-7 NIC"}
    assert r.summary["verified"]
    no_requirements = SimpleNamespace(required_effective_tokens_per_s=0.0, min_goodput=0.0)
    design = r.design
    lines = tuple(dataclasses.replace(x, quantity=x.quantity + 1)
                  if x.category == "spares" else x for x in design.candidate.lines)
    tampered = dataclasses.replace(design, candidate=dataclasses.replace(
        design.candidate, lines=lines))
    verdict = check_design(r.inputs, tampered, no_requirements, tampered.candidate)
    assert any(f.startswith("cold_spares") for f in verdict.failures)


def test_the_placed_bom_sizes_the_pool_for_the_placed_media():
    """Placement may route a link class on another medium than the design priced (longer
    runs need optics where the design had copper); the placed BOM's pool then stocks the
    placed media's parts, the summary's spares_pool says so, and the checker re-derives
    the placed pool with its own arithmetic (a pool off by one part fails it)."""
    from models.design.candidates import cold_spares
    from models.fabric import design_fabric, media_line
    from solver.checker import placed_spares_check
    from solver.placement import bom_media_rows
    from solver.report import with_placement

    r = solve(load_instance("instances/llama3-16k.toml"), place=False)
    inputs, design = r.inputs, r.design
    c = design.candidate
    parts = inputs.config(c.config)
    fabric = design_fabric(parts.fabric_spec(c.nodes + c.spare_nodes))
    # every link class placed on single-mode optics (the design uses copper and multimode)
    singlemode = min((m for m in inputs.medium.values()
                      if m.kind == "singlemode" and m.gbps == parts.nic.port_gbps),
                     key=lambda m: m.id)
    placed = [media_line(lc, singlemode, 400.0, parts.nic_attachment == "twin")
              for lc in fabric.link_classes]
    racks = sum(x.quantity for x in design.bom() if x.category == "rack")
    placement = {"bom_media": bom_media_rows(placed), "racks_total": racks}
    s = with_placement(inputs, r.document, design, placed, racks, placement)
    want = cold_spares(inputs, parts, c.nodes + c.spare_nodes, fabric.switches_total, placed)
    pool = {x.item: x.quantity for x in s.bom if x.category == "spares"}
    assert pool == {x.item: x.quantity for x in want}
    assert any(f"{singlemode.id} transceiver" in item for item in pool)
    assert s.design.spares_pool.cost_usd == pytest.approx(sum(x.cost_usd for x in want))
    assert s.design.spares_pool.cost_usd != pytest.approx(
        r.document.design.spares_pool.cost_usd)
    assert not [f for f in s.verification.failures if f.startswith("placed_cold_spares")]
    off_by_one = placed_spares_check(inputs, design, placement["bom_media"],
                                     s.design.spares_pool.cost_usd + 1.0)
    assert not off_by_one.ok
