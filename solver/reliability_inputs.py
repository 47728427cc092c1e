"""Inputs of the reliability model from the catalog: rates, GPU systems, switches.

The reliability catalog (instances/catalog/reliability.toml) is loaded here, not by
solver.loading (solver.prepare reads it once per solve). Every problem is raised as
InvalidInstance (exit code 3) naming the option or field.
"""

from __future__ import annotations

from dataclasses import asdict
from math import ceil, log
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.fabric import FabricSpec, design_fabric
from models.reliability import (
    ReliabilityInputs,
    ReliabilityRates,
    checkpoint_size_gb,
    param_count,
)
from solver.errors import InvalidInstance
from solver.loading import CATALOG_DIR, format_validation_error, read_document
from solver.schema import Catalog, Choices, GpuSystem, Nic, Switch, Workload
from solver.schema.reliability import ReliabilityCatalog

RELIABILITY_CATALOG = CATALOG_DIR / "reliability.toml"
DEFAULT_WORKLOAD = "llama3-405b"
"""Workload of `clusterplan reliability` (it sets the checkpoint size)."""
DEFAULT_CHECKPOINT_GBYTES_PER_S_PER_NODE = Choices.model_fields[
    "checkpoint_storage_gbytes_per_s_per_node"].default[0]


def load_reliability_catalog(path: Path = RELIABILITY_CATALOG) -> ReliabilityCatalog:
    """Validate reliability.toml: every rate and figure with {url, kind, by, note}."""
    try:
        return ReliabilityCatalog.model_validate(read_document(path))
    except ValidationError as err:
        raise InvalidInstance(format_validation_error(err, "reliability"), str(path)) from None


def reliability_rates(catalog: ReliabilityCatalog, generation: str) -> ReliabilityRates:
    """The model's rates [1/h] and recovery figures for a GPU generation.

    The init-time exponent comes from the two MLPerf points:
    b = ln(init_large / init_ref) / ln(G_large / G_ref).
    """
    if generation not in catalog.gpu:
        raise InvalidInstance([f"reliability.gpu: no failure rate for GPU generation "
                               f"'{generation}' (known: {', '.join(sorted(catalog.gpu))})"])
    rec = catalog.recovery
    exponent = (log(rec.init_large_s.value / rec.init_ref_s.value)
                / log(rec.init_large_gpus.value / rec.init_ref_gpus.value))
    return ReliabilityRates(
        gpu_per_h=catalog.gpu[generation].per_hour,
        node_rest_per_gpu_h=catalog.node_rest.per_hour,
        nic_per_h=catalog.nic.per_hour,
        optic_link_per_h={k: v.per_hour for k, v in sorted(catalog.optic.items())},
        copper_link_per_h={k: v.per_hour for k, v in sorted(catalog.copper.items())},
        switch_per_h=catalog.switch.per_hour,
        fabric_interrupt_fraction=rec.fabric_interrupt_fraction.value,
        detect_s=rec.detect_s.value,
        replace_s=rec.replace_s.value,
        init_ref_s=rec.init_ref_s.value,
        init_ref_gpus=rec.init_ref_gpus.value,
        init_exponent=exponent,
        host_copy_gbytes_per_s_per_gpu=rec.host_copy_gbytes_per_s_per_gpu.value,
        node_repair_h=rec.node_repair_h.value,
        switch_replace_h=rec.switch_replace_h.value,
    )


def catalog_item(catalog: Catalog, kind: str, item_id: str, option: str) -> Any:
    """One item of the catalog; an unknown id names `option`."""
    items = getattr(catalog, kind)
    if item_id not in items:
        raise InvalidInstance([f"{option}: unknown {kind} '{item_id}' "
                               f"(known: {', '.join(sorted(items))})"])
    return items[item_id]


def default_switch(catalog: Catalog, port_gbps: int) -> str:
    """The first catalog switch (by id) with ports at the NIC's speed."""
    for switch_id in sorted(catalog.switch):
        if port_gbps in catalog.switch[switch_id].radix_by_gbps:
            return switch_id
    raise InvalidInstance([f"--switch: no catalog switch has {port_gbps} Gb/s ports"])


def workload_checkpoint_gb(workload: Workload) -> float:
    """Checkpoint size of a workload: param_count x bytes per parameter (Adam)."""
    return checkpoint_size_gb(param_count(workload), workload.precision)


def design_inputs(gpu: GpuSystem, nic: Nic, switch: Switch, gpus: int, workload: Workload,
                  rail_optimized: bool, checkpoint_gbps: float | None, recovery: str,
                  availability_target: float) -> ReliabilityInputs:
    """ReliabilityInputs for the exact fabric (models.fabric) of `switch` over the design.

    Rail-optimized: every NIC-to-leaf link optical (multimode); middle-of-rack: those
    links are copper (DAC). Inter-switch links single-mode. Storage bandwidth
    defaults to the design default of the instance schema, 1 GB/s of checkpoint storage
    write bandwidth per node (Choices.checkpoint_storage_gbytes_per_s_per_node).
    """
    problems = []
    if gpus <= 0:
        problems.append(f"--gpus: must be positive (got {gpus})")
    if checkpoint_gbps is not None and not checkpoint_gbps > 0:
        problems.append(f"--checkpoint-gbps: must be positive (got {checkpoint_gbps})")
    if nic.port_gbps not in switch.radix_by_gbps:
        problems.append(f"--switch: {switch.id} has no {nic.port_gbps} Gb/s ports for "
                        f"{gpu.id}'s NIC {nic.id} (has {sorted(switch.radix_by_gbps)})")
    if problems:
        raise InvalidInstance(problems, "options")
    nodes = ceil(gpus / gpu.gpus_per_node)
    radix = switch.radix(nic.port_gbps)
    try:
        fabric = design_fabric(FabricSpec(nodes=nodes, ports_per_node=gpu.nics_per_node,
                                          radix=radix, rail_optimized=rail_optimized))
    except ValueError as exc:
        raise InvalidInstance([f"--gpus/--switch/--no-rail-optimized: {exc}"], "options") from None
    bandwidth = (checkpoint_gbps if checkpoint_gbps is not None
                 else nodes * DEFAULT_CHECKPOINT_GBYTES_PER_S_PER_NODE)
    links = gpu.nics_per_node
    return ReliabilityInputs(
        gpus=gpus, gpus_per_node=gpu.gpus_per_node,
        node_links_optical=links if rail_optimized else 0,
        node_links_copper=0 if rail_optimized else links,
        switches=fabric.switches_total, switch_links_optical=sum(fabric.links_per_tier[1:]),
        rail_optimized=rail_optimized,
        checkpoint_size_gb=workload_checkpoint_gb(workload), checkpoint_gbps=bandwidth,
        recovery=recovery, node_optic_kind="multimode", switch_optic_kind="singlemode",
        node_copper_kind="dac", leaf_down_ports=max(1, radix // 2),
        peer_gbytes_per_s_per_node=links * nic.port_gbps / 8.0,
        availability_target=availability_target)


def reliability_document(gpu_id: str, gpus: int, workload_ref: str, switch_id: str | None,
          rail_optimized: bool, checkpoint_gbps: float | None, recovery: str,
          simulate_runs: int | None, days: float, seed: int) -> dict[str, Any]:
    """The reliability document; bad options raise InvalidInstance naming the option."""
    from models.reliability import RECOVERY_MODES, goodput, param_count, simulate
    from solver.fabric_inputs import backend_nic
    from solver.loading import load_catalog, load_workload

    problems = []
    if gpus <= 0:
        problems.append(f"--gpus: must be a positive number of GPUs (got {gpus})")
    if checkpoint_gbps is not None and not checkpoint_gbps > 0:
        problems.append(f"--checkpoint-gbps: must be positive (got {checkpoint_gbps})")
    if recovery not in RECOVERY_MODES:
        problems.append(f"--recovery: must be one of {', '.join(RECOVERY_MODES)} "
                        f"(got '{recovery}')")
    if simulate_runs is not None and simulate_runs < 2:
        problems.append(f"--runs: need at least 2 runs (got {simulate_runs})")
    if not days > 0:
        problems.append(f"--days: must be positive (got {days})")
    if problems:
        raise InvalidInstance(problems, "reliability")
    catalog = load_catalog()
    gpu = catalog_item(catalog, "gpu", gpu_id, "--gpu")
    switch = catalog_item(catalog, "switch", switch_id or default_switch(
        catalog, catalog.nic[gpu.default_nic].port_gbps), "--switch")
    nic = backend_nic(catalog, gpu, switch)
    workload = load_workload(workload_ref, "--workload")
    rel_catalog = load_reliability_catalog()
    rates = reliability_rates(rel_catalog, gpu.generation)
    inputs = design_inputs(gpu, nic, switch, gpus, workload, rail_optimized, checkpoint_gbps,
                           recovery, rel_catalog.recovery.availability_target.value)
    result = goodput(inputs, rates)
    doc: dict[str, Any] = {
        "gpu": gpu.id, "gpus": gpus, "nodes": inputs.nodes, "switch": switch.id,
        "workload": workload.name, "rail_optimized": rail_optimized, "recovery": recovery,
        "params": param_count(workload), "checkpoint_size_gb": inputs.checkpoint_size_gb,
        "checkpoint_gbps": inputs.checkpoint_gbps, "switches": inputs.switches,
        "switch_links_optical": inputs.switch_links_optical,
        "node_links_optical": inputs.node_links_optical,
        "node_links_copper": inputs.node_links_copper,
        **asdict(result),
    }
    if simulate_runs is not None:
        mean, low, high = simulate(inputs, rates, days, simulate_runs, seed)
        doc["simulated"] = {"goodput": mean, "ci_low": low, "ci_high": high,
                            "runs": simulate_runs, "days": days, "seed": seed}
    return doc
