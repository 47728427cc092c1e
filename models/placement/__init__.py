"""Rack placement and cabling on the floor plan (CP-SAT), pure mathematics.

* :mod:`models.placement.geometry` - rack positions, routed cable lengths, block slots.
* :mod:`models.placement.model` - the CP-SAT zone model: scalable-unit blocks, switch
  groups and upper-tier switches into halls, minimising media cost over the routed lengths.
* :mod:`models.placement.layout` - concrete positions from the zone solution.
"""
