# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Which rotor a tracker sits on: a tracker that left its rotor for another is not published.

A tracker that lost its rotor can drift onto a neighbour and lock there: its
own health checks pass, and it publishes the neighbour's RPM under its own
name (the paper preset: 91 % off its own rotor; a camera shaking at
egomotion level 7: 55-65 % off, 135 values; scene reviews). Two tests, per
packet, on each TRACKING tracker r:

- places: its centre is within a tip radius of another rotor's last good
  centre and more than a radius from its own (no other rotor need be
  tracked; the places go stale while the camera moves);
- layout: the rotors of one drone keep their places relative to each other
  (their initial centres: configured or detected together). Seen from every
  other TRACKING rotor, r sits on another rotor's place (within half its tip
  radius) and more than a radius from its own (the camera's shift cancels).

Such an output is LOST ('on another rotor'), the tracker is declared LOST and
its last good pose is its own again, so that the search looks where it
belongs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from helixtrack_ros.core.health import LOST, R_OTHER_ROTOR, RotorState
from helixtrack_ros.core.homography import disc_from_core_q
from helixtrack_ros.pipeline.records import ERROR, RotorOutput, withheld

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.pipeline.rotors import RotorBank

#: Near another rotor's last good centre: within this many of its tip radii.
PLACE_NEAR = 1.0
#: Near another rotor's place in the layout: within this many of its tip radii.
LAYOUT_NEAR = 0.5
#: Away from its own place: more than this many of its own tip radii.
OWN_AWAY = 1.0


def disc_of(h: Any) -> tuple[float, float, float]:
    """Centre and tip radius [px] of a homography (3 x 3 array or nested lists)."""
    (h00, _, h02), (h10, _, h12), (_, _, h22) = h.tolist() if hasattr(h, 'tolist') else h
    return h02 / h22, h12 / h22, math.hypot(h00, h10) / abs(h22)


def _disc(o: RotorOutput) -> tuple[float, float, float]:
    """Centre and tip radius [px] of a TRACKING output (its homography)."""
    return disc_of(o.homography)


def _on_a_place(r: int, c: tuple, places: list[tuple]) -> bool:
    """The places test (module docstring)."""
    cx, cy, _ = c
    x, y, rad = places[r]
    if math.hypot(cx - x, cy - y) <= OWN_AWAY * rad:
        return False
    return any(o != r and math.hypot(cx - x, cy - y) < PLACE_NEAR * rad
               for o, (x, y, rad) in enumerate(places))


def _off_the_layout(r: int, c: tuple, tracked: dict[int, tuple], layout: list[tuple]) -> bool:
    """The layout test (module docstring): True when every other TRACKING rotor sees r
    on another rotor's place; False without another TRACKING rotor."""
    refs = False
    for o, ref in tracked.items():
        if o == r:
            continue
        refs = True
        lx, ly, _ = layout[o]
        dx, dy = offset_seen(c, ref, layout[o])
        if dx != dx:
            return False
        # c in the layout's frame as seen from o: the camera's shift and scale cancel
        ux, uy = lx + dx, ly + dy
        own = layout[r]
        if math.hypot(ux - own[0], uy - own[1]) <= OWN_AWAY * own[2]:
            return False
        if not any(i != r and math.hypot(ux - x, uy - y) < LAYOUT_NEAR * rad
                   for i, (x, y, rad) in enumerate(layout)):
            return False
    return refs


def offset_seen(c: tuple, ref: tuple, ref_layout: tuple) -> tuple[float, float]:
    """Disc ``c``'s offset from disc ``ref`` in the layout's frame: divided by the image
    scale since the layout that ``ref``'s tip radius gives (``ref_layout``: its layout
    disc), so that the camera's shift and scale cancel. (nan, nan) for a degenerate
    ``ref``."""
    k = ref[2] / ref_layout[2]
    if not k > 0:
        return math.nan, math.nan
    return (c[0] - ref[0]) / k, (c[1] - ref[1]) / k


def layout_discs(inits: list) -> list[tuple[float, float, float]]:
    """The rotors' layout: each one's initial disc (centre x, y, tip radius [px])."""
    return [(i.center_px[0], i.center_px[1], i.radius_px) for i in inits]


def _places(bank: RotorBank, anchors: list) -> tuple[list[tuple], list[tuple]]:
    """The rotors' layout (initial discs, :attr:`RotorBank.layout_discs`) and places (last
    good discs, ``anchors``: each rotor's last good ``q_core`` before the batch, None if
    never: its initial place)."""
    layout = bank.layout_discs
    places = [disc_from_core_q(a) if a is not None else lay
              for a, lay in zip(anchors, layout)]
    return layout, places


def _on_another_rotor(tracked: dict[int, tuple], places: list[tuple],
                      layout: list[tuple]) -> list[tuple[int, float]]:
    """The TRACKING trackers of one packet (``tracked``: rotor -> disc) that sit on another
    rotor, each with its distance from its own place in its tip radii."""
    hits = []
    for r, c in tracked.items():
        x, y, rad = places[r]
        # (per packet and rotor: the places test's first step, without the call)
        own = math.hypot(c[0] - x, c[1] - y)
        if (not own <= OWN_AWAY * rad and _on_a_place(r, c, places)) or \
                _off_the_layout(r, c, tracked, layout):
            hits.append((r, own / rad))
    return hits


def any_on_another_rotor(bank: RotorBank, discs: list[list[tuple | None]],
                         anchors: list) -> bool:
    """Whether :func:`withhold_other_rotors` would withhold a packet of a batch whose
    outputs' discs are ``discs`` (per rotor, per packet; None: not TRACKING), without
    building the outputs or changing a tracker."""
    layout, places = _places(bank, anchors)
    for k in range(min(len(d) for d in discs)):
        tracked = {r: d[k] for r, d in enumerate(discs) if d[k] is not None}
        if _on_another_rotor(tracked, places, layout):
            return True
    return False


def withhold_other_rotors(bank: RotorBank, per_rotor: list[list[RotorOutput]],
                          anchors: list) -> None:
    """Withhold, per packet, the TRACKING outputs of trackers on another rotor (module
    docstring). ``anchors``: each rotor's last good ``q_core`` before the batch (None if
    never: then its initial place)."""
    layout, places = _places(bank, anchors)
    tracking = RotorState.TRACKING
    for k in range(min([len(outs) for outs in per_rotor])):
        tracked = {r: disc_of(outs[k].homography) for r, outs in enumerate(per_rotor)
                   if outs[k].state == tracking}
        for r, away in _on_another_rotor(tracked, places, layout):
            o = per_rotor[r][k]
            bank.trackers[r].lose(R_OTHER_ROTOR, away)
            bank.recs[r].revert_good(anchors[r], per_rotor[r][0].t_us)
            per_rotor[r][k] = withheld(o.name, o.t_us, o.events, ERROR,
                                       bank.trackers[r].health_reason, LOST, RotorState.LOST,
                                       R_OTHER_ROTOR)
