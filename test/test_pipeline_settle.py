# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A re-initialised rotor is held until its pose is back at its place (pipeline/settle.py).

A drone of two rotors seen by a camera that shifted and scaled it; rotor 1 was
re-initialised and its pose lags behind it (the scene review's 0.55 tip radii)."""

import math

import numpy as np

from helixtrack_ros.core.health import R_POSE_SETTLING, RotorState
from helixtrack_ros.pipeline import settle as S  # noqa: N812
from helixtrack_ros.pipeline.records import RotorOutput
from helixtrack_ros.pipeline.recovery import RotorRecovery

LAYOUT = [(100.0, 100.0, 15.0), (140.0, 100.0, 15.0)]
K, SHIFT = 1.2, (30.0, -20.0)          # the camera's scale and shift since the layout


class _Bank:
    def __init__(self, layout=LAYOUT):
        self.layout_discs = list(layout)
        self.recs = [RotorRecovery() for _ in layout]
        self.learnt_tick = -1


def _out(name, t_us, disc, tracking=True):
    x, y, rad = disc
    hom = np.array([[rad, 0.0, x], [0.0, rad, y], [0.0, 0.0, 1.0]])
    state = RotorState.TRACKING if tracking else RotorState.DEGRADED
    return RotorOutput(name, t_us, 0.0, 600.0, 5500.0, 1.0, hom, 100, state=state)


def _seen(i, off_radii=(0.0, 0.0)):
    """Rotor i's disc in the image, ``off_radii`` tip radii off its place."""
    x, y, rad = LAYOUT[i]
    return (SHIFT[0] + K * (x + off_radii[0] * rad), SHIFT[1] + K * (y + off_radii[1] * rad),
            K * rad)


def _batch(t0_us, n, off_radii=(0.0, 0.0), other=True):
    return [[_out('a', t0_us + 1000 * k, _seen(0), other) for k in range(n)],
            [_out('b', t0_us + 1000 * k, _seen(1, off_radii)) for k in range(n)]]


def _reinit(bank, r=1):
    bank.recs[r].settling = True
    bank.recs[r].settle_t0_us = -1


def test_a_settling_rotor_behind_its_place_is_held_then_published_at_it():
    bank = _Bank()
    _reinit(bank)
    per_rotor = _batch(0, 5, off_radii=(-0.55, 0.1))
    S.hold_unsettled(bank, per_rotor)
    held = per_rotor[1]
    assert all(o.state == RotorState.DEGRADED and o.cause == R_POSE_SETTLING for o in held)
    assert all(math.isnan(o.rpm_shaft) for o in held)
    assert all(o.state == RotorState.TRACKING for o in per_rotor[0])
    assert bank.recs[1].settling
    per_rotor = _batch(5000, 3, off_radii=(0.1, -0.05))
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.TRACKING for o in per_rotor[1])
    assert not bank.recs[1].settling
    # settled: off its place later is not held by this rule
    per_rotor = _batch(8000, 2, off_radii=(-0.55, 0.0))
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.TRACKING for o in per_rotor[1])


def test_a_rotor_not_reinitialised_is_never_held():
    bank = _Bank()
    per_rotor = _batch(0, 4, off_radii=(-0.8, 0.0))
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.TRACKING for outs in per_rotor for o in outs)


def test_without_another_tracking_rotor_nothing_is_held_and_the_check_waits():
    bank = _Bank()
    _reinit(bank)
    per_rotor = _batch(0, 3, off_radii=(-0.55, 0.0), other=False)
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.TRACKING for o in per_rotor[1])
    assert bank.recs[1].settling             # checked once another rotor tracks
    per_rotor = _batch(3000, 2, off_radii=(-0.55, 0.0))
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.DEGRADED for o in per_rotor[1])


def test_the_offset_learnt_while_both_tracked_is_the_place_not_a_rough_layout():
    rough = [LAYOUT[0], (LAYOUT[1][0] + 9.0, LAYOUT[1][1], LAYOUT[1][2])]   # 0.6 radii off
    bank = _Bank(rough)
    for t0 in range(0, 50_000, 10_000):          # both tracked: the offset is learnt
        S.hold_unsettled(bank, _batch(t0, 10))
    assert 0 in bank.recs[1].offsets and 1 in bank.recs[0].offsets
    _reinit(bank)
    per_rotor = _batch(50_000, 3)
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.TRACKING for o in per_rotor[1])
    assert not bank.recs[1].settling


def test_a_hold_ends_after_settle_max_us():
    bank = _Bank()
    _reinit(bank)
    n = S.SETTLE_MAX_US // 1000 + 5
    per_rotor = _batch(0, n, off_radii=(-0.55, 0.0))
    S.hold_unsettled(bank, per_rotor)
    states = [o.state for o in per_rotor[1]]
    first = states.index(RotorState.TRACKING)
    assert first == S.SETTLE_MAX_US // 1000 + 1
    assert all(s == RotorState.DEGRADED for s in states[:first])
    assert not bank.recs[1].settling


def test_the_offset_seen_cancels_the_cameras_shift_and_scale():
    dx, dy = S.offset_seen(_seen(1), _seen(0), LAYOUT[0])
    assert math.isclose(dx, 40.0) and math.isclose(dy, 0.0, abs_tol=1e-9)
    assert all(math.isnan(v) for v in S.offset_seen(_seen(1), (0.0, 0.0, 0.0), LAYOUT[0]))


def test_a_reinitialisation_or_resume_makes_a_rotor_settle_and_a_new_clock_ends_it():
    class _Tracker:
        def reset(self, init):
            self.init = init

    bank = _Bank()
    bank.trackers = [_Tracker(), _Tracker()]
    rec = bank.recs[1]
    for resumed in (False, True):
        rec.settling, rec.settle_t0_us = False, 1234
        rec._restart(bank, 1, 'init', 5000, resumed=resumed)
        assert rec.settling and rec.settle_t0_us == -1
    rec.new_clock()
    assert not rec.settling


def test_a_rotor_re_detected_off_its_old_place_is_held_to_where_it_was_found():
    # the rotor moved on its drone (or the layout was left): the detection says where it
    # is now, and a pose there is not held
    bank = _Bank()
    _reinit(bank)
    found = _seen(1, (0.9, 0.0))
    S.anchor_offsets(bank, 1, found, {0: _seen(0)}, 0)
    per_rotor = _batch(0, 3, off_radii=(0.9, 0.0))
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.TRACKING for o in per_rotor[1])
    # a pose that fell behind the detection is held
    _reinit(bank)
    S.anchor_offsets(bank, 1, found, {0: _seen(0)}, 3000)
    per_rotor = _batch(3000, 3, off_radii=(0.35, 0.0))
    S.hold_unsettled(bank, per_rotor)
    assert all(o.state == RotorState.DEGRADED for o in per_rotor[1])
