"""JSON Schema of an instance *file*: the Instance, with a workload given inline or by id,
and `catalog` holding overrides of the shipped catalog rather than a whole catalog."""

from __future__ import annotations

from typing import Any

from solver.schema.instance import Instance


def instance_document_schema() -> dict[str, Any]:
    schema = Instance.model_json_schema()
    props = schema["properties"]
    props["workload"] = {
        "anyOf": [{"$ref": "#/$defs/Workload"},
                  {"type": "string", "description": "id of a workload in instances/workloads/"}],
    }
    props["catalog"] = {
        "type": "object",
        "description": "Overrides of the shipped catalog: catalog.<kind>.<id>.<field> = value "
                       "(kinds: gpu, switch, nic, medium; catalog.facility.<field>). "
                       "A new id must be a complete, sourced item.",
        "additionalProperties": {"type": "object"},
    }
    schema["required"] = [r for r in schema.get("required", []) if r != "catalog"]
    schema["title"] = "clusterplan instance"
    return schema
