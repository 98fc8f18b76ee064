# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Outputs a consumer can trust (issue #11): lost packets, withheld values, hidden
rotors, camera motion at the live stride. Each test names the failure it guards
against; each failed on the code before its fix (noted per test). The gates and the
stream's time sanity: test_trust_gates.py, test_trust_stream.py.
"""

from dataclasses import replace
import math

import numpy as np
import pytest
from trust_scenes import _encoded, _raw, quad_scene

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.core.health import (
    R_GAP,
    RotorState,
)
from helixtrack_ros.core.params import TrackerParams
from helixtrack_ros.core.tracker import HelixTracker
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.sim import Simulator, make_scenario


@pytest.fixture(scope='module')
def quad():
    return quad_scene()


@pytest.fixture(scope='module')
def shaky_quad():
    """The quadcopter under the heaviest camera shake (egomotion 7)."""
    return quad_scene(ego_level=7)


# ------------------------------------------------------------------ lost packets
def test_evt3_decoder_resynchronises_its_time_after_lost_packets(quad):
    """Before: the words after a loss got the TIME_HIGH of before it (4.096 ms steps), so
    events came out up to tens of ms early; now they are skipped until the next TIME_HIGH."""
    scene, pkts = quad
    ev = Simulator(scene, seed=2).all_events()
    truth = set(zip(ev.t_us.tolist(), ev.x.tolist(), ev.y.tolist(), ev.p.tolist()))
    dec = make_decoder('evt3', 1280, 720)
    for i in range(100):
        dec.decode(pkts[i][0])
    dec.resync()
    skipped_to = 100 + 19
    got = [dec.decode(pkts[i][0]).events for i in range(skipped_to, skipped_to + 20)]
    t = np.concatenate([g.t_us for g in got])
    assert len(t) > 0
    # every event decoded after the loss is an event of the stream, with its true time
    for g in got:
        assert set(zip(g.t_us.tolist(), g.x.tolist(), g.y.tolist(), g.p.tolist())) <= truth
    assert int(t[0]) >= pkts[skipped_to][1]
    assert dec.counters['resync_skipped'] > 0


@pytest.mark.parametrize('gap', [19, 150])
def test_dropped_packets_under_the_stride_are_withheld_then_tracked_again(quad, gap):
    """Before: 19 dropped packets made all four rotors LOST (the decoder's stale time, then
    the gap read as starvation), and their runaway RPM was published; 150 (more than the
    leap bound of 0.1 s) had every later packet refused as a time leap, the last outputs
    repeated. Now: withheld while the extrapolated state is re-validated, then measured."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1,
                                           realtime_stride=True))
    pipe.set_stride(4)
    g0, g1 = 120, 120 + gap
    kept = [i for i in range(len(pkts)) if not g0 <= i < g1]
    results = []
    for k in range(0, len(kept), 20):
        results += pipe.process_packets(_raw(pkts, kept[k:k + 20]))
    assert pipe.counters['packets_dropped'] == gap
    assert pipe.counters['packets_corrupt'] == 0
    t_gap = pkts[g1][1]
    after = [r for r in results if r.t_us > t_gap]
    assert len(after) == len(pkts) - g1
    t = np.array([r.t_us for r in after])
    gt = scene.ground_truth(t)
    revalidate_us = 10_000 + gap * 1000 // 4 + 2 * 5000
    for k, rotor in enumerate(scene.rotors):
        states = np.array([int(r.rotors[k].state) for r in after])
        assert after[0].rotors[k].state == RotorState.DEGRADED
        assert after[0].rotors[k].cause == R_GAP
        assert RotorState.LOST not in states and RotorState.STARVED not in states
        back = np.flatnonzero(states == RotorState.TRACKING)
        assert len(back) and t[back[0]] - t_gap <= revalidate_us
        assert (states[back[0]:] == RotorState.TRACKING).all()
        rpm = np.array([r.rotors[k].rpm_shaft for r in after])
        err = np.abs(rpm - gt[rotor.name]['rpm']) / gt[rotor.name]['rpm']
        assert np.isnan(rpm[:back[0]]).all()
        assert err[back[0]:].max() < 0.005, (rotor.name, err[back[0]:].max())


# ------------------------------------------------------------------ withheld values
def test_a_rotor_whose_centre_is_off_the_sensor_publishes_nan_never_its_initial_rpm(quad):
    """Before: its initial RPM on every row (health DEGRADED, never LOST)."""
    scene, pkts = quad
    inits = rotor_inits_from_scene(scene)
    off = replace(inits[0], name='off_sensor', center_px=(1500.0, 900.0))
    pipe = TrackingPipeline(PipelineConfig(rotors=[*inits, off], threads=1))
    results = pipe.process_packets(_raw(pkts, range(150)))
    rows = [r.rotors[-1] for r in results]
    assert all(o.state == RotorState.OUTSIDE for o in rows)
    assert all(math.isnan(o.rpm_shaft) and math.isnan(o.omega_rad_s)
               and np.isnan(o.homography).all() for o in rows)
    # the others are measured once locked
    assert results[-1].rotors[0].state == RotorState.TRACKING


def test_only_tracking_rotors_carry_numbers(quad):
    """Every output row: finite numbers exactly when the state is TRACKING."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    results = pipe.process_packets(_raw(pkts, range(len(pkts))))
    seen = set()
    for r in results:
        for o in r.rotors:
            seen.add(o.state)
            finite = math.isfinite(o.rpm_shaft) and np.isfinite(o.homography).all()
            assert finite == (o.state == RotorState.TRACKING)
    assert {RotorState.ACQUIRING, RotorState.TRACKING} <= seen


@pytest.fixture(scope='module')
def hidden():
    hide_s = (0.25, 0.30)
    scene = make_scenario('quadcopter_4m', duration_s=0.6, ego_level=1, seed=4,
                          hide_rotor=('front_left', *hide_s))
    return hide_s, scene, _encoded(scene, 4)


@pytest.mark.parametrize('stride', [1, 4])
def test_a_hidden_rotor_is_starved_within_50_ms_and_tracked_again_within_150_ms(hidden, stride):
    """Before: starved rotors kept publishing their last estimate. Also under the
    real-time stride (every 4th event), in batches of 20 packets like the live node."""
    hide_s, scene, pkts = hidden
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.set_stride(stride)
    results = []
    for k in range(0, len(pkts), 20):
        results += pipe.process_packets(_raw(pkts, range(k, min(k + 20, len(pkts)))))
    k = [r.name for r in scene.rotors].index('front_left')
    t = np.array([r.t_us for r in results])
    state = np.array([int(r.rotors[k].state) for r in results])
    rpm = np.array([r.rotors[k].rpm_shaft for r in results])
    t0, t1 = (int(v * 1e6) for v in hide_s)
    assert (state[t < t0][-50:] == RotorState.TRACKING).all()
    starved = t[(t >= t0) & (state == RotorState.STARVED)]
    assert len(starved) and starved[0] - t0 <= 50_000
    assert np.isnan(rpm[(t >= t0 + 50_000) & (t < t1)]).all()
    back = t[(t >= t1) & (state == RotorState.TRACKING)]
    assert len(back) and back[0] - t1 <= 150_000
    gt = scene.ground_truth(t[t >= back[0]])['front_left']['rpm']
    assert np.mean(np.abs(rpm[t >= back[0]] - gt) / gt) < 0.005


def _state_trace(scene, pkts, name, background):
    """Per output row: sensor time, state of rotor ``name``; and the pipeline's counters."""
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1,
                                           detect_in_background=background))
    pipe.set_stride(4)
    results = []
    for k in range(0, len(pkts), 20):
        results += pipe.process_packets(_raw(pkts, range(k, min(k + 20, len(pkts)))))
    k = [r.name for r in scene.rotors].index(name)
    t = np.array([r.t_us for r in results])
    state = np.array([int(r.rotors[k].state) for r in results])
    return t, state, pipe.counters


def test_a_hidden_rotor_is_resumed_at_its_last_pose_without_waiting_for_a_detection(hidden):
    """Before: a starved rotor came back only through a re-detection; with the detector
    in a background thread (as in the node) its wall time became sensor time: 151 ms
    here offline at stride 4, up to 195 ms live. Now its tracker restarts at its last
    good pose as soon as its events are back."""
    hide_s, scene, pkts = hidden
    t, state, counters = _state_trace(scene, pkts, 'front_left', background=True)
    t1 = int(hide_s[1] * 1e6)
    back = t[(t >= t1) & (state == RotorState.TRACKING)]
    assert len(back) and back[0] - t1 <= 40_000, back[:3]
    assert counters['resumes'] == 1 and counters['recoveries'] == 0


def test_a_hidden_rotor_that_comes_back_elsewhere_is_re_detected():
    """Its events come back off its last pose (half a radius away): not resumed there
    (the resume published 1.7 % wrong values for 20 ms before losing it), re-detected."""
    scene = make_scenario('quadcopter_4m', duration_s=0.7, ego_level=1, seed=4,
                          hide_rotor=('front_left', 0.25, 0.30),
                          jump=('front_left', 0.27, 0.5, 0.0))
    t, state, counters = _state_trace(scene, _encoded(scene, 4), 'front_left',
                                      background=False)
    back = t[(t >= 300_000) & (state == RotorState.TRACKING)]
    assert counters['resumes'] == 0 and counters['recoveries'] == 1, counters
    assert len(back) and back[0] - 300_000 <= 150_000, back[:3]


def test_a_restarted_rotor_that_misses_its_deadline_while_degraded_is_searched_again(quad):
    """A rotor restarted at its pose that is still DEGRADED (here: its rate never counts
    as settled) when its reset deadline passes must be searched for again. Before, the
    recovery step saw the tracker's own level (DEGRADED, not LOST), returned, and the
    rotor stayed unsearched and untracked for the rest of the stream (no attempt)."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(150)))
    bank = pipe._bank
    tracker = bank.trackers[0]
    tracker.params = replace(bank.config.tracker, health_settle_rpm_s=1.0)
    here = replace(bank.inits[0], center_px=(float(tracker.q[2]), float(tracker.q[3])))
    bank.recs[0]._restart(bank, 0, here, pkts[149][2], resumed=True)
    for k in range(150, len(pkts), 10):
        pipe.process_packets(_raw(pkts, range(k, min(k + 10, len(pkts)))))
    assert pipe.counters['recovery_attempts'] >= 1 and pipe.counters['recoveries'] >= 1


@pytest.fixture(scope='module')
def moving():
    scene = make_scenario('quadcopter_4m', duration_s=0.5, ego_level=5, seed=0)
    return scene, _encoded(scene, 0)


def _strided_run(scene, pkts, keep, tracker=None):
    """Output rows of the pipeline at stride 8 in batches of 20 packets (the live node's
    overload regime) over the packets ``keep``; and each rotor's states and RPM."""
    config = PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1)
    pipe = TrackingPipeline(replace(config, tracker=tracker) if tracker else config)
    pipe.set_stride(8)
    results = []
    for k in range(0, len(keep), 20):
        results += pipe.process_packets(_raw(pkts, keep[k:k + 20]))
    t = np.array([r.t_us for r in results])
    per_rotor = [(np.array([int(r.rotors[k].state) for r in results]),
                  np.array([r.rotors[k].rpm_shaft for r in results]))
                 for k in range(len(scene.rotors))]
    return t, per_rotor


def _worst_published_error(scene, t, per_rotor, after_us):
    gt = scene.ground_truth(t)
    worst = 0.0
    for rotor, (_, rpm) in zip(scene.rotors, per_rotor):
        m = np.isfinite(rpm) & (t > after_us)
        truth = gt[rotor.name]['rpm'][m]
        worst = max(worst, float(np.max(np.abs(rpm[m] - truth) / truth)))
    return worst


def test_stride_8_under_camera_motion_keeps_every_rotor_locked(moving):
    """#11.3, the cause of the strided live losses: the Gauss-Newton event target was
    divided by the stride, and a solve on 3000 / 8 events let the pose drift off (this
    scene: 40-55 % of the values withheld, up to 5.7 % off while TRACKING). The target is
    now at most halved (realtime.MAX_GN_DIVISOR)."""
    scene, pkts = moving
    t, per_rotor = _strided_run(scene, pkts, list(range(len(pkts))))
    for rotor, (state, _) in zip(scene.rotors, per_rotor):
        assert (state[t > 50_000] == RotorState.TRACKING).all(), rotor.name
    assert _worst_published_error(scene, t, per_rotor, 50_000) < 0.005


@pytest.mark.parametrize('gap_at', [250, 300])
def test_after_44_lost_packets_no_value_is_published_while_the_rate_still_rings(moving, gap_at):
    """A gap of 44 packets (as DDS lost live) under camera motion at stride 8: the pose
    goes off, comes back, and the phase filter's rate rings for ~30 ms. Before, the
    rotor was TRACKING again within ~25 ms and published values 0.65 % / 1.28 % off; now
    a window counts toward re-validation only once the acceleration is steady
    (health_settle_rpm_s, and health_jerk_rel and health_phase_drift since). With
    those off, the same run shows the old error (2.6 % / 0.80 %). (A gap at 350, the
    old second case, now loses every rotor and re-detects it by the drone's layout
    25 ms later than the nearest-detection rule, which re-initialised two rotors on
    their neighbours: no ringing left to test there.)"""
    scene, pkts = moving
    keep = [i for i in range(len(pkts)) if not gap_at <= i < gap_at + 44]
    t, per_rotor = _strided_run(scene, pkts, keep)
    assert _worst_published_error(scene, t, per_rotor, 60_000) < 0.005
    t, per_rotor = _strided_run(scene, pkts, keep, TrackerParams(health_settle_rpm_s=0.0,
                                                                 health_jerk_rel=0.0,
                                                                 health_phase_drift=0.0))
    assert _worst_published_error(scene, t, per_rotor, 60_000) > 0.006


def test_after_35_lost_packets_no_value_is_published_while_the_pose_converges():
    """A gap of 35 packets at 3 m egomotion 5, stride 8: the pose comes back off (tip
    spill 0.25 against a usual 0.03) while the rate climbs steadily 1-2 % too high, so
    the settle rule (acceleration steady) let the rotor be TRACKING with values up to 1.2 %
    off. Now a re-validating window counts only with its spill near the usual one
    (health_settle_spill; the rule itself: test_health_evidence.py)."""
    scene = make_scenario('quadcopter_3m', duration_s=0.5, ego_level=5, seed=1)
    pkts = _encoded(scene, 1)
    keep = [i for i in range(len(pkts)) if not 300 <= i < 335]
    t, per_rotor = _strided_run(scene, pkts, keep)
    assert _worst_published_error(scene, t, per_rotor, 100_000) < 0.005


@pytest.mark.parametrize('stride', [4, 16])
def test_a_sudden_real_time_stride_is_not_starvation(quad, stride):
    """The live node's stride can climb within a few batches; starvation compared the
    tracked in-annulus rate with a reference formed at the old stride, so at stride 4 / 16
    rotors went STARVED, LOST and were resumed (seen once in the node's loopback test under
    load). The reference now follows the stride at once."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(200)))
    pipe.set_stride(stride)
    res = []
    for k in range(200, len(pkts), 10):
        res += pipe.process_packets(_raw(pkts, range(k, min(k + 10, len(pkts)))))
    for j, rotor in enumerate(scene.rotors):
        assert {r.rotors[j].state for r in res} == {RotorState.TRACKING}, rotor.name


# ------------------------------------------------------------------ parameter changes
def test_assigning_parameters_keeps_the_learnt_polarity_offsets(quad):
    """Before: every assignment (each real-time stride change) reset them to the defaults."""
    scene, pkts = quad
    init = rotor_inits_from_scene(scene)[0]
    dec = make_decoder('evt3', 1280, 720)
    evs = [dec.decode(p[0]).events for p in pkts[:200]]
    a, b = HelixTracker(init), HelixTracker(init)
    for ev in evs:
        for tr in (a, b):
            tr.process_packets(ev, np.array([len(ev)]), ev.t_us[-1:])
        b.params = b.params
    assert np.array_equal(a.gp, b.gp) and np.array_equal(a.fs, b.fs)


def _z_scores(scene, pkts, stride: int) -> list[np.ndarray]:
    """Per rotor, (RPM - truth) / its published std over the values published."""
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.set_stride(stride)
    results = []
    for k in range(0, len(pkts), 20):
        results += pipe.process_packets(_raw(pkts, range(k, min(k + 20, len(pkts)))))
    t = np.array([r.t_us for r in results])
    truth = scene.ground_truth(t)
    z_all = []
    for k, rotor in enumerate(scene.rotors):
        rpm = np.array([r.rotors[k].rpm_shaft for r in results])
        std = np.array([r.rotors[k].rpm_shaft_std for r in results])
        m = np.isfinite(rpm)
        assert np.isfinite(std[m]).all() and (std[m] > 0).all(), rotor.name
        z_all.append((rpm[m] - truth[rotor.name]['rpm'][m]) / std[m])
    return z_all


@pytest.mark.parametrize('stride', [1, 4])
def test_the_published_rpm_std_covers_the_error(quad, stride):
    """A consumer weighs each RPM by its published standard deviation: the error must lie
    within a few of them. The EKF's std comes from its model of independent events; this
    holds it to the ground truth. Measured here: z RMS 0.2-0.8, no |z| > 3; an std a
    quarter as large would put up to 53 % of a rotor's values beyond 3 and fail. Over 36
    scenes of quadcopter 2-4 m at egomotion 3-6: 0.05 % of the values at stride 1 and
    0.09 % at stride 4 lie beyond 3 std (benchmarks/RESULTS.md)."""
    scene, pkts = quad
    z_all = _z_scores(scene, pkts, stride)
    for rotor, z in zip(scene.rotors, z_all, strict=True):
        assert math.sqrt(np.mean(z ** 2)) < 1.5, rotor.name
    z = np.concatenate(z_all)
    assert len(z) > 1000
    assert np.mean(np.abs(z) > 3) < 0.005


def test_the_published_rpm_std_covers_the_camera_roll(shaky_quad):
    """Under the heaviest camera shake (egomotion 7) the error follows the layout's turn in
    the image, which no rotor's filter can tell from its shaft's rate: its std was half
    the error (z RMS 1.56-1.75 per rotor here, 6.3 % of the values beyond 3). The layout's
    rotation rate, measured from the tracked centres, now enters the std
    (pipeline/layout_roll.py): z RMS 0.96-1.06, 0.13 % beyond 3."""
    scene, pkts = shaky_quad
    z_all = _z_scores(scene, pkts, 1)
    for rotor, z in zip(scene.rotors, z_all, strict=True):
        assert len(z) > 300, rotor.name
        assert math.sqrt(np.mean(z ** 2)) < 1.3, rotor.name
    assert np.mean(np.abs(np.concatenate(z_all)) > 3) < 0.01


def test_the_diagnostics_say_the_published_rpm_and_std(shaky_quad):
    """/diagnostics read the tracker's own std (without the layout's turn) beside the
    outputs' std: one number, two values. Now they say the last output's."""
    scene, pkts = shaky_quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    last = pipe.process_packets(_raw(pkts, range(len(pkts))))[-1]
    rotors = {d['hardware_id']: d['values'] for d in pipe.diagnostics()
              if d['name'].startswith('helixtrack: rotor')}
    widened = 0
    for o, tracker in zip(last.rotors, pipe._bank.trackers, strict=True):
        assert o.state == RotorState.TRACKING, o.name
        assert rotors[o.name]['rpm_shaft'] == f'{o.rpm_shaft:.1f}'
        assert rotors[o.name]['rpm_shaft_std'] == f'{o.rpm_shaft_std:.1f}'
        widened += o.rpm_shaft_std > tracker.state.rpm_shaft_std + 0.1
    assert widened == len(last.rotors)


def test_a_lone_rotors_std_covers_the_camera_roll_it_cannot_see():
    """One rotor on the heaviest shake: no layout shows the camera's roll, which the
    filter takes for shaft rate (z RMS 2.75 here, 29 % of the values beyond 3). Its
    centre's image speed now stands for the turn (pipeline/layout_roll.py): z RMS 1.52,
    4.5 % beyond 3."""
    scene = make_scenario('lone_constant', duration_s=0.4, ego_level=7, seed=3)
    (z,) = _z_scores(scene, _encoded(scene, 3), 1)
    assert len(z) > 300
    assert math.sqrt(np.mean(z ** 2)) < 1.8
    assert np.mean(np.abs(z) > 3) < 0.08
