"""Exact scale-out fabric model: folded-Clos (fat-tree) switch, link and media counts.

Notation: ``k`` is the switch radix at the link speed, ``h = k/2``. A non-top switch uses
``h`` ports down and ``h`` ports up (non-blocking); a top-tier switch uses all ``k`` ports
down. An ``L``-tier tree therefore attaches at most ``2·h^L`` endpoints
(:func:`max_endpoints`): ``k=64`` gives 2,048 (2 tiers) and 65,536 (3 tiers); ``k=128``
gives 8,192 and 524,288. A full 3-tier ``k``-ary fat tree has ``5k²/4`` switches.

Construction (bottom-up, exact for partial builds):

* **Leaves.** Rail-optimized: each leaf carries one rail of ``h`` nodes, so a scalable
  unit of ``h`` nodes needs ``ports_per_node`` leaves and ``leaves = rails·⌈nodes/h⌉``.
  Middle-of-rack: each leaf serves all ports of ``⌊h/ports_per_node⌋`` whole nodes.
  Every deployed leaf is wired with all ``h`` uplinks (NVIDIA builds the full scalable
  unit's leaf-spine cabling even when it is partly populated), except in a pod smaller
  than one unit (below).
* **Groups and planes.** Tier-``t`` switches come in groups; a tier-``(t+1)`` group joins
  up to ``h`` tier-``t`` groups. Plane ``j`` of a group is the ``j``-th switch of each of
  its ``m`` sub-groups. The plane gets ``S`` upper switches with ``S | h``, each lower
  switch sending ``h/S`` links to each of them (balanced Clos wiring), and ``S`` is the
  fewest divisor satisfying the upper switches' down-port budget ``m·h/S ≤ h``.
* **Top tier.** The top joins up to ``2h`` groups (down budget ``k``). Planes with the same
  ``m`` may share top switches: ``c`` planes per top group with ``c·m·h/S ≤ k``; the
  count is ``⌈planes/c⌉·S``, minimised over ``S | h``.
* **Pods.** The cluster splits into ``pods`` equal pods (each built for ``⌈nodes/pods⌉``
  nodes), each an ``L``-tier tree whose top switches keep ports for uplinks. ``R``
  (oversubscription) is the ratio of a pod's endpoints ``E_pod`` to the links leaving
  it, so the pod tops carry ``≥ E_pod/R`` uplinks: a pod-top switch with ``d`` downlinks
  has ``u ≥ ⌈d/R'⌉`` uplinks and ``d + u ≤ k``, with ``R' = R·D_pod/E_pod`` over the
  ``D_pod`` downlinks of the pod's top tier (``R' = R`` for pods of whole scalable
  units; larger where the leaves' full-unit cabling exceeds the pod's endpoints). A pod
  smaller than one scalable unit is built in 2 tiers when it fits: it never grows into
  the rest of its unit, so each leaf is wired with the fewest uplinks ``e | h`` covering
  the ports its nodes use on it (``e = n`` for ``n | h`` nodes rail-optimized, so
  ``D_pod = E_pod``), not a full unit's ``h``. The wired ratio
  ``E_pod/uplinks`` (:attr:`Fabric.wired_oversubscription`) is at most ``R`` (uplinks
  round up). A single super tier joins the pods: the same
  pod-top position across all pods forms a plane of ``pods`` switches, planes share
  super switches as in the top tier. Pod-top and super sizes are chosen together to use
  the fewest switches; a larger ``R`` only enlarges the feasible set, so it never adds
  switches.
* **Pods joined by a mesh** (``pod_join = "mesh"``: an oversubscribed top tier without an
  extra tier): no super switches; the same pod-top position across the pods forms a full
  mesh, each pod-top switch sending ``u/(P−1)`` links straight to its peer in each other
  pod, so ``u ≥ ⌈d/R'⌉`` is rounded up to a multiple of ``P−1`` (``d + u ≤ k``). A pod
  still has ``E_pod/R`` links leaving it (rounded up), but each joins two pods: the mesh has
  ``P·(pod-top uplinks)/2 = E/(2R)`` links (the super tier: ``E/R``, and its switches).
  It is counted as a switch tier of 0 switches whose links are the mesh (class
  ``<top>-<top>``, e.g. ``spine-spine`` for pods of 2 tiers), so every per-tier count
  keeps its shape; a packet crosses no tier above the pod tops.

Units: counts are whole switches / links; lengths in metres, money in USD, power in W.
Every function is pure and fast (no I/O); it is called for thousands of candidate sizes.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Protocol

TIER_NAMES: tuple[str, ...] = ("node", "leaf", "spine", "core", "super", "hyper", "apex")
"""Names of the levels, node first; link class ``t`` is ``f"{TIER_NAMES[t-1]}-{TIER_NAMES[t]}"``.

So the keys of ``lengths_m`` for :func:`choose_media` are, in tier order: ``node-leaf``,
``leaf-spine``, ``spine-core``, ``core-super``, ``super-hyper``, ``hyper-apex``. With pods,
the last class of the fabric is the one that joins the pods (e.g. ``core-super`` for pods
of 3 tiers)."""

MAX_TIERS = len(TIER_NAMES) - 1


@dataclass(frozen=True)
class FabricSpec:
    nodes: int
    """Compute nodes attached (spares included by the caller)."""
    ports_per_node: int
    """Back-end NIC ports per node = rails (8 for HGX, 72 for an NVL72 rack)."""
    radix: int
    """Switch ports at the link speed."""
    tiers: int | None = None
    """Switch tiers (per pod when pods > 1); None = the fewest that fit."""
    pods: int = 1
    """Pods joined by an oversubscribed top tier."""
    oversubscription: float = 1.0
    """Down:up ratio of the pods' uplinks (1 = non-blocking)."""
    rail_optimized: bool = True
    pod_join: str = "super"
    """How pods are joined: 'super' (a tier of super switches) or 'mesh' (the pod tops'
    uplinks straight to their peers in the other pods, no extra switches)."""


@dataclass(frozen=True)
class LinkClass:
    name: str
    """``node-leaf``, ``leaf-spine``, ``spine-core``, ``core-super``, ... (tier order)."""
    tier: int
    """1 = node-to-leaf; ``t`` = links arriving at tier ``t`` from below."""
    links: int


@dataclass(frozen=True)
class Fabric:
    spec: FabricSpec
    endpoints: int
    """Node ports attached = nodes · ports_per_node."""
    radix: int
    tiers: int
    """Switch tiers a packet may cross, the pods' super tier included."""
    max_endpoints: int
    """Endpoints this radix/tier/pod structure can attach when fully built."""
    pods: int
    pod_tiers: int
    """Tiers inside one pod (= ``tiers`` when ``pods == 1``)."""
    switches_per_tier: tuple[int, ...]
    """Leaf first."""
    links_per_tier: tuple[int, ...]
    """Node-to-leaf first; entry ``t`` counts the links arriving at tier ``t+1``."""
    uplinks_per_tier: tuple[int, ...]
    """Links leaving each tier upwards (0 for the top), counted from the upper ends."""
    max_ports_used_per_tier: tuple[int, ...]
    """Most ports (down + up) any one switch of the tier uses; never above ``radix``."""
    link_classes: tuple[LinkClass, ...]

    @property
    def switches_total(self) -> int:
        return sum(self.switches_per_tier)

    @property
    def leaf_uplinks(self) -> int:
        """Uplinks of each leaf (all leaves alike): ``h``, fewer in a pod smaller than one
        scalable unit; 0 for a single switch."""
        return self.uplinks_per_tier[0] // self.switches_per_tier[0]

    @property
    def wired_oversubscription(self) -> float:
        """Endpoints of one pod (built for ``⌈nodes/pods⌉`` nodes) over the links leaving
        it: the down:up ratio the pods are wired with, at most ``spec.oversubscription``
        (uplinks round up); 1 without pods."""
        if self.pods == 1:
            return 1.0
        pod_endpoints = math.ceil(self.spec.nodes / self.pods) * self.spec.ports_per_node
        return pod_endpoints * self.pods / self.uplinks_per_tier[self.pod_tiers - 1]

    @property
    def mesh(self) -> bool:
        """The pods are joined by a mesh of their top switches (a top tier of 0 switches)."""
        return self.pods > 1 and self.spec.pod_join == "mesh"


def max_endpoints(radix: int, tiers: int) -> int:
    """Endpoints of a full non-blocking ``tiers``-tier fat tree: ``2·(k/2)^L``."""
    _check_radix(radix)
    if tiers < 1:
        raise ValueError(f"tiers must be >= 1, got {tiers}")
    return 2 * (radix // 2) ** tiers


def fewest_tiers(endpoints: int, radix: int) -> int:
    """Smallest ``L`` with ``2·(k/2)^L ≥ endpoints``."""
    if endpoints < 1:
        raise ValueError(f"endpoints must be >= 1, got {endpoints}")
    _check_radix(radix)
    tiers = 1
    while max_endpoints(radix, tiers) < endpoints:
        tiers += 1
        if tiers > MAX_TIERS:
            raise ValueError(f"{endpoints} endpoints need more than {MAX_TIERS} tiers of "
                             f"radix-{radix} switches")
    return tiers


def scalable_unit_nodes(radix: int, ports_per_node: int, rail_optimized: bool) -> int:
    """Nodes served by one leaf group, the natural build step.

    Rail-optimized: ``k/2`` nodes (one leaf per rail). Middle-of-rack: the
    ``⌊(k/2)/ports_per_node⌋`` whole nodes one leaf serves.
    """
    _check_radix(radix)
    half = radix // 2
    if rail_optimized:
        return half
    per_leaf = half // ports_per_node
    if per_leaf < 1:
        raise ValueError(f"middle-of-rack needs ports_per_node <= radix/2 "
                         f"({ports_per_node} > {half}); use rail-optimized wiring")
    return per_leaf


def _check_radix(radix: int) -> None:
    if radix < 2 or radix % 2:
        raise ValueError(f"radix must be an even number >= 2, got {radix}")


@cache
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def _fewest_divisor_at_least(n: int, need: int) -> int:
    """Smallest divisor of ``n`` that is ``≥ need`` (``need ≤ n``): bisection of the
    ascending divisors."""
    divisors = _divisors(n)
    return divisors[bisect.bisect_left(divisors, need)]


@dataclass(frozen=True)
class _Level:
    """The switch groups of one tier: ``full`` identical groups of ``full_size`` switches,
    then at most one trailing partial group of ``last_size`` switches (0 = none)."""

    full: int
    full_size: int
    last_size: int

    @property
    def switches(self) -> int:
        return self.full * self.full_size + self.last_size

    @property
    def groups(self) -> int:
        return self.full + (1 if self.last_size else 0)


def _plane_classes(full: int, full_size: int, last_size: int) -> list[tuple[int, int]]:
    """(planes, sub-groups per plane) for a group of ``full`` sub-groups of ``full_size``
    switches plus one of ``last_size`` (≤ full_size; 0 = absent)."""
    if full == 0:
        return [(last_size, 1)]
    if last_size == 0:
        return [(full_size, full)]
    return [(n, m) for n, m in ((last_size, full + 1), (full_size - last_size, full)) if n]


def _middle_group(half: int, classes: list[tuple[int, int]]) -> tuple[int, int, int]:
    """Switches, downlinks and most ports used of one non-top group over its planes."""
    switches = down = most = 0
    for planes, m in classes:
        s = _fewest_divisor_at_least(half, m)
        switches += planes * s
        down += planes * m * half
        most = max(most, m * half // s + half)
    return switches, down, most


def _middle_level(below: _Level, half: int) -> tuple[_Level, int, int]:
    """Next tier up: chunk the groups below into groups of ``half`` sub-groups."""
    chunks, rest = divmod(below.full, half)
    size = down = most = 0
    if chunks:
        size, d, most = _middle_group(half, _plane_classes(half, below.full_size, 0))
        down = chunks * d
    last = 0
    if rest or below.last_size:
        last, d, m = _middle_group(
            half, _plane_classes(rest, below.full_size, below.last_size))
        down += d
        most = max(most, m)
    return _Level(chunks, size, last), down, most


def _fewest_bins(small: int, big: int, m: int, cap: int) -> int | None:
    """Fewest bins of capacity ``cap`` holding ``small`` items of size ``m`` and ``big``
    of size ``m+1``; None if an item does not fit.

    A bin with ``t`` items holds at most ``g(t) = min(t, cap - t·m)`` big ones; ``g`` is
    concave, so spreading the items evenly over ``B`` bins maximises the big items they
    hold, and the smallest feasible ``B`` is exact (hence monotone in the items).
    """
    if m > cap or (big and m + 1 > cap):
        return None
    items = small + big
    per = cap // m
    bins = max(-(-(small * m + big * (m + 1)) // cap), -(-items // per))
    while True:
        t0, r = divmod(items, bins)
        if t0 + (r > 0) <= per and (
                r * min(t0 + 1, cap - (t0 + 1) * m) + (bins - r) * min(t0, cap - t0 * m)
                >= big):
            return bins
        bins += 1


@lru_cache(maxsize=65536)
def _shared_top(small: int, big: int, m: int, up_each: int, radix: int) -> tuple[int, int]:
    """Fewest top switches over planes of lower switches with ``up_each`` uplinks each:
    ``small`` planes of ``m`` lower switches and ``big`` planes of ``m+1``.

    Top switches come in groups of ``S | up_each``; every lower switch of a group's planes
    sends ``up_each/S`` links to each of the ``S`` (balanced wiring), so a group takes
    planes whose lower switches sum to at most ``⌊k/(up_each/S)⌋`` (bin packing, exact).
    Returns (switches, most ports used on one top switch); (0, 0) if impossible.
    """
    best = (0, 0)
    for s in _divisors(up_each):
        per_link = up_each // s
        cap = radix // per_link
        bins = _fewest_bins(small, big, m, cap)
        if bins is None:
            continue
        if best == (0, 0) or bins * s < best[0]:
            fullest = -(-(small + big) // bins)
            best = (bins * s, min(cap, fullest * m + min(fullest, big)) * per_link)
    return best


def _top_level(below: _Level, half: int, radix: int) -> tuple[int, int, int]:
    """The top tier over every group below: switches, downlinks, most ports used."""
    classes = _plane_classes(below.full, below.full_size, below.last_size)
    low = min(m for _, m in classes)
    small = sum(n for n, m in classes if m == low)
    big = sum(n for n, m in classes if m != low)
    switches, most = _shared_top(small, big, low, half, radix)
    down = sum(n * m * half for n, m in classes)
    return switches, down, most


@lru_cache(maxsize=65536)
def _pod_top_and_super(planes: int, m: int, up_each: int, radix: int, pods: int,
                       ratio: float) -> tuple[int, int, int, int, int] | None:
    """Pod-top switches per pod and super switches for one plane class, chosen together.

    Each plane of a pod has ``S | e`` pod-top switches (``e`` = uplinks of each of the
    plane's ``m`` lower switches) with ``d = m·e/S`` downlinks and ``u ≥ ⌈d/R⌉``
    uplinks, ``d + u ≤ k``. Returns (pod-top per pod, uplinks per pod, super switches,
    pod-top most ports, super most ports), or None if impossible.
    """
    best: tuple[int, int, int, int, int] | None = None
    best_key: tuple[int, int] | None = None
    for s in _divisors(up_each):
        d = m * up_each // s
        for u in range(max(1, math.ceil(d / ratio - 1e-9)), radix - d + 1):
            supers, used = _shared_top(planes * s, 0, pods, u, radix)
            if supers == 0:
                continue
            key = (pods * planes * s + supers, u)
            if best_key is None or key < best_key:
                best_key = key
                best = (planes * s, planes * s * u, supers, d + u, used)
    return best


def _leaves(spec: FabricSpec, nodes: int, half: int) -> int:
    per_leaf = scalable_unit_nodes(spec.radix, spec.ports_per_node, spec.rail_optimized)
    if spec.rail_optimized:
        return spec.ports_per_node * math.ceil(nodes / per_leaf)
    return math.ceil(nodes / per_leaf)


def _leaf_capacity(tiers: int, half: int) -> int:
    """Most leaves an L-tier tree (L ≥ 2) joins: ``2·h^(L-1)``."""
    return 2 * half ** (tiers - 1)


def _check_spec(spec: FabricSpec) -> None:
    problems = []
    if spec.nodes < 1:
        problems.append(f"nodes must be >= 1 (got {spec.nodes})")
    if spec.ports_per_node < 1:
        problems.append(f"ports_per_node must be >= 1 (got {spec.ports_per_node})")
    if spec.radix < 2 or spec.radix % 2:
        problems.append(f"radix must be an even number >= 2 (got {spec.radix})")
    if spec.tiers is not None and not 1 <= spec.tiers <= MAX_TIERS - (spec.pods > 1):
        problems.append(f"tiers must be 1..{MAX_TIERS - (spec.pods > 1)} (got {spec.tiers})")
    if spec.pods < 1:
        problems.append(f"pods must be >= 1 (got {spec.pods})")
    if spec.pod_join not in ("super", "mesh"):
        problems.append(f"pod_join must be 'super' or 'mesh' (got {spec.pod_join!r})")
    if not spec.oversubscription >= 1 or math.isinf(spec.oversubscription):
        problems.append(f"oversubscription must be a finite number >= 1 "
                        f"(got {spec.oversubscription})")
    if problems:
        raise ValueError("invalid fabric spec: " + "; ".join(problems))


def design_fabric(spec: FabricSpec) -> Fabric:
    """Exact switch and link counts per tier for ``spec``; ValueError if it cannot be built."""
    _check_spec(spec)
    if spec.pods > 1:
        return _design_pods(spec)
    endpoints = spec.nodes * spec.ports_per_node
    half = spec.radix // 2
    if spec.tiers == 1 or (spec.tiers is None and endpoints <= spec.radix):
        if endpoints > spec.radix:
            raise ValueError(f"{endpoints} endpoints do not fit one {spec.radix}-port switch "
                             f"(1 tier); need {fewest_tiers(endpoints, spec.radix)} tiers")
        return _assemble(spec, endpoints, max_endpoints(spec.radix, 1), 1, 1,
                         [1], [endpoints], [0], [endpoints])
    leaves = _leaves(spec, spec.nodes, half)
    tiers = spec.tiers if spec.tiers is not None else _fewest_leaf_tiers(leaves, half)
    if leaves > _leaf_capacity(tiers, half):
        raise ValueError(
            f"{spec.nodes} nodes x {spec.ports_per_node} ports need {leaves} leaves; a "
            f"{tiers}-tier radix-{spec.radix} fabric holds {_leaf_capacity(tiers, half)} "
            f"({max_endpoints(spec.radix, tiers)} endpoints); use "
            f"{_fewest_leaf_tiers(leaves, half)} tiers or pods")
    switches, down, up, most = _tree(leaves, tiers, half, spec.radix)
    links = [endpoints, *down[1:]]
    most[0] = max(most[0], _leaf_down_used(spec, spec.nodes, half) + half)
    return _assemble(spec, endpoints, max_endpoints(spec.radix, tiers), 1, tiers,
                     switches, links, up, most)


def _fewest_leaf_tiers(leaves: int, half: int) -> int:
    tiers = 2
    while _leaf_capacity(tiers, half) < leaves:
        tiers += 1
        if tiers > MAX_TIERS:
            raise ValueError(f"{leaves} leaves need more than {MAX_TIERS} tiers of "
                             f"radix-{2 * half} switches")
    return tiers


def _leaf_down_used(spec: FabricSpec, nodes: int, half: int) -> int:
    """Most ports one leaf uses down for a tree (or pod) of ``nodes`` nodes."""
    if spec.rail_optimized:
        return min(half, nodes)
    return min(half // spec.ports_per_node, nodes) * spec.ports_per_node


def _pod_leaf_uplinks(spec: FabricSpec, pod_nodes: int, tiers: int, half: int) -> int:
    """Uplinks of each leaf of a pod of ``pod_nodes`` nodes and ``tiers`` tiers: ``h``, or
    in a 2-tier pod smaller than one scalable unit the fewest ``e | h`` covering the ports
    its nodes use on the leaf (rail-optimized ``n``, middle-of-rack ``n·ports``; ``e | h``
    keeps the wiring to the pod tops balanced and the counts monotone in ``n``)."""
    small = pod_nodes < scalable_unit_nodes(spec.radix, spec.ports_per_node,
                                            spec.rail_optimized)
    if not small or tiers != 2:
        return half
    return _fewest_divisor_at_least(half, _leaf_down_used(spec, pod_nodes, half))


def _lower_tiers(leaves: int, tiers: int, half: int, leaf_up: int | None = None
                 ) -> tuple[_Level, list[int], list[int], list[int], list[int]]:
    """The leaf tier and every middle tier below the top of an L-tier tree: the highest
    middle level and switches, downlinks, uplinks and most ports used per tier.
    ``leaf_up``: uplinks of each leaf (default ``h``; fewer only without middle tiers)."""
    leaf_up = half if leaf_up is None else leaf_up
    level = _Level(leaves, 1, 0)
    switches, down, up, most = [leaves], [0], [leaves * leaf_up], [leaf_up]
    for _ in range(2, tiers):
        level, d, m = _middle_level(level, half)
        switches.append(level.switches)
        down.append(d)
        up.append(level.switches * half)
        most.append(m)
    return level, switches, down, up, most


def _tree(leaves: int, tiers: int, half: int,
          radix: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """Switches, downlinks, uplinks and most ports used per tier of an L-tier tree whose
    top uses all ports down (L ≥ 2)."""
    level, switches, down, up, most = _lower_tiers(leaves, tiers, half)
    top, d, m = _top_level(level, half, radix)
    switches.append(top)
    down.append(d)
    up.append(0)
    most.append(m)
    return switches, down, up, most


def _design_pods(spec: FabricSpec) -> Fabric:
    """``pods`` equal pods of ``L`` tiers joined by one oversubscribed super tier."""
    endpoints = spec.nodes * spec.ports_per_node
    half = spec.radix // 2
    pod_nodes = math.ceil(spec.nodes / spec.pods)
    leaves = _leaves(spec, pod_nodes, half)
    if spec.tiers == 1:
        raise ValueError("pods need at least 2 tiers each (leaf and pod top)")
    if spec.pods > spec.radix:
        raise ValueError(f"{spec.pods} pods exceed the {spec.radix} ports of a super switch")
    if spec.pod_join == "mesh" and spec.pods > spec.radix // 2:
        raise ValueError(f"a mesh of {spec.pods} pods needs {spec.pods - 1} uplinks on each "
                         f"pod top, more than half its {spec.radix} ports")
    if spec.tiers is not None:
        tiers = spec.tiers
        result = _pod_structure(pod_nodes, tiers, spec)
        if result is None:
            raise ValueError(
                f"a pod of {pod_nodes} nodes x {spec.ports_per_node} ports ({leaves} leaves) "
                f"does not fit {tiers} tiers at radix {spec.radix} with "
                f"{spec.oversubscription}:1 uplinks")
    else:
        tiers, result = 2, _pod_structure(pod_nodes, 2, spec)
        while result is None:
            tiers += 1
            if tiers > MAX_TIERS - 1:
                raise ValueError(f"a pod of {pod_nodes} nodes does not fit "
                                 f"{MAX_TIERS - 1} tiers at radix {spec.radix}")
            result = _pod_structure(pod_nodes, tiers, spec)
    switches, down, up, most, pod_capacity = result
    links = [endpoints, *down[1:]]
    most[0] += _leaf_down_used(spec, pod_nodes, half)
    return _assemble(spec, endpoints, spec.pods * pod_capacity, spec.pods, tiers,
                     switches, links, up, most)


def _pod_structure(pod_nodes: int, tiers: int, spec: FabricSpec
                   ) -> tuple[list[int], list[int], list[int], list[int], int] | None:
    """Whole-cluster per-tier counts for pods of ``pod_nodes`` nodes and ``tiers`` tiers,
    or None if a pod does not fit. Also returns the endpoints one pod of this shape can
    hold when fully built."""
    pods, radix, half = spec.pods, spec.radix, spec.radix // 2
    mesh = spec.pod_join == "mesh"
    leaves = _leaves(spec, pod_nodes, half)
    leaf_up = _pod_leaf_uplinks(spec, pod_nodes, tiers, half)
    level, switches, down, up, most = _lower_tiers(leaves, tiers, half, leaf_up)
    classes = _plane_classes(level.full, level.full_size, level.last_size)
    up_each = leaf_up if tiers == 2 else half  # of each switch below the pod top
    pod_down = sum(p * m * up_each for p, m in classes)
    # R per pod-top switch so that the pod's uplinks carry its endpoints at R (E_pod/R)
    ratio = spec.oversubscription * pod_down / (pod_nodes * spec.ports_per_node)
    if leaves > _most_top_plane(radix, ratio, pods, mesh) * half ** (tiers - 2):
        return None
    tops = top_up = supers = top_most = super_most = 0
    for planes, m in classes:
        best = (_pod_top_mesh(planes, m, up_each, radix, pods, ratio) if mesh
                else _pod_top_and_super(planes, m, up_each, radix, pods, ratio))
        if best is None:
            return None
        n, u, s, tm, sm = best
        tops, top_up, supers = tops + n, top_up + u, supers + s
        top_most, super_most = max(top_most, tm), max(super_most, sm)
    capacity = _most_top_plane(radix, spec.oversubscription, pods, mesh) * half ** (tiers - 1)
    switches = [pods * x for x in switches] + [pods * tops, supers]
    # the mesh's links each join two pod tops; the super tier's arrive from one
    top_links = pods * top_up // 2 if mesh else pods * top_up
    down = [pods * x for x in down] + [pods * pod_down, top_links]
    up = [pods * x for x in up] + [pods * top_up, 0]
    most += [top_most, super_most]
    return switches, down, up, most, capacity


@lru_cache(maxsize=4096)
def _most_top_plane(radix: int, ratio: float, pods: int, mesh: bool) -> int:
    """Most lower switches one pod-top plane joins: the largest ``m`` with
    ``m + u(m) ≤ k`` (``S`` = every lower switch's uplinks, so ``d = m``); 0 if none."""
    return max((m for m in range(1, radix + 1)
                if m + _pod_top_uplinks(m, ratio, pods, mesh) <= radix), default=0)


def _pod_top_uplinks(d: int, ratio: float, pods: int, mesh: bool) -> int:
    """Uplinks of a pod-top switch with ``d`` downlinks: ``⌈d/R⌉``, in a mesh rounded up to
    a multiple of ``P−1`` (the same links to each peer pod)."""
    u = max(1, math.ceil(d / ratio - 1e-9))
    return -(-u // (pods - 1)) * (pods - 1) if mesh else u


@lru_cache(maxsize=65536)
def _pod_top_mesh(planes: int, m: int, up_each: int, radix: int, pods: int,
                  ratio: float) -> tuple[int, int, int, int, int] | None:
    """Pod-top switches per pod for one plane class when the pods are joined by a mesh:
    each plane has ``S | e`` pod tops with ``d = m·e/S`` downlinks and
    :func:`_pod_top_uplinks` uplinks, ``d + u ≤ k``; the fewest pod tops. Returns (pod tops
    per pod, uplinks per pod, 0 super switches, pod-top most ports, 0), or None if
    impossible."""
    for s in _divisors(up_each):
        d = m * up_each // s
        u = _pod_top_uplinks(d, ratio, pods, mesh=True)
        if d + u <= radix:
            return planes * s, planes * s * u, 0, d + u, 0
    return None


def _assemble(spec: FabricSpec, endpoints: int, capacity: int, pods: int, pod_tiers: int,
              switches: list[int], links: list[int], up: list[int],
              most: list[int]) -> Fabric:
    names = [f"{TIER_NAMES[t]}-{TIER_NAMES[t + 1]}" for t in range(len(switches))]
    if pods > 1 and spec.pod_join == "mesh":  # pod top to pod top
        names[-1] = f"{TIER_NAMES[pod_tiers]}-{TIER_NAMES[pod_tiers]}"
    classes = tuple(LinkClass(name, t + 1, links[t]) for t, name in enumerate(names))
    return Fabric(spec=spec, endpoints=endpoints, radix=spec.radix, tiers=len(switches),
                  max_endpoints=capacity, pods=pods, pod_tiers=pod_tiers,
                  switches_per_tier=tuple(switches), links_per_tier=tuple(links),
                  uplinks_per_tier=tuple(up), max_ports_used_per_tier=tuple(most),
                  link_classes=classes)


@dataclass(frozen=True)
class LeafGroup:
    """The leaves one tier-2 switch group joins, and that group's tier-2 switches.

    Tier 2 is the spine of a 3-or-more-tier tree, or the top of a 2-tier tree or pod.
    Leaves are numbered in build order inside their pod: rail-optimized, scalable unit
    ``u`` owns leaves ``u·rails … u·rails + rails − 1``; middle-of-rack, leaf ``i``
    serves nodes ``i·⌊h/ports⌋ …``."""

    pod: int
    first_leaf: int
    """Index of the group's first leaf inside its pod."""
    leaves: int
    spines: int


def pod_tiers(tiers: int, pods: int) -> int:
    """Switch tiers inside one pod of a fabric with ``tiers`` tiers in all (the
    ``FabricSpec.tiers`` that builds it): one fewer with pods, whose super tier joins
    them."""
    return tiers - 1 if pods > 1 else tiers


def pod_nodes(spec: FabricSpec) -> tuple[int, ...]:
    """Compute nodes in each pod: every pod is built for ``⌈nodes/pods⌉`` nodes and the
    nodes fill the pods in order (the last pod may be partly populated)."""
    size = math.ceil(spec.nodes / spec.pods)
    return tuple(max(0, min(size, spec.nodes - p * size)) for p in range(spec.pods))


def leaf_groups(fabric: Fabric) -> tuple[LeafGroup, ...]:
    """The tier-2 groups of ``fabric``, pod by pod, exactly as :func:`design_fabric`
    counts them (empty for a single switch).

    Each pod has ``ℓ`` leaves for its ``⌈nodes/pods⌉`` nodes. In a tree of three or more
    tiers the leaves are chunked into groups of ``h`` (the last may be smaller, ``r``);
    a group of ``m`` leaves has the fewest divisor ``S ≥ m`` of ``h`` spines (balanced
    wiring: ``h/S`` links from every leaf to each spine). In a 2-tier tree or pod all
    leaves form one group under the top tier. So ``Σ leaves = switches_per_tier[0]``
    and ``Σ spines = switches_per_tier[1]``."""
    out = []
    for pod in range(fabric.pods):
        first = 0
        for n, spines, count in leaf_group_sizes(fabric):
            for _ in range(count):
                out.append(LeafGroup(pod, first, n, spines))
                first += n
    return tuple(out)


def leaf_group_sizes(fabric: Fabric) -> tuple[tuple[int, int, int], ...]:
    """The tier-2 groups of one pod of ``fabric`` as :func:`leaf_groups` builds them, in
    order and run-length coded: (leaves, spines, how many such groups in a row)."""
    spec = fabric.spec
    if fabric.pod_tiers == 1:
        return ()
    half = spec.radix // 2
    leaves = _leaves(spec, math.ceil(spec.nodes / spec.pods), half)
    if fabric.pod_tiers == 2:
        return ((leaves, fabric.switches_per_tier[1] // fabric.pods, 1),)
    full, rest = divmod(leaves, half)
    sizes = ((half, half, full),) if full else ()
    if rest:
        sizes += ((rest, _fewest_divisor_at_least(half, rest), 1),)
    return sizes


# ---------------------------------------------------------------------------------------
# Media


class MediumLike(Protocol):
    """A way to build one link (the catalog's Medium satisfies this by attribute names)."""

    id: str
    kind: str
    gbps: int
    reach_m: float
    links_per_module: int
    price_usd_per_end: float
    power_w_per_end: float
    fiber_usd_per_link: float

    @property
    def is_transceiver(self) -> bool: ...


@dataclass(frozen=True)
class MediaLine:
    """The medium chosen for one link class and what it takes.

    Transceiver media: ``transceivers`` modules, ``⌈links/links_per_module⌉`` at each
    switch end; at the node end of node-leaf links one per link, or one per two links with
    twin-port NIC cages; ``cables`` = one fibre patch per link. Cable media
    (DAC/ACC/AEC/AOC): ``cables`` assemblies of ``links_per_module`` links, no transceivers.
    Money and power are per link end: ``price_usd_per_end / links_per_module`` for each of
    the ``2·links`` ends (plus ``fiber_usd_per_link`` per link), so a twin-port module costs
    what its two link ends cost, whichever end it sits at.
    """

    link_class: str
    medium_id: str
    kind: str
    links: int
    length_m: float
    transceivers: int
    cables: int
    capex_usd: float
    power_w: float


def link_price_usd(medium: MediumLike, tier: int) -> float:
    """Both ends of one link of tier ``tier`` (1 = node-leaf) and its fibre [USD]: a switch
    end at the catalog's ``switch_end_price_usd`` where it gives one (half a twin-port
    module in a switch's OSFP cage), else ``price_usd_per_end / links_per_module``; the
    node end of a node-leaf link at ``price_usd_per_end / links_per_module``."""
    end = medium.price_usd_per_end / medium.links_per_module
    switch = getattr(medium, "switch_end_price_usd", None)
    switch = end if switch is None else switch
    return switch + (end if tier == 1 else switch) + medium.fiber_usd_per_link


def media_line(link_class: LinkClass, medium: MediumLike, length_m: float,
               twin_port_nics: bool = False) -> MediaLine:
    """Counts, capex (:func:`link_price_usd` per link) and power of building
    ``link_class`` with ``medium``."""
    links = link_class.links
    ends = 2 * links
    capex = links * (link_price_usd(medium, link_class.tier) - medium.fiber_usd_per_link)
    power = ends * medium.power_w_per_end / medium.links_per_module
    if medium.is_transceiver:
        switch_end = math.ceil(links / medium.links_per_module)
        if link_class.tier == 1:
            other_end = math.ceil(links / 2) if twin_port_nics else links
        else:
            other_end = switch_end
        return MediaLine(link_class.name, medium.id, medium.kind, links, length_m,
                         switch_end + other_end, links,
                         capex + links * medium.fiber_usd_per_link, power)
    return MediaLine(link_class.name, medium.id, medium.kind, links, length_m, 0,
                     math.ceil(links / medium.links_per_module), capex, power)


def media_for(media: Sequence[Any], gbps: int, switch_family: str) -> list[Any]:
    """Media at ``gbps`` that links of a ``switch_family`` switch may use (the catalog's
    ``switch_families``; e.g. no AOC on NDR InfiniBand), sorted by id."""
    return sorted((m for m in media if m.gbps == gbps and switch_family in m.switch_families),
                  key=lambda m: m.id)


def media_reaching(media: Sequence[MediumLike], gbps: int, length_m: float) -> list[MediumLike]:
    """Media at ``gbps`` whose reach covers ``length_m``, sorted by id."""
    return sorted((m for m in media if m.gbps == gbps and m.reach_m >= length_m),
                  key=lambda m: m.id)


def non_dominated_media(media: Sequence[MediumLike], tier: int = 2) -> list[MediumLike]:
    """Media that no other medium beats on both cost and power per link of tier ``tier``
    (ties: smaller id).

    A dominated medium is never part of an optimal design while price and power enter the
    design only through budget, power and cost; cost per link = :func:`link_price_usd`,
    power per link = 2 * power_per_end / lpm."""
    def key(m: MediumLike) -> tuple[float, float, str]:
        return (link_price_usd(m, tier), 2 * m.power_w_per_end / m.links_per_module, m.id)

    keep: list[MediumLike] = []
    for m in sorted(media, key=key):
        if not any(key(k)[0] <= key(m)[0] and key(k)[1] <= key(m)[1] for k in keep):
            keep.append(m)
    return sorted(keep, key=lambda m: m.id)


def choose_media(fabric: Fabric, lengths_m: dict[str, float], media: Sequence[MediumLike],
                 gbps: int, twin_port_nics: bool = False) -> tuple[MediaLine, ...]:
    """Cheapest medium (capex, then power, then id) per link class whose reach covers the
    class's length in ``lengths_m`` (keys: see :data:`TIER_NAMES`) at ``gbps``."""
    missing = [c.name for c in fabric.link_classes if c.name not in lengths_m]
    if missing:
        raise ValueError(f"no length for link class(es) {', '.join(missing)}")
    lines = []
    for link_class in fabric.link_classes:
        length = lengths_m[link_class.name]
        options = [media_line(link_class, m, length, twin_port_nics)
                   for m in media_reaching(media, gbps, length)]
        if not options:
            raise ValueError(f"no medium at {gbps} Gb/s reaches {length} m "
                             f"for link class {link_class.name}")
        lines.append(min(options, key=lambda x: (x.capex_usd, x.power_w, x.medium_id)))
    return tuple(lines)
