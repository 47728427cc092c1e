"""The work the candidate build shares between configurations (models.design.candidates.
SharedWork: space layouts and their figures, size ladders, link-class shapes, support
designs, cold-spare pools; the evaluators' throughput and goodput caches) is keyed on
everything that decides it: each configuration built alone, with nothing shared, gives
the same candidates, field by field (``extra`` included), as one build of all of them,
in either order."""

from __future__ import annotations

import dataclasses

from models.design.candidates import build_configs, support_rack_power_w
from models.design.evaluate import Evaluators, default_evaluators
from models.design.inputs import Inputs
from solver.loading import (
    INSTANCES_DIR,
    instance_from_dict,
    load_catalog,
    load_instance,
    read_instance_document,
)
from solver.prepare import prepare


def _fields(built) -> dict[str, tuple]:
    """Every configuration's configs, notes and candidates with all their fields, as
    exact reprs (floats to the bit), by configuration key."""
    return {key: (repr(c.configs), repr(c.notes),
                  [repr([(f.name, getattr(k, f.name)) for f in dataclasses.fields(k)])
                   for k in c.candidates])
            for key, c in built.items()}


def _assert_alone_equals_shared(inputs: Inputs, evaluators=default_evaluators) -> dict:
    """Build every configuration of `inputs` at once, at once backwards, and each alone
    (fresh ``evaluators(inputs)`` for each build); assert the three equal and return
    the shared build."""
    parts = inputs.configs
    built = build_configs(inputs, evaluators(inputs), parts)
    shared = _fields(built)
    backwards = _fields(build_configs(inputs, evaluators(inputs), parts[::-1]))
    alone = {}
    for p in parts:
        alone |= _fields(build_configs(inputs, evaluators(inputs), [p]))
    assert alone == shared
    assert backwards == shared
    return built


def test_each_configuration_alone_equals_the_shared_build():
    """On llama3-16k (configurations that differ only in recovery or cooling share
    ladders and layouts; air and rear doors lay the same fabric out in other racks)."""
    inputs = prepare(load_instance(INSTANCES_DIR / "llama3-16k.toml"))
    parts = inputs.configs
    assert len({(p.gpu.id, p.nic.id, p.fabric_spec(0)) for p in parts}) < len(parts)
    built = _assert_alone_equals_shared(inputs)
    assert sum(len(c.candidates) for c in built.values()) > 500


def nic_dependent_spares(inputs: Inputs) -> Evaluators:
    """The instance's evaluators with hot spares that depend on the NIC too: one more
    per 25 W of NIC power (BlueField-3 3, ConnectX-7 1). The shipped reliability model
    reads no NIC figure for spares, but Evaluators.spare_nodes is given the whole
    configuration, so what a size ladder is kept by must cover the NIC."""
    evaluators = default_evaluators(inputs)

    def spare_nodes(inputs: Inputs, p, nodes: int, node_kind: str | None = None) -> int:
        return (evaluators.spare_nodes(inputs, p, nodes, node_kind)
                + round(p.nic.power_w / 25.0))
    return dataclasses.replace(evaluators, spare_nodes=spare_nodes)


def test_the_memos_tell_apart_the_support_rack_power_and_the_nic():
    """llama3-16k with rear doors at 44 kW a rack: they hold 4 of the 10.4 kW H100 nodes
    a rack, as air at 42 kW does, so at some sizes air and rear doors take the same
    racks (compute and back-end network) but not the same support racks (support_of's
    memo must key on the support rack power). Spectrum-4 (with BlueField-3) and
    Tomahawk 5 (with ConnectX-7) build the same fabric spec, 128 ports at 400G; with
    hot spares that depend on the NIC (nic_dependent_spares) the size ladders must key
    on the NIC."""
    doc = read_instance_document(INSTANCES_DIR / "llama3-16k.toml")
    rack_kw = dict(load_catalog().facility.cooling_max_rack_kw) | {"rdhx": 44.0}
    doc["catalog"] = {"facility": {"cooling_max_rack_kw": rack_kw}}
    doc["choices"] |= {"fabrics": [{"switch": "spectrum4-sn5600"}, {"switch": "tomahawk5"}],
                       "rail_optimized": [True], "recovery": ["storage"]}
    inputs = prepare(instance_from_dict(doc))
    parts = inputs.configs
    assert {support_rack_power_w(inputs, p) for p in parts} == {42e3, 44e3}
    assert len({(p.gpu.id, p.fabric_spec(0)) for p in parts}) == 1
    assert len({p.nic.id for p in parts}) == 2
    built = _assert_alone_equals_shared(inputs, nic_dependent_spares)
    # the case support_of's memo must tell apart: the same GPU system, checkpoint
    # bandwidth, nodes, spares and racks (management switches less support racks),
    # other support racks
    support_racks: dict[tuple, set[int]] = {}
    for k in (k for c in built.values() for k in c.candidates):
        s = k.extra["support"]
        racks = s["management"]["switches"] - s["support_racks"]
        support_racks.setdefault((k.nodes, k.spare_nodes, racks), set()).add(
            s["support_racks"])
    assert any(len(found) > 1 for found in support_racks.values())
