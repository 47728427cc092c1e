"""Benchmark (full-size check of tests/test_space.py): every fabric option of the default
instance (IB 4-tier, IB 4 pods at 7:1, Spectrum-X, Tomahawk 5, and Tomahawk 5 in 3 pods
at 7:1), rail-optimized and middle-of-rack, solved one at a time with placement; each
line says whether the placed fabric equals the designed one and the placement verifies.
Several minutes an option on 2 cores.
Run: python tests/benchmarks/bench_fabric_options.py [index-layout ...] (e.g. 1-mor)"""

from __future__ import annotations

import copy
import sys
import time

from solver import solve
from solver.loading import DEFAULT_INSTANCE, instance_from_dict, read_document

EXTRA = {"switch": "tomahawk5", "tiers": 2, "pods": 3, "oversubscription": 7.0}


def main(which: list[str]) -> None:
    doc = read_document(DEFAULT_INSTANCE)
    fabrics = [*doc["choices"]["fabrics"], EXTRA]
    for i, fab in enumerate(fabrics):
        for layout in ("rail", "mor"):
            if which and f"{i}-{layout}" not in which:
                continue
            d = copy.deepcopy(doc)
            d["choices"]["fabrics"] = [fab]
            d["choices"]["rail_optimized"] = [layout == "rail"]
            start = time.perf_counter()
            s = solve(instance_from_dict(d)).summary
            p, des = s.get("placement", {}), s.get("design", {})
            same = (p.get("design", {}).get("switches_per_tier") == des.get("switches_per_tier")
                    and p.get("design", {}).get("links_per_tier") == des.get("links_per_tier"))
            print(f"{i}-{layout} {fab}: {s['status']}, {des.get('gpus')} GPUs, switches "
                  f"{des.get('switches_per_tier')}, placement {p.get('status')}, placed "
                  f"fabric = designed {same}, racks {p.get('racks_total')}, verified "
                  f"{s.get('verified')}, {time.perf_counter() - start:.0f} s "
                  f"{p.get('diagnosis', '')}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
