# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The paper's low-RPM failure under abrupt camera motion, and the fast step that fixes it.

``paper`` is the paper preset (core.presets); ``half_turn`` is our default
without the fast step (pose updates at half a turn and the 100 ms timer only).
"""

import numpy as np
import pytest
from reference.replay import Replay
from reference.synthetic_rotor import make_rotor_events

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.presets import apply_preset
from helixtrack_ros.core.tracker import FS_VX, IS_FASTON, HelixTracker
from helixtrack_ros.evaluation import track_scene
from helixtrack_ros.sim import Simulator, make_scenario


@pytest.fixture(scope='module')
def shaky_low_rpm():
    # ~1,350 shaft RPM under hand-held shake with jolts (ego level 5): a half turn, the
    # paper's pose trigger, takes 22 ms while the image moves up to ~2 px per ms
    scene = make_scenario('low_rpm_shake', duration_s=1.0, ego_level=5, seed=1)
    return scene, list(Simulator(scene, seed=1).chunks(chunk_us=1000))


def test_paper_preset_loses_the_shaky_low_rpm_rotor(shaky_low_rpm):
    # the paper preset (every rule of Sec. 3 / S1 switched on, #13) shows the paper's
    # low-RPM failure on this scene: measured 358 % shaft-RPM MArE, the pose 1,000 px off
    # (before the BTO, GN and EKF rules were switchable it kept the RPM within 0.4 %)
    scene, chunks = shaky_low_rpm
    res, _ = track_scene(scene, Replay(chunks), params=apply_preset('paper'))
    assert res[0].errors.mare_pct > 20.0


def test_half_turn_pose_trigger_alone_loses_it_too(shaky_low_rpm):
    scene, chunks = shaky_low_rpm
    res, _ = track_scene(scene, Replay(chunks), params=TrackerParams(pose_fast_us=0))
    assert res[0].errors.mare_pct > 20.0


def test_fast_step_with_motion_model_tracks_it(shaky_low_rpm):
    scene, chunks = shaky_low_rpm
    res, _ = track_scene(scene, Replay(chunks))
    assert res[0].errors.mare_pct <= 5.0
    assert res[0].center_error_px < 10.0


def test_fast_step_stays_off_above_pose_fast_rpm():
    # above pose_fast_rpm the tracker is exactly the one without the fast step
    # (bit-identical output)
    ev, _ = make_rotor_events(0.25, 9000.0, radius_px=60, center_px=(300, 200), seed=2)
    rotor = RotorInit('a', (301.0, 199.0), 61.0, 9000.0, 2, 0)
    samp = np.arange(ev.t_us[0], ev.t_us[-1], 1000, dtype=np.int64)
    low_only = HelixTracker(rotor, TrackerParams(pose_fast_rpm=3000.0))
    a = low_only.process(ev, sample_t_us=samp)
    b = HelixTracker(rotor, TrackerParams(pose_fast_us=0)).process(ev, sample_t_us=samp)
    for f in a._fields:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert low_only.ist[IS_FASTON] == 0


def _track_drifting(rpm, seed, drift_px_per_us):
    """A rotor whose image drifts along x (drift(t) in px); for the half-turn pose
    updates (no fast step) and the default: (centre x error at the end [px], |RPM
    error|, the tracker)."""
    ev, _ = make_rotor_events(0.3, rpm, radius_px=60, center_px=(300, 200), seed=seed,
                              noise_frac=0.05)
    t = (ev.t_us - ev.t_us[0]).astype(np.float64)
    drift = drift_px_per_us(t)
    x = np.clip(np.round(ev.x + drift), 0, 65535).astype(np.uint16)
    moving = EventArrays(ev.t_us, x, ev.y, ev.p)
    rotor = RotorInit('a', (300.0, 200.0), 60.0, rpm, 2, 1)
    out = {}
    for label, prm in (('half_turn', TrackerParams(pose_fast_us=0)),
                       ('default', TrackerParams())):
        tr = HelixTracker(rotor, prm)
        tr.process(moving)
        out[label] = (abs(tr.q[2] - (300.0 + drift[-1])), abs(tr.rpm_shaft - rpm), tr)
    assert out['default'][2].ist[IS_FASTON] == 1
    return out


def test_by_default_the_fast_step_follows_a_fast_moving_rotor_at_high_rpm():
    # camera motion moves the image of a 9,000 RPM rotor at 3 px / ms: between the
    # half-turn pose updates (3.3 ms) it moves 10 px, a sixth of its radius; the fast step
    # and motion model (on at any RPM by default) keep the centre and the RPM
    errs = _track_drifting(9000.0, 5, lambda t: 3e-3 * t * np.minimum(1.0, t / 50_000.0))
    assert errs['default'][0] < 3.0 and errs['default'][1] < 90.0
    assert errs['half_turn'][0] > 2 * errs['default'][0]


def test_fast_step_runs_at_low_rpm_and_follows_a_moving_rotor():
    # a static synthetic low-RPM rotor whose image drifts at 0.3 px / ms: the half-turn
    # trigger lags, the fast step + motion model keep the centre
    errs = _track_drifting(1300.0, 3, lambda t: 0.3e-3 * t)
    # learnt velocity [px/ms], truth 0.3
    assert 0.15 < errs['default'][2].fs[FS_VX] * 1e3 < 0.5
    assert errs['default'][0] < 2.0 < errs['half_turn'][0]
