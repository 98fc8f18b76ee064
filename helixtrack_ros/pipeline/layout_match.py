# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Which detection of a search is the lost rotor: the drone's layout decides, not distance.

A lost rotor's search region (r_out + ``recovery_margin`` tip radii around its
last good place) holds its neighbours too: the rotors of a drone stand about
two tip radii apart. Once the camera has moved by a rotor spacing since that
place, or before the rotor was ever tracked, the detection nearest the place
is a neighbour, and the re-initialised tracker publishes the neighbour's RPM
(scene review: quadcopter_3m at 346x260, egomotion 6: front_right tracked the
front left, then the rear left rotor, 67 values +46 %).

The rotors keep their layout (their initial discs), so each hypothesis
"detection d is rotor o" places every rotor i at d + k (c_i - c_o), k the
image scale since the layout. A hypothesis scores +1 per rotor with a
detection at its place, +1 per TRACKING rotor at its place and -1 per
TRACKING rotor elsewhere, and -1 per rotor whose whole disc lies in the
searched region with no detection there. The best score decides which
detection is the lost rotor; ties go to the smallest move of the rotor
from its last good place. When the best reading, pinned by other rotors,
puts no detection at the rotor's place, a detection nearer that place than
any other rotor's (within two tip radii) is the rotor: a layout given
roughly, or a rotor that moved on its drone. The search widens instead of
deciding:

- to where the winner places the rotor, when that is not in the region;
- around every rotor they place, when another reading scores within
  ``MARGIN`` of the winner and makes another detection the rotor (a pair at
  the region's edge reads as this pair or as its neighbours), unless it
  moves the rotor further than the camera has moved the drone lately (its
  last good place is recent, the camera steady: the reading is no rival).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
from typing import NamedTuple

#: A detection or a TRACKING rotor is at a placed rotor within this many tip radii: two
#: rotors' discs do not overlap, so it is no other rotor's place, and a layout given
#: roughly (or a drone turned a little since) still reads.
PLACE_NEAR = 1.0
#: A detection is of a rotor's size within these ratios of its placed radius.
SIZE_RATIOS = (0.6, 1.6)
#: A detection nearer the lost rotor's place than any other rotor's place, though not at
#: it, is the rotor within this many tip radii of that place (the best reading pinned by
#: other rotors; the layout given roughly, or the rotor moved on its drone).
FALLBACK_NEAR = 2.0
#: A reading of the detections that makes another detection rotor r must score this much
#: below the winner, or the search widens (one missed detection is not evidence enough).
MARGIN = 2

Disc = tuple[float, float, float]       # centre x, y and tip radius [px]


class LayoutPick(NamedTuple):
    """The outcome of :func:`layout_pick`: the detection that is the lost rotor (None:
    none is), and a wider box to search next when the layout could not tell or places the
    rotor outside the searched region (else None)."""

    index: int | None
    widen_to: tuple[int, int, int, int] | None


class _Reading(NamedTuple):
    """One hypothesis: a detection is rotor ``rotor``; the camera's shift since the layout
    follows, and with it every rotor's place."""

    score: int
    prior_px: float                   # its shift's distance from the prior shift
    rotor: int
    pick: int | None                  # the detection it makes the lost rotor
    shift: tuple[float, float]


def layout_pick(r: int, dets: Sequence[Disc], layout: Sequence[Disc],
                region: tuple[int, int, int, int], tracked: dict[int, Disc],
                last: Disc, may_be_r: Callable[[int], bool], reach: float,
                prior_reach_px: float = math.inf) -> LayoutPick:
    """The detection in ``dets`` that is rotor ``r`` (module docstring).

    ``layout``: every rotor's initial disc; ``region``: the searched box (x0, y0, x1, y1);
    ``tracked``: the TRACKING rotors' discs now; ``last``: r's last good disc (the prior
    for ties); ``may_be_r(j)``: detection j passes r's own checks (size, not taken);
    ``reach``: tip radii searched around a rotor's place when the search widens;
    ``prior_reach_px``: how far r can have moved since ``last`` (as far as the camera moved
    the drone lately): a reading placing r further from ``last`` is no rival.
    """
    k = _scale(dets, layout, tracked) if dets else 1.0
    readings = _readings(r, dets, layout, region, tracked, last, may_be_r, k)
    if not readings:
        return LayoutPick(None, None)
    top = max(h.score for h in readings)
    win = min((h for h in readings if h.score == top), key=lambda h: h.prior_px)
    if win.pick is None:
        # no detection at r's place: one nearer that place than any other (a layout given
        # roughly, a rotor moved), else search where the reading places r, if not searched
        near = _nearest_to_place(r, win, dets, layout, k, may_be_r) if top >= 1 else None
        if near is not None:
            return LayoutPick(near, None)
        return LayoutPick(None, _around([win], k, [layout[r]], region, reach, outside=True))
    rivals = [h for h in readings if h.pick != win.pick and h.rotor != r
              and h.score > top - MARGIN and h.prior_px <= prior_reach_px]
    if rivals:
        return LayoutPick(None, _around([win, *rivals], k, layout, region, reach))
    return LayoutPick(win.pick if may_be_r(win.pick) else None, None)


def _readings(r: int, dets: Sequence[Disc], layout: Sequence[Disc],
              region: tuple[int, int, int, int], tracked: dict[int, Disc], last: Disc,
              may_be_r: Callable[[int], bool], k: float) -> list[_Reading]:
    """Every hypothesis "detection j is rotor o" of a detection of o's size, scored."""
    prior = (last[0] - k * layout[r][0], last[1] - k * layout[r][1])
    out = []
    for j, (dx, dy, drad) in enumerate(dets):
        for o, (ox, oy, orad) in enumerate(layout):
            if not SIZE_RATIOS[0] <= drad / (k * orad) <= SIZE_RATIOS[1]:
                continue
            if o == r and not may_be_r(j):
                continue
            shift = (dx - k * ox, dy - k * oy)
            score, mine = _score(r, shift, k, dets, layout, region, tracked)
            out.append(_Reading(score, math.hypot(shift[0] - prior[0], shift[1] - prior[1]),
                                o, mine, shift))
    return out


def _nearest_to_place(r: int, win: _Reading, dets: Sequence[Disc], layout: Sequence[Disc],
                      k: float, may_be_r: Callable[[int], bool]) -> int | None:
    """The detection r may be that lies nearer r's place in reading ``win`` than any other
    rotor's place, within ``FALLBACK_NEAR`` tip radii (the nearest such), or None."""
    places = [(win.shift[0] + k * lx, win.shift[1] + k * ly, k * lrad)
              for lx, ly, lrad in layout]
    best, best_d = None, math.inf
    for j, (dx, dy, _) in enumerate(dets):
        d = [math.hypot(dx - px, dy - py) / rad for px, py, rad in places]
        if min(range(len(d)), key=d.__getitem__) == r and d[r] < min(best_d, FALLBACK_NEAR) \
                and may_be_r(j):
            best, best_d = j, d[r]
    return best


def _around(readings: list[_Reading], k: float, discs: Sequence[Disc],
            region: tuple[int, int, int, int], reach: float,
            outside: bool = False) -> tuple[int, int, int, int] | None:
    """The box holding ``region`` and ``reach`` tip radii around every place the readings
    give the layout ``discs`` (not clipped to the image). ``outside``: None when those
    places' discs all lie in the region already."""
    x0, y0, x1, y1 = region
    grown = False
    for h in readings:
        sx, sy = h.shift
        for lx, ly, lrad in discs:
            px, py, rad = sx + k * lx, sy + k * ly, k * lrad
            if outside and _inside((px, py, rad), region):
                continue
            grown = True
            half = reach * rad
            x0, y0 = min(x0, math.floor(px - half)), min(y0, math.floor(py - half))
            x1, y1 = max(x1, math.ceil(px + half)), max(y1, math.ceil(py + half))
    return (int(x0), int(y0), int(x1), int(y1)) if grown else None


def _inside(disc: Disc, region: tuple[int, int, int, int]) -> bool:
    """The whole disc lies in the region."""
    x, y, rad = disc
    return region[0] <= x - rad and x + rad <= region[2] and region[1] <= y - rad \
        and y + rad <= region[3]


def _scale(dets: Sequence[Disc], layout: Sequence[Disc], tracked: dict[int, Disc]) -> float:
    """The image scale since the layout: from the TRACKING rotors, else the detections."""
    if tracked:
        ratios = sorted(d[2] / layout[i][2] for i, d in tracked.items())
    else:
        lay = sorted(d[2] for d in layout)[len(layout) // 2]
        ratios = sorted(d[2] / lay for d in dets)
    k = ratios[len(ratios) // 2]
    return min(max(k, SIZE_RATIOS[0]), SIZE_RATIOS[1])


def _score(r: int, shift: tuple[float, float], k: float, dets: Sequence[Disc],
           layout: Sequence[Disc], region: tuple[int, int, int, int],
           tracked: dict[int, Disc]) -> tuple[int, int | None]:
    """A hypothesis' score and the detection it makes rotor r (module docstring)."""
    score = 0
    mine = None
    for i, (lx, ly, lrad) in enumerate(layout):
        px, py, rad = shift[0] + k * lx, shift[1] + k * ly, k * lrad
        if i != r and i in tracked:
            tx, ty, _ = tracked[i]
            score += 1 if math.hypot(tx - px, ty - py) < PLACE_NEAR * rad else -1
            continue
        near = [j for j, (dx, dy, _) in enumerate(dets)
                if math.hypot(dx - px, dy - py) < PLACE_NEAR * rad]
        if near:
            score += 1
            if i == r:
                mine = min(near, key=lambda j: math.hypot(dets[j][0] - px, dets[j][1] - py))
        elif _inside((px, py, rad), region):
            score -= 1              # its whole disc was searched: it would have been found
    return score, mine
