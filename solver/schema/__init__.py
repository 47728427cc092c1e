"""Pydantic v2 schema of clusterplan instances and the component catalog."""

from solver.schema.catalog import Catalog, Facility, GpuSystem, Medium, Nic, Source, Switch
from solver.schema.instance import (
    Building,
    CableLengths,
    Choices,
    FabricChoice,
    Instance,
    Limits,
    Objective,
    Period,
    PeriodPrice,
    Reliability,
    Site,
)
from solver.schema.workload import MoE, Workload

__all__ = [
    "Building", "CableLengths", "Catalog", "Choices", "FabricChoice", "Facility", "GpuSystem",
    "Instance", "Limits", "Medium", "MoE", "Nic", "Objective", "Period",
    "PeriodPrice", "Reliability", "Site", "Source",
    "Switch", "Workload",
]
