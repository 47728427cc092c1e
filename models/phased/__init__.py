"""Phased build-out: a multi-period design MILP over the single-period candidates."""
