"""Inputs of the reliability model from the catalog: rates by profile, and the document
of `clusterplan reliability`.

The reliability catalog is part of every catalog (``Catalog.reliability``, loaded with
the others and overridable as ``[catalog.reliability...]``); solver.prepare resolves it
once per solve. The design's ``ReliabilityInputs`` are built by one function,
``models.reliability.design_inputs``, for the command, the design candidates and the
placement alike, so all three count the same links and media. Every problem is raised as
InvalidInstance (exit code 3) naming the option or field.
"""

from __future__ import annotations

from math import ceil, inf

from models.reliability import (
    Rate,
    ReliabilityInputs,
    ReliabilityRates,
    RestartParts,
    checkpoint_size_gb,
    param_count,
)
from solver.errors import InvalidInstance, UsageError
from solver.results import ReliabilityDocument, Simulated
from solver.schema import Catalog, Choices, GpuSystem, Workload
from solver.schema.reliability import Rate as RateFigure
from solver.schema.reliability import ReliabilityCatalog

DEFAULT_WORKLOAD = "llama3-405b"
"""Workload of `clusterplan reliability` (it sets the checkpoint size)."""
MAX_SIMULATED_DAYS = 3650.0
"""--days cap: ten years per simulated run (the run's events grow with its days)."""
MAX_SIMULATED_RUNS = 10_000
"""--runs cap (--max-runs lifts it): the simulation keeps every run's state in memory."""
MAX_EVENTS_PER_RUN = 10_000
"""Cap (--max-events lifts it) on the failure and planned-stop events one simulated run
draws (days x events a day): the simulation steps event by event, a few ms a step."""
DEFAULT_CHECKPOINT_GBYTES_PER_S_PER_NODE = Choices.model_fields[
    "checkpoint_storage_gbytes_per_s_per_node"].default[0]
"""The instance schema's first checkpoint storage choice per node [GB/s]."""


def _rate(figure: RateFigure) -> Rate:
    if figure.events is not None:
        return Rate.from_events(figure.mttf_hours, figure.events)
    return Rate.from_mttf(figure.mttf_hours, figure.mttf_range_hours)


def reliability_rates(catalog: ReliabilityCatalog, generation: str,
                      profile: str = "default", option: str = "reliability.profile"
                      ) -> ReliabilityRates:
    """The model's rates [1/h] with their ranges, and the restart parts by recovery mode,
    for a GPU generation under a rate profile."""
    if profile not in catalog.profiles():
        raise InvalidInstance([f"{option}: unknown profile '{profile}' "
                               f"(known: {', '.join(catalog.profiles())})"])
    cat = catalog.with_profile(profile)
    if generation not in cat.gpu:
        raise InvalidInstance([f"catalog.reliability.gpu: no failure rate for GPU generation "
                               f"'{generation}' (known: {', '.join(sorted(cat.gpu))})"])
    rec = cat.recovery
    return ReliabilityRates(
        gpu=_rate(cat.gpu[generation]), host=_rate(cat.host), nic=_rate(cat.nic),
        link={k: _rate(v) for k, v in sorted(cat.link.items())}, switch=_rate(cat.switch),
        software=_rate(cat.software), sdc=_rate(cat.sdc), planned=_rate(cat.planned),
        fabric_interrupt_fraction=rec.fabric_interrupt_fraction.value,
        restart={mode: RestartParts(**{name: getattr(parts, name).value
                                       for name in type(parts).model_fields})
                 for mode, parts in sorted(cat.restart.items())},
        host_copy_gbytes_per_s_per_gpu=rec.host_copy_gbytes_per_s_per_gpu.value,
        node_repair_h=rec.node_repair_h.value, switch_replace_h=rec.switch_replace_h.value,
        profile=profile)


def workload_checkpoint_gb(workload: Workload) -> float:
    """Checkpoint size of a workload: param_count x bytes per parameter (Adam)."""
    return checkpoint_size_gb(param_count(workload), workload.precision)


def default_switch(catalog: Catalog, gpu: GpuSystem) -> str:
    """The first catalog switch (by id) with ports at the speed of the GPU's default NIC
    and no NIC requirement of its own."""
    gbps = catalog.nic[gpu.default_nic].port_gbps
    for switch_id, switch in sorted(catalog.switch.items()):
        if gbps in switch.radix_by_gbps and switch.required_nic is None:
            return switch_id
    raise InvalidInstance([f"--switch: no catalog switch has {gbps} Gb/s ports"], "reliability")


def design(gpu_id: str, gpus: int, workload_ref: str, switch_id: str | None,
           rail_optimized: bool, checkpoint_gbps: float | None, recovery: str,
           profile: str = "default") -> tuple[ReliabilityInputs, ReliabilityRates, dict]:
    """The design as `solve` builds it, its rates, and what the document reports of it:
    the NIC the switch requires (else the GPU's default), the exact fabric with its hot
    spares, the cheapest medium reaching each link class at the default cable lengths,
    and the ReliabilityInputs builder the design candidates use."""
    from models.fabric import FabricSpec
    from models.reliability import design_inputs
    from models.reliability.goodput import choose_spares
    from solver.fabric_inputs import design_with_media, resolve_fabric_parts
    from solver.loading import load_catalog, load_workload
    from solver.schema import CableLengths

    catalog = load_catalog()
    if gpu_id not in catalog.gpu:
        raise InvalidInstance([f"--gpu: unknown gpu system '{gpu_id}' "
                               f"(known: {', '.join(sorted(catalog.gpu))})"], "reliability")
    switch_id = switch_id or default_switch(catalog, catalog.gpu[gpu_id])
    parts = resolve_fabric_parts(catalog, gpu_id, switch_id, "--gpu", "--switch")
    workload = load_workload(workload_ref, "--workload")
    rates = reliability_rates(catalog.reliability, parts.gpu.generation, profile, "--profile")
    nodes = ceil(gpus / parts.gpu.gpus_per_node)
    bandwidth = (checkpoint_gbps if checkpoint_gbps is not None
                 else nodes * DEFAULT_CHECKPOINT_GBYTES_PER_S_PER_NODE)
    target = catalog.reliability.recovery.availability_target.value

    def with_media(total_nodes: int):
        spec = FabricSpec(nodes=total_nodes, ports_per_node=parts.gpu.nics_per_node,
                          radix=parts.radix, rail_optimized=rail_optimized)
        try:
            return design_with_media(parts, spec, CableLengths(), catalog, False)
        except ValueError as exc:
            raise InvalidInstance([f"--gpus/--switch/--no-rail-optimized: {exc}"],
                                  "reliability") from None

    def inputs(fabric, media, spares):
        return design_inputs(parts.gpu, parts.nic, parts.radix, rail_optimized, nodes, fabric,
                             media, recovery, workload_checkpoint_gb(workload), bandwidth,
                             target, spares)

    spares = choose_spares(inputs(*with_media(nodes), None), rates)
    fabric, media = with_media(nodes + spares)
    about = {"gpu": parts.gpu.id, "switch": parts.switch.id, "nic": parts.nic.id,
             "workload": workload.name, "params": param_count(workload),
             "media": {line.link_class: line.kind for line in media}}
    return inputs(fabric, media, spares), rates, about


FORMER_BREAKDOWN_KEYS = ("node_optics", "node_copper", "node_rest", "other_switch",
                         "switch_optics")
"""Aggregate breakdown keys of the first reliability model, kept for older consumers."""


def former_breakdown(breakdown: dict[str, float], copper: frozenset[str]) -> dict[str, float]:
    """The first model's aggregate keys from the per-class breakdown [interruptions/day]:
    node_optics / node_copper (node links by medium), node_rest (host + software + sdc),
    other_switch (spine/core switches), switch_optics (optical switch-to-switch links).
    They regroup classes, so they overlap the class keys: sum the classes, not both."""
    def kinds(prefix: str, want_copper: bool) -> float:
        return sum(v for k, v in breakdown.items() if k.startswith(prefix)
                   and (k[len(prefix):] in copper) == want_copper)

    return {"node_optics": kinds("node_link_", False), "node_copper": kinds("node_link_", True),
            "node_rest": sum(breakdown.get(k, 0.0) for k in ("host", "software", "sdc")),
            "other_switch": breakdown.get("fabric_switch", 0.0),
            "switch_optics": kinds("fabric_link_", False)}


def reliability_document(gpu_id: str, gpus: int, workload_ref: str, switch_id: str | None,
                         rail_optimized: bool, checkpoint_gbps: float | None, recovery: str,
                         simulate_runs: int | None, days: float, seed: int,
                         profile: str = "default", max_runs: int = MAX_SIMULATED_RUNS,
                         max_events: float = MAX_EVENTS_PER_RUN) -> ReliabilityDocument:
    """The reliability document; bad options raise InvalidInstance naming the option, a
    simulation above the caps (``max_runs``, ``max_events`` per run) UsageError naming
    the flag that lifts it."""
    from models.reliability import COPPER_KINDS, RECOVERY_MODES, goodput, simulate

    problems = []
    if gpus <= 0:
        problems.append(f"--gpus: must be a positive number of GPUs (got {gpus})")
    if checkpoint_gbps is not None and not 0 < checkpoint_gbps < inf:
        problems.append(f"--checkpoint-gbps: must be positive and finite (got {checkpoint_gbps})")
    if recovery not in RECOVERY_MODES:
        problems.append(f"--recovery: must be one of {', '.join(RECOVERY_MODES)} "
                        f"(got '{recovery}')")
    if simulate_runs is not None and simulate_runs < 2:
        problems.append(f"--runs: need at least 2 runs (got {simulate_runs})")
    if not 0 < days <= MAX_SIMULATED_DAYS:
        problems.append(f"--days: must lie in (0, {MAX_SIMULATED_DAYS:g}] days (got {days})")
    if problems:
        raise InvalidInstance(problems, "reliability")
    if simulate_runs is not None and simulate_runs > max_runs:
        raise UsageError(f"--runs {simulate_runs:,} is above the cap of {max_runs:,} runs (each "
                         f"run's state is kept in memory); pass --max-runs {simulate_runs} "
                         "to run it")
    inputs, rates, about = design(gpu_id, gpus, workload_ref, switch_id, rail_optimized,
                                  checkpoint_gbps, recovery, profile)
    result = goodput(inputs, rates)
    node_links = inputs.node_link_counts()
    simulated = None
    if simulate_runs is not None:
        events = days * (result.interruptions_per_day + result.planned_per_day)
        if events > max_events:
            raise UsageError(
                f"--days {days:g}: each simulated run would step through about {events:,.0f} "
                f"failure and planned-stop events, above the cap of {max_events:,.0f}; pass "
                f"--max-events {ceil(events)} to run it (a few ms per event)")
        mean, low, high = simulate(inputs, rates, days, simulate_runs, seed)
        simulated = Simulated(mean, low, high, simulate_runs, days, seed)
    return ReliabilityDocument(
        **about, gpus=gpus, nodes=inputs.nodes, rail_optimized=rail_optimized,
        checkpoint_size_gb=inputs.checkpoint_size_gb, checkpoint_gbps=inputs.checkpoint_gbps,
        switches=inputs.switches,
        switch_links_optical=sum(n for k, n in inputs.switch_link_counts().items()
                                 if k not in COPPER_KINDS),
        node_links_optical=sum(n for k, n in node_links.items() if k not in COPPER_KINDS),
        node_links_copper=sum(n for k, n in node_links.items() if k in COPPER_KINDS),
        result=result,
        breakdown={**result.breakdown, **former_breakdown(result.breakdown, COPPER_KINDS)},
        simulated=simulated)
