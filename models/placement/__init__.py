"""Rack placement and cabling on the floor plan (CP-SAT), pure mathematics.

* :mod:`models.placement.geometry` - rack positions, routed cable lengths, block slots.
* :mod:`models.placement.halls` - a design's hall geometry: racks, blocks, network rows.
* :mod:`models.placement.economics` - lifetime cost of one link: capex, energy, failures.
* :mod:`models.placement.assemble` - a design on the site's halls -> the zone problem.
* :mod:`models.placement.problem` - the zone model's data (zones, groups, upper tiers).
* :mod:`models.placement.model` - the CP-SAT zone model: scalable-unit blocks, switch
  groups and upper-tier switches into halls, minimising media cost over the routed lengths.
* :mod:`models.placement.bound` - its lower bound by enumerating where spine groups stand.
"""
