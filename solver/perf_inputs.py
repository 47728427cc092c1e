"""The performance model of one job from catalog ids: evaluate given parallel degrees or
search the omitted ones (``solver.api.perf``, ``clusterplan perf``)."""

from __future__ import annotations

import math

from solver.errors import InvalidInstance
from solver.results import PerfDocument, PerfNetwork

RECOMPUTE = ("none", "selective", "full")
DEGREES = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch")


def network_for(catalog, system, switch_id: str | None, oversubscription: float,
                pod_gpus: int | None):
    """The scale-out fabric as the job sees it: NIC bandwidth per GPU from the back-end
    NIC (solver.fabric_inputs.backend_nic; the system's default NIC without a switch);
    in-network reduction from the switch; pods of `pod_gpus` (default with a switch: the
    3-tier non-blocking maximum 2*(k/2)^3 at the NIC speed)."""
    from models.perf import NetworkSpec
    from solver.fabric_inputs import backend_nic

    nic = catalog.nic[system.default_nic]
    reduction = False
    if switch_id is not None:
        if switch_id not in catalog.switch:
            raise InvalidInstance([f"--switch: unknown switch '{switch_id}' (known: "
                                   f"{', '.join(sorted(catalog.switch))})"], "perf")
        switch = catalog.switch[switch_id]
        nic = backend_nic(catalog, system, switch)
        reduction = switch.in_network_reduction
        if pod_gpus is None and nic.port_gbps in switch.radix_by_gbps:
            pod_gpus = 2 * (switch.radix(nic.port_gbps) // 2) ** 3
    gbps = nic.port_gbps * system.nics_per_node / system.gpus_per_node
    return NetworkSpec(gbps_per_gpu=gbps, in_network_reduction=reduction,
                       pod_gpus=pod_gpus, oversubscription=oversubscription)


def job_mapping(catalog, system, switch: str, gpus: int, doc: dict) -> dict | None:
    """Where the job's groups sit on a rail-optimized fat tree of `switch` (CP-SAT, see
    solver.job_mapping); None when that fabric cannot be built for these GPUs."""
    from models.fabric import FabricSpec, design_fabric
    from solver.fabric_inputs import resolve_fabric_parts
    from solver.job_mapping import map_job

    parts = resolve_fabric_parts(catalog, system.id, switch, "--gpu", "--switch")
    try:
        fabric = design_fabric(FabricSpec(nodes=math.ceil(gpus / system.gpus_per_node),
                                          ports_per_node=system.nics_per_node,
                                          radix=parts.radix))
    except ValueError:
        return None
    return map_job(system, fabric, doc, parts.gbps)


def perf_document(workload_ref: str, gpu: str, gpus: int, degrees: dict,
                  recompute: str | None, switch: str | None, oversubscription: float,
                  pod_gpus: int | None, sharding: str | None = None, etp: int | None = None,
                  profile: str | None = None) -> PerfDocument:
    from models.perf import (
        PROFILES,
        SHARDING_MODES,
        Parallelism,
        evaluate,
        invalid_degrees,
        search,
    )
    from solver.loading import load_catalog, load_workload

    problems = []
    if sharding is not None and sharding not in SHARDING_MODES:
        problems.append(f"--sharding {sharding} is not one of {', '.join(SHARDING_MODES)}")
    if profile is not None and profile not in PROFILES:
        problems.append(f"--profile {profile} is not one of {', '.join(sorted(PROFILES))}")
    if etp is not None and etp < 1:
        problems.append("--etp must be >= 1")
    if gpus < 1:
        problems.append("--gpus must be >= 1")
    if not 1 <= oversubscription < math.inf:
        problems.append(f"--oversubscription must be a finite number >= 1 (got "
                        f"{oversubscription})")
    if pod_gpus is not None and pod_gpus < 1:
        problems.append(f"--pod-gpus must be >= 1 (got {pod_gpus})")
    if recompute is not None and recompute not in RECOMPUTE:
        problems.append(f"--recompute {recompute} is not one of {', '.join(RECOMPUTE)}")
    for name, value in degrees.items():
        if value is not None and value < 1:
            problems.append(f"--{name.replace('_', '-')} must be >= 1")
    if problems:
        raise InvalidInstance(problems, "perf")
    workload = load_workload(workload_ref, "--workload")
    catalog = load_catalog()
    if gpu not in catalog.gpu:
        raise InvalidInstance([f"--gpu: unknown GPU system '{gpu}' (known: "
                               f"{', '.join(sorted(catalog.gpu))})"], "perf")
    system = catalog.gpu[gpu]
    network = network_for(catalog, system, switch, oversubscription, pod_gpus)
    given = {k: v for k, v in degrees.items() if v is not None}
    if recompute is not None:
        given["recompute"] = recompute
    options = {k: v for k, v in (("sharding", sharding), ("etp", etp)) if v is not None}
    if len(given) == len(DEGREES) + 1:
        par = Parallelism(**given, **options)
        problems = invalid_degrees(workload, system, par, gpus)
        if problems:
            raise InvalidInstance(problems, "perf")
        result, mode = evaluate(workload, system, network, par, profile=profile), "evaluate"
    else:
        probe = Parallelism(tp=given.get("tp", 1), pp=given.get("pp", 1), dp=1,
                            cp=given.get("cp", 1), ep=given.get("ep", 1),
                            vpp=given.get("vpp", 1), micro_batch=given.get("micro_batch", 1))
        # the probe's 1s stand for degrees left to the search: only the given are checked
        problems = [p for p in invalid_degrees(workload, system, probe)
                    if "dp*cp" not in p and ("pp" in given or not p.startswith("--pp "))]
        if "dp" in given:
            product = given["dp"] * probe.tp * probe.pp * probe.cp
            if product > gpus:
                problems.append(f"--dp {given['dp']} with tp*pp*cp = "
                                f"{probe.tp * probe.pp * probe.cp} needs {product} > "
                                f"--gpus {gpus}")
        if problems:
            raise InvalidInstance(problems, "perf")
        try:
            result = search(workload, system, network, gpus, {**given, **options},
                            profile=profile)
        except ValueError as exc:
            raise InvalidInstance([f"--gpus {gpus}: {exc}"], "perf") from None
        mode = "search"
    mapping = (job_mapping(catalog, system, switch, gpus, result.as_dict())
               if switch is not None else None)
    return PerfDocument(result, switch, mapping, mode, workload.name, gpu, PerfNetwork(
        network.gbps_per_gpu, network.in_network_reduction, network.pod_gpus,
        network.oversubscription))
