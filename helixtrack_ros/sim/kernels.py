# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""numba kernels of the event simulator (private; see simulator.py for the wrappers).

All kernels work on one *segment* of fixed length (several 1 ms blocks) and use a
counter-based splitmix64 generator seeded per (source, segment), so the event stream
depends on the seed only, never on how the caller chunks it.

Rotor model (per pixel): the pixel's rotor-plane polar coordinates (r, beta) are
computed at geometry knots and interpolated linearly in time; for each blade edge
``e`` the edge phase ``g_e(t) = theta(t) - direction * beta(t) + o_e(r(t))`` is
evaluated at block boundaries, and a crossing happens whenever ``g_e`` passes a
multiple of ``2 pi / B`` (leading edge ``o = c + w/2``, trailing ``o = c - w/2``
with ``c`` the centre-line offset and ``w`` the angular blade width). Crossing
times are refined with the exact quadratic shape of ``theta`` within the block.

The kernels live in one module per concept; this module gathers the names the
simulator uses:

- ``kernels_random``: counter-based splitmix64 streams (``seed_state``).
- ``kernels_blade``: rotor parameter vector (``GEO_*``), blade width, per-pixel
  edge-phase coefficients (``CO_*``, ``rotor_geometry``).
- ``kernels_crossings``: crossing records and their events (``rotor_events``,
  ``rotor_segment``).
- ``kernels_sensor``: sensor parameter vector (``SEN_*``), events of a crossing,
  time sort and refractory filter (``sort_emit``).
- ``kernels_scene``: moving static edges and noise (``edges_segment``,
  ``noise_segment``).
"""

from .kernels_blade import (
    GEO_BLADES,
    GEO_CHORD_PEAK,
    GEO_CHORD_ROOT,
    GEO_CHORD_TIP,
    GEO_DIRECTION,
    GEO_HUB,
    GEO_M_SCALE,
    GEO_OFF_GAIN,
    GEO_ON_GAIN,
    GEO_PIX_KEY,
    GEO_PIX_SPREAD,
    GEO_POL_LEAD,
    GEO_RADIUS_PX,
    GEO_SWEEP,
    GEO_TAU_US,
    GEO_TIP_ROUND,
    N_GEO,
    rotor_geometry,
)
from .kernels_crossings import rotor_events, rotor_segment
from .kernels_random import seed_state
from .kernels_scene import edges_segment, noise_segment
from .kernels_sensor import sort_emit

__all__ = [
    'GEO_BLADES', 'GEO_CHORD_PEAK', 'GEO_CHORD_ROOT', 'GEO_CHORD_TIP', 'GEO_DIRECTION',
    'GEO_HUB', 'GEO_M_SCALE', 'GEO_OFF_GAIN', 'GEO_ON_GAIN', 'GEO_PIX_KEY', 'GEO_PIX_SPREAD',
    'GEO_POL_LEAD', 'GEO_RADIUS_PX', 'GEO_SWEEP', 'GEO_TAU_US', 'GEO_TIP_ROUND', 'N_GEO',
    'edges_segment', 'noise_segment', 'rotor_events', 'rotor_geometry', 'rotor_segment',
    'seed_state', 'sort_emit',
]
