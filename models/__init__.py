"""The mathematics of clusterplan: pure functions and model builders, no I/O.

Never imports `solver`. Inputs are plain values or objects satisfying the Protocols
declared next to each model (the pydantic schema objects of `solver` satisfy them).
"""
