"""Component failure rates and the job's blast radius.

Every component fails as an independent Poisson process with a constant rate
(exponential lifetimes; the field studies report rates, not shapes). The job is
interrupted by any failure of a part it uses:

* node class -- a GPU (incl. HBM), the rest of the node, a back-end NIC, or a
  node-end link (optical or copper) stops its node; the node (for NVL72 systems the
  whole 72-GPU rack) leaves the job for ``node_repair_h`` and a hot spare takes its
  place. Rate per node::

      lambda_node = g*(lambda_gpu + lambda_rest) + L*lambda_nic
                    + L_opt*lambda_optic[kind] + L_cu*lambda_copper[kind]

  with g GPUs per node, L = L_opt + L_cu back-end ports per node.
* leaf class -- a leaf switch takes the node links it carries. Rail-optimized: one
  rail of ``leaf_down_ports`` nodes; middle-of-rack: all links of
  ``leaf_down_ports // L`` nodes. Those nodes are out until the switch is replaced
  (``switch_replace_h``); the job restarts on spares if enough are healthy.
* fabric class -- a spine/core switch or an inter-switch optical link: the fabric
  routes around it (adaptive routing, subnet-manager reroute), but with probability
  phi = fabric_interrupt_fraction the flows it carried break a collective and the job
  restarts on the same nodes; no node is lost.

Interruption rate Lambda = N*lambda_node + leaves*lambda_sw
+ phi*((switches - leaves)*lambda_sw + ISL*lambda_optic[switch kind]) [1/h].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil

from models.reliability.design import ReliabilityInputs


@dataclass(frozen=True)
class ReliabilityRates:
    """Failure rates [1/h] and recovery figures for one GPU system.

    gpu_per_h: per GPU, including its HBM.
    node_rest_per_gpu_h: rest of the node (CPU, memory, PSU, board, drivers), per GPU
        slot, so that a node's share scales with its size (an NVL72 rack has 18 hosts).
    nic_per_h: per back-end NIC port.
    optic_link_per_h: per optical link, by medium kind (multimode, singlemode, aoc...).
    copper_link_per_h: per copper link, by medium kind (dac, acc, aec).
    switch_per_h: per switch.
    fabric_interrupt_fraction: share of spine/core switch and inter-switch link
        failures that interrupt the job (phi).
    detect_s: time to detect a failure and stop the job [s].
    replace_s: time to swap a hot spare into the job [s].
    init_ref_s, init_ref_gpus, init_exponent: job (re)initialisation time
        init(G) = init_ref_s * (G / init_ref_gpus) ** init_exponent [s].
    host_copy_gbytes_per_s_per_gpu: GPU -> host memory copy rate for in-memory
        checkpoints [GB/s].
    node_repair_h: time a failed node is out before it returns to the spare pool [h].
    switch_replace_h: time to replace a failed leaf switch [h].
    """

    gpu_per_h: float
    node_rest_per_gpu_h: float
    nic_per_h: float
    optic_link_per_h: Mapping[str, float]
    copper_link_per_h: Mapping[str, float]
    switch_per_h: float
    fabric_interrupt_fraction: float
    detect_s: float
    replace_s: float
    init_ref_s: float
    init_ref_gpus: float
    init_exponent: float
    host_copy_gbytes_per_s_per_gpu: float
    node_repair_h: float
    switch_replace_h: float


@dataclass(frozen=True)
class FailureClass:
    """A class of interrupting failures with one recovery behaviour.

    rate_per_h: interruptions per hour from this class.
    nodes_lost: nodes each failure removes from the job (0: restart in place).
    out_h: how long the lost nodes stay out [h].
    needs_spare: whether the restart swaps in spare nodes.
    """

    name: str
    rate_per_h: float
    nodes_lost: int
    out_h: float
    needs_spare: bool


def _kind_rate(table: Mapping[str, float], kind: str, what: str) -> float:
    if kind not in table:
        raise ValueError(f"no {what} failure rate for medium kind {kind!r} "
                         f"(known: {', '.join(sorted(table))})")
    return table[kind]


def link_failure_rate(kind: str, rates: ReliabilityRates) -> float:
    """Failure rate of one link of medium ``kind`` [1/h]: the copper table when it lists the
    kind, else the optical one."""
    if kind in rates.copper_link_per_h:
        return rates.copper_link_per_h[kind]
    return _kind_rate(rates.optic_link_per_h, kind, "optical link")


def node_component_rates(inputs: ReliabilityInputs, rates: ReliabilityRates) -> dict[str, float]:
    """Failure rate of one node by component [1/h] (keys sorted)."""
    g = inputs.gpus_per_node
    return {
        "gpu": g * rates.gpu_per_h,
        "nic": inputs.node_links * rates.nic_per_h,
        "node_copper": inputs.node_links_copper
        * _kind_rate(rates.copper_link_per_h, inputs.node_copper_kind, "copper link"),
        "node_optics": inputs.node_links_optical
        * _kind_rate(rates.optic_link_per_h, inputs.node_optic_kind, "optical link"),
        "node_rest": g * rates.node_rest_per_gpu_h,
    }


def node_failure_rate(inputs: ReliabilityInputs, rates: ReliabilityRates) -> float:
    """lambda_node: failures per node-hour that take the node out of the job."""
    return sum(node_component_rates(inputs, rates).values())


def leaf_switches(inputs: ReliabilityInputs) -> int:
    """Leaf switches: ceil(N * L / leaf_down_ports), at most the fabric's switches."""
    return min(inputs.switches, ceil(inputs.nodes * inputs.node_links / inputs.leaf_down_ports))


def leaf_blast_nodes(inputs: ReliabilityInputs) -> int:
    """Nodes one leaf failure stops: a rail of leaf_down_ports nodes (rail-optimized)
    or the leaf_down_ports // L nodes it serves entirely (middle-of-rack)."""
    if inputs.rail_optimized:
        return min(inputs.nodes, inputs.leaf_down_ports)
    return min(inputs.nodes, max(1, inputs.leaf_down_ports // max(1, inputs.node_links)))


def failure_classes(inputs: ReliabilityInputs, rates: ReliabilityRates) -> list[FailureClass]:
    """The interrupting failure classes of a design (node, leaf, fabric)."""
    leaves = leaf_switches(inputs)
    fabric_rate = rates.fabric_interrupt_fraction * (
        (inputs.switches - leaves) * rates.switch_per_h
        + inputs.switch_links_optical
        * _kind_rate(rates.optic_link_per_h, inputs.switch_optic_kind, "optical link"))
    return [
        FailureClass("node", inputs.nodes * node_failure_rate(inputs, rates), 1,
                     rates.node_repair_h, True),
        FailureClass("leaf", leaves * rates.switch_per_h, leaf_blast_nodes(inputs),
                     rates.switch_replace_h, True),
        FailureClass("fabric", fabric_rate, 0, 0.0, False),
    ]


def interruption_breakdown(inputs: ReliabilityInputs, rates: ReliabilityRates) -> dict[str, float]:
    """Job interruptions per day by component class (sums to the total rate x 24)."""
    n = inputs.nodes
    out = {name: 24.0 * n * r for name, r in node_component_rates(inputs, rates).items()}
    leaves = leaf_switches(inputs)
    out["leaf_switch"] = 24.0 * leaves * rates.switch_per_h
    phi = rates.fabric_interrupt_fraction
    out["other_switch"] = 24.0 * phi * (inputs.switches - leaves) * rates.switch_per_h
    out["switch_optics"] = 24.0 * phi * inputs.switch_links_optical * _kind_rate(
        rates.optic_link_per_h, inputs.switch_optic_kind, "optical link")
    return dict(sorted(out.items()))


def interruption_rate_per_h(inputs: ReliabilityInputs, rates: ReliabilityRates) -> float:
    """Lambda: job interruptions per hour, all classes."""
    return sum(c.rate_per_h for c in failure_classes(inputs, rates))
