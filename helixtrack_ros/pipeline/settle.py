# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A re-initialised rotor publishes once its pose is back at its place among the others.

A tracker re-initialised (re-detected or resumed) stands still while it acquires the
phase; a camera that moves the drone leaves its pose behind the rotor, and the pose
can then barely move while its own health reads it settled. Scene review:
quadcopter_4m, 346 x 260, egomotion 5, seed 8: front_left 0.55 tip radii behind,
15 values +5.2 % off. Its own state cannot tell (any "has the pose stopped moving"
test reads it settled); the other rotors of the drone can: they keep their places
relative to it (:mod:`identity`), whatever the camera does.

Each rotor's offset from every other one, in the layout's frame (divided by the
image scale that the other's tip radius gives), is learnt while both are TRACKING
(one sample per ``LEARN_EVERY_US`` of sensor time, so not per batch; the initial
layout while never learnt), and set where its re-detection put it (the detection is
good; the pose falls behind after it). A re-initialised rotor's TRACKING outputs are withheld
(DEGRADED, pose settling) until, seen from one other TRACKING rotor not itself
settling, it sits within ``SETTLE_NEAR`` of its own tip radius of that offset;
then it publishes as before. No blade count enters. Without such a rotor, or with
an offset older than ``OFFSET_MEMORY_US``, nothing is held, and a hold ends after
``SETTLE_MAX_US`` (a layout that the drone left: it turned since, or was given
roughly).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from helixtrack_ros.core.health import DEGRADED, R_POSE_SETTLING, RotorState
from helixtrack_ros.pipeline.identity import disc_of, offset_seen
from helixtrack_ros.pipeline.records import WARN, RotorOutput, withheld

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.pipeline.rotors import RotorBank

#: A settling rotor is at its place within this share of its tip radius (the 46
#: quadcopter scenes: 56 re-initialised rotors 0.00-0.09 off at their first TRACKING
#: output, the two that published values > 1 % off 0.43 and 0.56, then 0.33-0.56; the
#: truth: each rotor within 0.19 of its initial layout place seen from any other).
SETTLE_NEAR = 0.25
#: The rotors' offsets are learnt once per this much sensor time.
LEARN_EVERY_US = 10_000
#: EMA weight of a new offset sample (noise of one packet's centres averaged out).
LEARN_WEIGHT = 0.25
#: An offset learnt longer ago than this says nothing (the drone may have turned).
OFFSET_MEMORY_US = 1_000_000
#: A hold ends this long after its first withheld output.
SETTLE_MAX_US = 100_000


def _learn(bank: RotorBank, tracked: dict[int, tuple], t_us: int) -> None:
    """Learn the offsets of every pair of TRACKING rotors not settling at ``t_us``."""
    layout = bank.layout_discs
    steady = {r: c for r, c in tracked.items() if not bank.recs[r].settling}
    for r, c in steady.items():
        offsets = bank.recs[r].offsets
        for o, ref in steady.items():
            if o == r:
                continue
            dx, dy = offset_seen(c, ref, layout[o])
            if not (math.isfinite(dx) and math.isfinite(dy)):
                continue
            old = offsets.get(o)
            if old is not None and 0 <= t_us - old[2] <= OFFSET_MEMORY_US:
                dx = old[0] + LEARN_WEIGHT * (dx - old[0])
                dy = old[1] + LEARN_WEIGHT * (dy - old[1])
            offsets[o] = (dx, dy, t_us)


def anchor_offsets(bank: RotorBank, r: int, det: tuple, tracked: dict[int, tuple],
                   t_us: int) -> None:
    """Rotor r was re-detected at disc ``det`` at ``t_us`` while the rotors ``tracked``
    (other -> disc) were TRACKING: its offsets are where the detection puts it (a rotor
    that moved on its drone, or a layout that the drone left, is not held for it)."""
    layout = bank.layout_discs
    offsets = bank.recs[r].offsets
    for o, ref in tracked.items():
        if o == r or bank.recs[o].settling:
            continue
        dx, dy = offset_seen(det, ref, layout[o])
        if math.isfinite(dx) and math.isfinite(dy):
            offsets[o] = (dx, dy, t_us)


def off_place(bank: RotorBank, r: int, c: tuple, tracked: dict[int, tuple],
              t_us: int) -> float:
    """How far [its tip radii] rotor r at disc ``c`` is from its place, seen from the other
    TRACKING rotors not settling: the least over them (nan: none can tell)."""
    layout = bank.layout_discs
    own = layout[r]
    offsets = bank.recs[r].offsets
    best = math.nan
    for o, ref in tracked.items():
        if o == r or bank.recs[o].settling:
            continue
        learnt = offsets.get(o)
        if learnt is None:
            want = (own[0] - layout[o][0], own[1] - layout[o][1])
        elif 0 <= t_us - learnt[2] <= OFFSET_MEMORY_US:
            want = learnt[:2]
        else:
            continue
        dx, dy = offset_seen(c, ref, layout[o])
        d = math.hypot(dx - want[0], dy - want[1]) / own[2]
        if not d >= best:            # (nan-safe minimum)
            best = d
    return best


def hold_unsettled(bank: RotorBank, per_rotor: list[list[RotorOutput]]) -> None:
    """Per packet of a batch: withhold the TRACKING outputs of settling rotors off their
    place, end the holds of those back at it, and learn the offsets (module docstring)."""
    recs = bank.recs
    tracking = RotorState.TRACKING
    n_pk = min(len(outs) for outs in per_rotor)
    for k in range(n_pk):
        t_us = per_rotor[0][k].t_us
        due = t_us // LEARN_EVERY_US != bank.learnt_tick
        settling = [r for r, rec in enumerate(recs)
                    if rec.settling and per_rotor[r][k].state == tracking]
        if not (due or settling):
            continue
        tracked = {r: disc_of(outs[k].homography) for r, outs in enumerate(per_rotor)
                   if outs[k].state == tracking}
        for r in settling:
            _settle_step(bank, r, per_rotor[r], k, tracked)
        if due and len(tracked) > 1:
            bank.learnt_tick = t_us // LEARN_EVERY_US
            _learn(bank, tracked, t_us)


def _settle_step(bank: RotorBank, r: int, outs: list[RotorOutput], k: int,
                 tracked: dict[int, tuple]) -> None:
    """Settling rotor r's TRACKING output ``outs[k]``: withheld while off its place (and
    out of ``tracked`` then); the hold ends at its place or ``SETTLE_MAX_US`` after its
    first TRACKING output."""
    rec = bank.recs[r]
    o = outs[k]
    if rec.settle_t0_us < 0:
        rec.settle_t0_us = o.t_us
    off = off_place(bank, r, tracked[r], tracked, o.t_us)
    if off <= SETTLE_NEAR or o.t_us - rec.settle_t0_us > SETTLE_MAX_US:
        rec.settling = False
        return
    if not off > SETTLE_NEAR:
        return                         # nothing can tell: published (as before)
    del tracked[r]
    outs[k] = withheld(o.name, o.t_us, o.events, WARN,
                       f'recovering: pose settling, {off:.2f} tip radii off its place '
                       'among the tracked rotors', DEGRADED, RotorState.DEGRADED,
                       R_POSE_SETTLING)
