"""The resolver (solver.prepare): one NIC rule for every command, frozen inputs, failure
rates with the what-if multipliers applied once."""

from __future__ import annotations

import dataclasses

import pytest

from models.reliability import COPPER_KINDS
from solver.fabric_inputs import backend_nic, resolve_fabric_parts
from solver.loading import DEFAULT_INSTANCE, instance_from_dict, load_catalog, read_document
from solver.perf_inputs import network_for
from solver.prepare import prepare
from solver.reliability_inputs import reliability_rates


def test_the_switch_decides_the_nic_everywhere():
    cat = load_catalog()
    h100 = cat.gpu["h100-sxm"]
    assert backend_nic(cat, h100, cat.switch["spectrum4-sn5600"]).id == "bluefield-3"
    assert backend_nic(cat, h100, cat.switch["tomahawk5"]).id == h100.default_nic
    assert resolve_fabric_parts(cat, "h100-sxm", "spectrum4-sn5600").nic.id == "bluefield-3"
    # perf sees the required NIC's bandwidth: give BlueField-3 twice the ports' speed
    nic = cat.nic["bluefield-3"].model_copy(update={"port_gbps": 800})
    fast = cat.model_copy(update={"nic": dict(cat.nic) | {"bluefield-3": nic}})
    base = network_for(cat, h100, "spectrum4-sn5600", 1.0, None).gbps_per_gpu
    assert network_for(fast, h100, "spectrum4-sn5600", 1.0, None).gbps_per_gpu == 2 * base
    assert network_for(fast, h100, "tomahawk5", 1.0, None).gbps_per_gpu == base


def test_inputs_are_resolved_once_and_frozen():
    doc = read_document(DEFAULT_INSTANCE)
    doc["reliability"] = {"failure_rate_multipliers": {"gpu": 2.0, "optics": 0.5}}
    inputs = prepare(instance_from_dict(doc))
    assert [p.nic.id for p in inputs.configs if p.switch.id == "spectrum4-sn5600"] and all(
        p.nic.id == "bluefield-3" for p in inputs.configs if p.switch.id == "spectrum4-sn5600")
    assert inputs.config(inputs.configs[0].key + "/dac-400g") == inputs.configs[0]
    shipped = reliability_rates(load_catalog().reliability, "hopper")
    rates = inputs.rates["hopper"]
    assert rates.gpu.per_h == pytest.approx(2 * shipped.gpu.per_h)
    assert rates.nic.per_h == shipped.nic.per_h
    optical = [k for k in shipped.link if k not in COPPER_KINDS]
    assert optical and all(rates.link[k].per_h == pytest.approx(shipped.link[k].per_h / 2)
                           for k in optical)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.name = "other"
    with pytest.raises(TypeError):
        inputs.medium["x"] = None
