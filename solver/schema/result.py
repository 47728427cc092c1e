"""JSON Schema of the result documents (`clusterplan schema --result`): what `solve`,
`place`, `fabric`, `perf` and `reliability` print with --json (and `solve` writes to
design.json). A contract for procurement tools: every listed field is required with its
type; documents may carry more fields (additions are not breaking changes).
Committed as instances/result.schema.json; tests/test_result_schema.py keeps it fresh
and validates every command's output against it.
"""

from __future__ import annotations

from typing import Any

NUM = {"type": "number"}
INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
STATUS = {"enum": ["optimal", "feasible", "infeasible", "no_solution"]}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def obj(fields: dict[str, Any], description: str = "") -> dict[str, Any]:
    """An object whose listed fields are all required."""
    out: dict[str, Any] = {"type": "object", "required": sorted(fields), "properties": fields}
    return out | ({"description": description} if description else {})


def numbers() -> dict[str, Any]:
    """An object of named numbers (a breakdown)."""
    return {"type": "object", "additionalProperties": NUM}


BOM_LINE = obj({"item": STR, "category": STR, "quantity": NUM, "unit_cost_usd": NUM,
                "cost_usd": NUM, "power_w": NUM})
POWER = obj({"it_mw": NUM, "facility_mw": NUM, "annual_energy_twh": NUM},
            "Critical IT and facility power [MW], annual energy [TWh].")
COST = obj({"usd_per_gpu_hour": NUM, "usd_per_million_tokens": NUM, "annual_cost_usd": NUM,
            "annual_cost_breakdown_usd": numbers(),
            "capex_usd": NUM, "equipment_capex_usd": NUM, "facility_capex_usd": NUM,
            "annual_opex_usd": NUM, "tco_usd": NUM, "tco_years": INT})
PARALLELISM = obj({"tp": INT, "pp": INT, "dp": INT, "cp": INT, "ep": INT, "vpp": INT,
                   "micro_batch": INT, "recompute": STR})
JOB_MAPPING = obj({
    "levels": array(obj({"name": STR, "gpus": nullable(INT), "crossing_weight": NUM})),
    "groups": {"type": "object", "additionalProperties": obj({
        "degree": INT, "traffic_mb_per_step": NUM, "factors": numbers(),
        "crosses": array(STR)})},
    "cost": NUM}, "Where the job's parallel groups sit on the fabric (CP-SAT).")

DESIGN = obj({
    "gpu": STR, "gpus": INT, "nodes": INT, "spare_nodes": INT, "switch": STR, "nic": STR,
    "tiers": INT, "pods": INT, "oversubscription": NUM, "oversubscription_requested": NUM,
    "rail_optimized": BOOL, "nic_attachment": STR, "switches_per_tier": array(INT),
    "links_per_tier": array(INT),
    "media": array(obj({"link_class": STR, "medium": STR, "kind": STR, "length_m": NUM,
                        "links": INT})),
    "scalable_units_per_building": {"type": "object", "additionalProperties": INT},
    "job_mapping": nullable(JOB_MAPPING), "pods_in_buildings": BOOL,
    "pod_join": {"enum": ["super", "mesh"]}, "pods_in_halls": BOOL,
    "checkpoint_storage_gbytes_per_s_per_node": NUM,
    "facility": nullable(obj({
        "redundancy": STR, "cooling": STR, "pue": NUM, "site_availability": nullable(NUM),
        "electrical_usd": NUM, "cooling_usd": NUM, "shell_usd": NUM, "capex_usd": NUM},
        "The facility built for the design (electrical, cooling, shell; PUE derived).")),
    "support": nullable({"type": "object"}),
    "spares_pool": obj({"lead_time_days": NUM, "fill_rate": NUM, "parts": numbers(),
                        "cost_usd": NUM}, "The cold-spare parts pool (BOM 'spares').")})

THROUGHPUT = obj({
    "tokens_per_s": NUM, "effective_tokens_per_s": NUM, "mfu": NUM, "goodput": NUM,
    "time_to_train_days": nullable(NUM),
    "performance": obj({"model": STR}, "The performance model's figures of the design."),
    "reliability": obj({"model": STR}, "The reliability model's figures of the design."),
    "milp": obj({"tokens_per_s": NUM, "goodput": NUM, "effective_tokens_per_s": NUM,
                 "mfu": NUM}, "The design MILP's own values.")})

BINDING = obj({"name": STR, "value": NUM, "limit": NUM, "unit": STR, "slack": NUM,
               "binding": BOOL})

PLACEMENT = obj({
    "status": STATUS, "racks": {"type": "object", "additionalProperties": INT},
    "racks_total": INT, "halls_used": array(STR),
    "cables": array(obj({"link_class": STR, "medium": STR, "count": INT,
                         "total_length_m": NUM, "max_length_m": NUM})),
    "optics_capex_usd": NUM, "optics_power_w": NUM, "transceivers": INT,
    "cable_assemblies": INT, "media_lifetime_cost_usd": NUM, "media_failure_cost_usd": NUM,
    "media_failure_cost_note": STR, "max_link_m": NUM, "objective_usd": NUM,
    "objective_bound": NUM, "gap": NUM, "gap_usd": NUM, "bound_method": STR,
    "runtime_s": NUM,
    "bom_media": array(obj({"link_class": STR, "medium": STR, "kind": STR, "links": INT,
                            "longest_m": NUM, "transceivers": INT, "cables": INT,
                            "capex_usd": NUM, "power_w": NUM})),
    "halls": array(obj({"hall": STR, "rows": INT, "positions_per_row": INT,
                        "nodes_per_rack": INT, "unit_width": INT, "unit_slots": INT,
                        "network_rows": array(INT), "power_cap_kw": NUM,
                        "power_kw": NUM})),
    "verified": BOOL}, "Racks on the floor plan, cables by routed length (`place --json`).")
FAILED = obj({"status": {"enum": ["infeasible", "no_solution"]}, "diagnosis": STR},
             "A placement that failed, and why.")

SOLVED = obj({
    "status": {"enum": ["optimal", "feasible"]}, "instance": STR, "instance_sha256": STR,
    "objective": obj({"name": STR, "value": NUM, "unit": STR,
                      "milp_value": nullable(NUM)}),
    "design": DESIGN, "power": POWER, "cost": COST, "throughput": THROUGHPUT,
    "bom": array(BOM_LINE), "binding": array(BINDING), "verified": BOOL,
    "verification": obj({"checks": INT, "failures": array(STR)}),
    "notes": array(STR),
    "solver": obj({"backend": STR, "version": STR, "runtime_s": NUM, "milp_runtime_s": NUM,
                   "gap": nullable(NUM), "best_bound": nullable(NUM), "termination": STR}),
}, "A solved design; with placement also `placement` and `design_estimate`.")
SOLVED["properties"] |= {
    "placement": {"anyOf": [PLACEMENT | {"required": [*PLACEMENT["required"],
                                                      "within_limits"]}, FAILED]},
    "design_estimate": obj({"bom": array(BOM_LINE), "power": POWER, "cost": COST},
                           "The design's BOM, power and cost before placement."),
    "runner_ups": array(obj({"switch": STR, "gpus": INT, "effective_tokens_per_s": NUM,
                             "capex_usd": NUM, "capex_more_usd": NUM, "loss": NUM,
                             "loss_fraction": NUM,
                             "exact": BOOL},
                            "The best design of another technology choice and what it "
                            "loses on the objective (solver.report.runner_ups)."))}
UNSOLVED = obj({"status": {"enum": ["infeasible", "no_solution"]}, "instance": STR,
                "diagnosis": array(STR), "notes": array(STR), "verified": BOOL,
                "solver": obj({"backend": STR, "runtime_s": NUM, "gap": {"type": "null"},
                               "time_limit_s": NUM})},
               "No design: why (infeasible, with the limits that conflict) or no solution "
               "within the time limit.")

FABRIC = obj({
    "gpus": INT, "gpu": STR, "switch": STR, "nic": STR, "gbps": INT, "nodes": INT,
    "ports_per_node": INT, "rail_optimized": BOOL, "endpoints": INT, "radix": INT,
    "tiers": INT, "pod_tiers": INT, "max_endpoints": INT, "pods": INT,
    "pod_join": {"enum": ["super", "mesh"]},
    "oversubscription": NUM, "oversubscription_requested": NUM,
    "switches_per_tier": array(INT), "switches_total": INT,
    "links_per_tier": array(INT),
    "link_classes": array(obj({"name": STR, "links": INT, "length_m": NUM, "medium": STR,
                               "kind": STR, "transceivers": INT, "cables": INT,
                               "capex_usd": NUM, "power_w": NUM})),
    "transceivers": {"type": "object", "additionalProperties": INT},
    "cables": {"type": "object", "additionalProperties": INT},
    "capex_usd": NUM, "power_w": NUM, "capex_breakdown_usd": numbers(),
    "power_breakdown_w": numbers(),
    "frontend": obj({"switch": STR, "gbps": INT, "ports_per_node": INT, "tiers": INT,
                     "switches": INT, "switches_per_tier": array(INT), "links": INT})},
    "`fabric --json`: exact fat tree, media, capex and power.")

PERF = obj({
    "mode": {"enum": ["evaluate", "search"]}, "workload": STR, "gpu": STR, "gpus": INT,
    "step_time_s": NUM, "tokens_per_s": NUM, "model_tflops_per_gpu": NUM, "mfu": NUM,
    "hfu": NUM, "memory_gib_per_gpu": NUM, "fits": BOOL, "parallelism": PARALLELISM,
    "breakdown": numbers(),
    "network": obj({"gbps_per_gpu": NUM, "in_network_reduction": BOOL,
                    "pod_gpus": nullable(INT), "oversubscription": NUM})},
    "`perf --json`: step time, throughput, MFU/HFU, memory of one job.")
PERF["properties"]["mapping"] = nullable(JOB_MAPPING)

RELIABILITY = obj({
    "gpu": STR, "gpus": INT, "nodes": INT, "switch": STR, "workload": STR,
    "rail_optimized": BOOL, "recovery": STR, "params": NUM, "checkpoint_size_gb": NUM,
    "checkpoint_gbps": NUM, "switches": INT, "interruptions_per_day": NUM,
    "mtbf_hours": NUM, "checkpoint_write_s": NUM, "checkpoint_interval_s": NUM,
    "restart_s": NUM, "goodput": NUM, "spare_nodes": INT, "availability": NUM,
    "breakdown": numbers()},
    "`reliability --json`: interruptions, checkpointing, restart, spares, goodput.")
RELIABILITY["properties"]["simulated"] = obj({"goodput": NUM, "ci_low": NUM, "ci_high": NUM,
                                              "runs": INT, "days": NUM, "seed": INT})

PHASED_CLUSTER = obj({
    "plan": STR, "gpu": STR, "switch": STR, "nic": STR, "tiers": INT, "pods": INT,
    "rail_optimized": BOOL, "recovery": STR, "gpus_owned": INT, "nodes_owned": INT,
    "spare_nodes_owned": INT, "gpus_operating": INT, "switches_per_tier_owned": array(INT),
    "tokens_per_s": NUM, "goodput": NUM, "effective_tokens_per_s": NUM,
    "scalable_units_per_building": {"type": "object", "additionalProperties": INT},
    "scalable_units_operating_per_building": {"type": "object", "additionalProperties": INT},
    "decommissioned": BOOL, "spend_usd": NUM, "it_mw": NUM},
    "One GPU system's cluster in one period: what is owned (bought so far) and operating.")

PERIOD = obj({
    "name": STR, "start": STR, "days": NUM, "discount": NUM, "energised_mw": NUM,
    "it_mw": NUM, "facility_built_mw": NUM, "budget_usd": NUM,
    "spend_usd": obj({"equipment": NUM, "facility": NUM, "total": NUM}),
    "gpus_operating": INT, "effective_tokens_per_s": NUM, "tokens": NUM,
    "cumulative_tokens": NUM, "cumulative_flops": NUM, "demand_tokens": nullable(NUM),
    "clusters": array(PHASED_CLUSTER), "verified": BOOL, "check_failures": array(STR)},
    "One period of a phased build-out, checked independently.")

PHASED = obj({
    "status": STATUS, "instance": STR, "verified": BOOL, "notes": array(STR),
    "diagnosis": array(STR),
    "objective": obj({"name": {"enum": ["discounted_cumulative_effective_tokens",
                                        "discounted_capex_usd"]}, "value": NUM,
                      "milp_value": NUM}),
    "periods": array(PERIOD),
    "totals": obj({"spend_usd": NUM, "tokens": NUM, "flops": NUM,
                   "discount_rate_per_year": NUM}),
    "solver": obj({"backend": STR, "termination": STR, "gap": nullable(NUM),
                   "gap_target": NUM, "node_limit": INT, "deterministic": BOOL,
                   "milp_runtime_s": NUM, "runtime_s": NUM,
                   "time_limit_s": NUM})},
    "`solve --json` of an instance with [[periods]] (a phased build-out): what is bought "
    "and operating in each period; gap is proven against the MILP's bound.")

DOCUMENTS = {"solve": {"anyOf": [SOLVED, UNSOLVED, PHASED]},
             "place": {"anyOf": [PLACEMENT, FAILED]}, "fabric": FABRIC, "perf": PERF,
             "reliability": RELIABILITY}
"""The document of each command (solve: also design.json)."""


def result_document_schema() -> dict[str, Any]:
    """The JSON Schema of every command's result document, one $defs entry per command."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "clusterplan result documents",
        "description": __doc__.split("\n\n")[0].replace("\n", " "),
        "anyOf": [{"$ref": f"#/$defs/{name}"} for name in DOCUMENTS],
        "$defs": DOCUMENTS,
    }
