"""Procurement question, end to end with the Python API:

  "We have $6.5B and 150 MW for the 100k-H100 campus. Is another $500M or another 20 MW
   the better buy, and what if H100 nodes come in 10% dearer?"

Run from any folder:  python instances/examples/procurement.py
Writes its tables and plots under ./results/h100-100k/sweeps/.
"""

from __future__ import annotations

from solver import load_instance, solve, sweep, tornado
from solver.loading import DEFAULT_INSTANCE


def main() -> None:
    inst = load_instance(DEFAULT_INSTANCE)
    base = solve(inst, place=False).summary
    print(f"base: {base['design']['gpus']:,} {base['design']['gpu']} on {base['design']['switch']}"
          f" ({base['design']['tiers']} tiers), {base['throughput']['effective_tokens_per_s']:,.0f}"
          f" effective tokens/s, capex ${base['cost']['capex_usd'] / 1e9:.2f}B,"
          f" {base['power']['it_mw']:.1f} MW")

    # 1. more money or more power? (limits only: candidates built once, re-solved per point)
    grid = sweep(DEFAULT_INSTANCE,
                 {"limits.budget_usd": [6.5e9, 7.0e9], "limits.it_power_mw": [150.0, 170.0]},
                 name="procurement-power-or-money")
    grid["gain_tokens_per_s"] = grid["objective"] - grid["objective"].iloc[0]
    print(grid[["limits.budget_usd", "limits.it_power_mw", "gpus", "switch",
                "effective_tokens_per_s", "gain_tokens_per_s", "binding"]].to_string(index=False))

    # 2. price risk on the servers
    risk = sweep(DEFAULT_INSTANCE, {"catalog.gpu.h100-sxm.node_price_usd": "±10%:3"},
                 name="procurement-node-price", backend="processes")
    print(risk[["catalog.gpu.h100-sxm.node_price_usd", "gpus", "switch",
                "effective_tokens_per_s", "capex_usd"]].to_string(index=False))

    # 3. which input matters most (limits and prices, ±10%)
    ranked = tornado(DEFAULT_INSTANCE, 0.10, ["limits.budget_usd",
                     "limits.it_power_mw", "catalog.gpu.h100-sxm.node_price_usd",
                     "catalog.facility.build_usd_per_mw"], backend="processes")
    print(ranked[["parameter", "objective_low", "objective_high", "swing_fraction"]]
          .to_string(index=False))
    print(f"tornado plot: {ranked.attrs['plot']}")


if __name__ == "__main__":
    main()
