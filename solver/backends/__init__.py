"""Solver back-ends: the only modules that talk to HiGHS and CP-SAT."""
