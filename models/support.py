"""Everything beside the back-end fabric that a cluster needs to run: the converged
front-end/storage Ethernet, the storage system, the out-of-band management network and
the control-plane servers, sized from the design (facility.support_networks = 'sized').

Storage system (all-flash parallel file system appliances):
  W = N x w                                  checkpoint write bandwidth bought [GB/s]
  R = G x peak x 1e12 / F_tok x b_tok / 1e9  dataset read at 100% MFU (an upper bound) [GB/s]
  C = k S / 1000 + D b_tok / 1e12            k retained checkpoints of S GB + the dataset
                                             of D tokens at b_tok bytes each [TB]
  A = max(1, ceil(W / a_w), ceil(R / a_r), ceil(C / a_c))     appliances
with N nodes (spares included), G training GPUs, peak the dense TFLOP/s per GPU at the
workload's precision, F_tok model FLOPs per token, a_w / a_r / a_c an appliance's write,
read [GB/s] and usable capacity [TB].
Front-end/storage network (NVIDIA's converged north-south fabric): every node gets
  p = max(ceil(F / g), ceil(8 (w + R / N) / g)) ports of g Gb/s
(F the node's front-end Gb/s), every appliance its ports, every control-plane server one;
a non-blocking fat tree (models.fabric, middle-of-rack leaves, fewest tiers) of the
front-end switch joins them, each link class built with the cheapest medium that reaches
(the site's typical lengths).
Control plane: max(m, ceil(N / n_cp)) servers (schedulers, head and login nodes).
Out-of-band management: one 1 GbE switch per rack (compute, back-end network and the
support racks here), u uplinks each to aggregation switches of q ports:
  M = racks,   aggregation = ceil(u M / q).
Support racks: enough for the rack units and for the power,
  S = max(ceil((front-end switches x U_sw + A U_a + control servers x 1 U) / 42),
          ceil(W(S) / P)),
W(S) the support design's power with M = racks + S management switches (every line
above), P the smallest rack power of the halls the design stands in: the least S that
holds (W grows with S by a management switch and its share of an aggregation switch, far
less than P, so counting up from the rack-unit bound ends at once). The 1U aggregation
switches sit in their spare space. Placement stands them in network rows as racks of
their own, each drawing W(S) / S (as the design stage counts W in the network's power:
the per-rack management switches and the front-end link ends included).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from models.fabric import Fabric, FabricSpec, MediaLine, MediumLike, choose_media, design_fabric
from models.power_cost import BomLine
from models.space import RACK_UNITS

SUPPORT_CATEGORIES = ("frontend", "storage", "control-plane", "management", "rack-support")
"""BOM categories of a support design's lines (:func:`with_management`)."""


@dataclass(frozen=True)
class StorageSizing:
    write_gbytes_per_s: float
    read_gbytes_per_s: float
    capacity_tb: float
    appliances: int
    bound_by: str
    """Which need sets the appliance count: 'write', 'read', 'capacity' or 'minimum'."""


@dataclass(frozen=True)
class SupportDesign:
    storage: StorageSizing
    frontend: Fabric
    frontend_ports_per_node: int
    frontend_media: tuple[MediaLine, ...]
    control_plane_servers: int
    management_switches: int
    management_aggregation_switches: int
    support_racks: int
    lines: tuple[BomLine, ...]

    @cached_property  # summed once: the candidates of one size share a support design
    def power_w(self) -> float:
        return sum(line.power_w for line in self.lines)

    def summary(self) -> dict[str, Any]:
        s = self.storage
        return {
            "storage": {"appliances": s.appliances, "bound_by": s.bound_by,
                        "write_gbytes_per_s": s.write_gbytes_per_s,
                        "read_gbytes_per_s": s.read_gbytes_per_s,
                        "capacity_tb": s.capacity_tb},
            "frontend": {"ports_per_node": self.frontend_ports_per_node,
                         "tiers": self.frontend.tiers,
                         "switches_per_tier": list(self.frontend.switches_per_tier),
                         "media": {m.link_class: m.medium_id for m in self.frontend_media}},
            "management": {"switches": self.management_switches,
                           "aggregation_switches": self.management_aggregation_switches},
            "control_plane_servers": self.control_plane_servers,
            "support_racks": self.support_racks,
        }


def size_storage(fac: Any, nodes: int, gpus: int, write_gbytes_per_s_per_node: float,
                 peak_tflops: float, flops_per_token: float, checkpoint_gb: float,
                 train_tokens: float | None) -> StorageSizing:
    """The storage system for the design's needs (module docstring)."""
    b_tok = fac.dataset_bytes_per_token
    write = nodes * write_gbytes_per_s_per_node
    read = gpus * peak_tflops * 1e12 / flops_per_token * b_tok / 1e9
    capacity = (fac.checkpoints_retained * checkpoint_gb / 1e3
                + (train_tokens or 0.0) * b_tok / 1e12)
    needs = {"write": math.ceil(write / fac.storage_appliance_write_gbytes_per_s),
             "read": math.ceil(read / fac.storage_appliance_read_gbytes_per_s),
             "capacity": math.ceil(capacity / fac.storage_appliance_usable_tb),
             "minimum": 1}
    bound_by = max(needs, key=lambda k: needs[k])  # ties: the first in this order
    return StorageSizing(write, read, capacity, needs[bound_by], bound_by)


def support_design(fac: Any, switch: Any, media: Sequence[MediumLike],
                   lengths_m: Any, nodes: int, gpus: int, frontend_gbps_per_node: float,
                   write_gbytes_per_s_per_node: float, peak_tflops: float,
                   flops_per_token: float, checkpoint_gb: float,
                   train_tokens: float | None, racks: int,
                   rack_power_w: float = math.inf) -> SupportDesign:
    """Front-end/storage network, storage, management and control plane of a design with
    `nodes` nodes (spares included), `gpus` training GPUs and `racks` compute and
    back-end network racks, in racks of at most `rack_power_w` [W]. `switch`: the
    front-end switch (catalog Switch); `lengths_m(fabric)`: routed length of each link
    class of a fabric [m]."""
    return with_management(fac, support_core(
        fac, switch, media, lengths_m, nodes, gpus, frontend_gbps_per_node,
        write_gbytes_per_s_per_node, peak_tflops, flops_per_token, checkpoint_gb,
        train_tokens), racks, rack_power_w)


@dataclass(frozen=True)
class SupportCore:
    """What the support of a design is without its management network, which alone
    depends on the racks (:func:`with_management`)."""

    switch: Any
    storage: StorageSizing
    frontend: Fabric
    frontend_ports_per_node: int
    frontend_media: tuple[MediaLine, ...]
    control_plane_servers: int
    support_racks: int
    """The racks their rack units take (:func:`with_management` adds racks for power)."""
    lines: tuple[BomLine, ...]
    """Front-end switches and links, storage and control plane (the management network's
    lines go after them, the support racks last)."""


def support_core(fac: Any, switch: Any, media: Sequence[MediumLike], lengths_m: Any,
                 nodes: int, gpus: int, frontend_gbps_per_node: float,
                 write_gbytes_per_s_per_node: float, peak_tflops: float,
                 flops_per_token: float, checkpoint_gb: float,
                 train_tokens: float | None) -> SupportCore:
    """Storage, front-end/storage network, control plane and support racks of
    :func:`support_design` (its arguments but the racks)."""
    g = fac.frontend_port_gbps
    storage = size_storage(fac, nodes, gpus, write_gbytes_per_s_per_node, peak_tflops,
                           flops_per_token, checkpoint_gb, train_tokens)
    per_node_gbps = 8 * (write_gbytes_per_s_per_node + storage.read_gbytes_per_s / nodes)
    ports = max(math.ceil(frontend_gbps_per_node / g), math.ceil(per_node_gbps / g))
    control = max(fac.control_plane_min_servers,
                  math.ceil(nodes / fac.control_plane_nodes_per_server))
    endpoints = nodes * ports + storage.appliances * fac.storage_appliance_ports + control
    frontend = design_fabric(FabricSpec(nodes=endpoints, ports_per_node=1,
                                        radix=switch.radix(g), rail_optimized=False))
    fe_media = choose_media(frontend, lengths_m(frontend), media, g)
    support_racks = math.ceil((frontend.switches_total * switch.rack_units
                               + storage.appliances * fac.storage_appliance_rack_units
                               + control) / RACK_UNITS)
    lines = (
        BomLine(f"{switch.id} front-end/storage switch", "frontend",
                frontend.switches_total, switch.price_usd, switch.power_w),
        *(BomLine(f"{m.medium_id} front-end link ({m.link_class}, {m.length_m:g} m)",
                  "frontend", m.links, m.capex_usd / m.links, m.power_w / m.links)
          for m in fe_media),
        BomLine(f"all-flash storage appliance ({storage.bound_by}-bound)", "storage",
                storage.appliances, fac.storage_appliance_usd, fac.storage_appliance_w),
        BomLine("control-plane server", "control-plane", control, fac.control_plane_usd,
                fac.control_plane_w),
    )
    return SupportCore(switch, storage, frontend, ports, fe_media, control, support_racks,
                       lines)


def with_management(fac: Any, core: SupportCore, racks: int,
                    rack_power_w: float = math.inf) -> SupportDesign:
    """The support design of ``core`` with the management network of ``racks`` compute
    and back-end network racks and the support racks, as many as its rack units and its
    power at ``rack_power_w`` a rack [W] need (module doc)."""
    support_racks = core.support_racks
    while True:
        lines = _support_lines(fac, core, racks, support_racks)
        need = math.ceil(sum(x.power_w for x in lines) / rack_power_w - 1e-9)
        if need <= support_racks:
            break
        support_racks = need
    mgmt = racks + support_racks
    return SupportDesign(core.storage, core.frontend, core.frontend_ports_per_node,
                         core.frontend_media, core.control_plane_servers, mgmt,
                         _aggregation(fac, mgmt), support_racks,
                         tuple(line for line in lines if line.quantity > 0))


def _aggregation(fac: Any, mgmt: int) -> int:
    return math.ceil(fac.management_uplinks_per_switch * mgmt / fac.management_aggregation_ports)


def _support_lines(fac: Any, core: SupportCore, racks: int, support_racks: int
                   ) -> list[BomLine]:
    """``core``'s lines, the management network of ``racks + support_racks`` racks and
    the support racks."""
    return [
        *core.lines,
        *management_lines(fac, racks + support_racks),
        BomLine("support rack (front-end/storage/control plane)", "rack-support",
                support_racks, fac.rack_usd),
    ]


def management_lines(fac: Any, racks: int) -> list[BomLine]:
    """The out-of-band management network of ``racks`` racks (every rack, the support
    racks included): a switch per rack, its uplinks and the aggregation switches."""
    uplinks = fac.management_uplinks_per_switch
    return [
        BomLine("out-of-band management switch (1 per rack)", "management", racks,
                fac.management_switch_usd, fac.management_switch_w),
        BomLine("management aggregation switch", "management", _aggregation(fac, racks),
                fac.management_aggregation_usd, fac.management_aggregation_w),
        BomLine("management uplink", "management", uplinks * racks,
                fac.management_uplink_usd),
    ]
