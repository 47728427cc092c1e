"""The work the candidate build shares between configurations (models.design.candidates.
SharedWork: space layouts and their figures, size ladders, link-class shapes, support
designs, cold-spare pools; the evaluators' throughput and goodput caches) is keyed on
everything that decides it: each configuration built alone, with nothing shared, gives
the same candidates, field by field (``extra`` included), as one build of all of them,
in either order."""

from __future__ import annotations

import dataclasses

from models.design.candidates import build_configs
from models.design.evaluate import default_evaluators
from solver.loading import INSTANCES_DIR, load_instance
from solver.prepare import prepare


def _fields(built) -> dict[str, tuple]:
    """Every configuration's configs, notes and candidates with all their fields, as
    exact reprs (floats to the bit), by configuration key."""
    return {key: (repr(c.configs), repr(c.notes),
                  [repr([(f.name, getattr(k, f.name)) for f in dataclasses.fields(k)])
                   for k in c.candidates])
            for key, c in built.items()}


def test_each_configuration_alone_equals_the_shared_build():
    inputs = prepare(load_instance(INSTANCES_DIR / "llama3-16k.toml"))
    parts = inputs.configs
    # configurations that differ only in recovery or cooling share ladders and layouts
    assert len({(p.gpu.id, p.nic.id, p.fabric_spec(0)) for p in parts}) < len(parts)
    shared = _fields(build_configs(inputs, default_evaluators(inputs), parts))
    backwards = _fields(build_configs(inputs, default_evaluators(inputs), parts[::-1]))
    alone = {}
    for p in parts:
        alone |= _fields(build_configs(inputs, default_evaluators(inputs), [p]))
    assert sum(len(c[2]) for c in shared.values()) > 500
    assert alone == shared
    assert backwards == shared
