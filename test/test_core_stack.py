# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""TrackerStack: several trackers in one kernel call give what each gives alone."""

import math

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.homography import homography_from_paper_q
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.tracker import HelixTracker
from helixtrack_ros.core.tracker_layout import OUT_Q
from helixtrack_ros.core.tracker_stack import STATE_FIELDS, TrackerStack

PARAMS = TrackerParams(gn_min_events=10, pose_timer_us=2000, sign_events=64)
ROTORS = [RotorInit('a', (60.0, 60.0), 20.0, 3000.0, 2),
          RotorInit('b', (160.0, 70.0), 25.0, 2400.0, 3, direction=-1),
          RotorInit('c', (90.0, 150.0), 18.0, 3600.0, 2)]


def _events(n: int = 6000, span_us: int = 30_000) -> EventArrays:
    """Events on the blades of the three rotors, time-sorted (whole-camera packets)."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.integers(0, span_us, n)).astype(np.int64)
    which = rng.integers(0, len(ROTORS), n)
    x = np.empty(n)
    y = np.empty(n)
    for i, r in enumerate(ROTORS):
        m = which == i
        f_hz = r.rpm_shaft / 60.0 * r.blades
        ang = 2.0 * math.pi * f_hz * t[m] * 1e-6 / r.blades + rng.normal(0, 0.05, m.sum())
        rad = rng.uniform(0.5, 1.0, m.sum()) * r.radius_px
        x[m] = r.center_px[0] + rad * np.cos(ang)
        y[m] = r.center_px[1] + rad * np.sin(ang)
    return EventArrays(t, x.astype(np.uint16), y.astype(np.uint16),
                       rng.integers(0, 2, n).astype(np.uint8))


def _packets(ev: EventArrays, n_pk: int) -> tuple[np.ndarray, np.ndarray]:
    ends = np.linspace(0, len(ev), n_pk + 1).astype(np.int64)[1:]
    return ends, ev.t_us[ends - 1].copy()


def _run_both(deadlines, n_batches=6, n_pk=5, restart_at=None):
    ev = _events()
    alone = [HelixTracker(r, PARAMS) for r in ROTORS]
    stacked = [HelixTracker(r, PARAMS) for r in ROTORS]
    stack = TrackerStack()
    per_batch = len(ev) // n_batches
    for b in range(n_batches):
        part = ev.slice(b * per_batch, (b + 1) * per_batch)
        ends, t_last = _packets(part, n_pk)
        if b == restart_at:
            for trs in (alone, stacked):
                trs[1].reset(ROTORS[1])
        longest = int(np.max(np.diff(ends, prepend=0)))
        got = stack.run(stacked, deadlines, *part, ends, t_last, longest, 1)
        assert got is not None
        runs, homs = got
        for r, tr in enumerate(alone):
            if deadlines[r] is None:
                assert runs[r] is None
                continue
            want = tr.process_packets(part, ends, t_last, 1, deadlines[r])
            run = runs[r]
            assert run.done == want.done
            np.testing.assert_array_equal(run.values, want.values)
            np.testing.assert_array_equal(run.health_int, want.health_int)
            np.testing.assert_array_equal(run.health_float, want.health_float)
            for k in range(run.done):
                v = run.values[k]
                np.testing.assert_array_equal(homs[r, k],
                                              homography_from_paper_q(*v[OUT_Q:OUT_Q + 6]))
    for a, s in zip(alone, stacked):
        for name in STATE_FIELDS:
            np.testing.assert_array_equal(getattr(a, name), getattr(s, name))
    return stacked


def test_stack_matches_trackers_run_alone():
    stacked = _run_both([-1, -1, -1])
    assert stacked[0].health == stacked[0].state.health


def test_stack_skips_rotors_and_passes_deadlines():
    _run_both([-1, None, 12_000])


def test_stack_follows_a_reset_tracker():
    stacked = _run_both([-1, -1, -1], restart_at=3)
    # the reset tracker's new arrays were stacked again: still views of the shared rows
    assert all(t.fs.base is stacked[0].fs.base for t in stacked)


def test_stack_refuses_trackers_of_different_shapes():
    trs = [HelixTracker(ROTORS[0], PARAMS),
           HelixTracker(ROTORS[1], TrackerParams(sign_events=128))]
    ev = _events(200)
    ends, t_last = _packets(ev, 2)
    assert TrackerStack().run(trs, [-1, -1], *ev, ends, t_last, 200, 1) is None
