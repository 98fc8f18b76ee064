# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Outputs a consumer can trust: the plausibility gates (RPM range, runaway rates,
centre jumps, unsteady or lagging rates) and trackers on another rotor. Each test
names the failure it guards against; each failed on the code before its fix."""

from dataclasses import replace
import math

import numpy as np
import pytest

from helixtrack_ros.codecs.evt3_encoder import packetize
from helixtrack_ros.core.health import (
    DEGRADED,
    HI_CAUSE,
    HI_LEVEL,
    HI_NTIP,
    HI_T0,
    HP_WIN,
    HS_COS,
    HS_LOGS_REF,
    HS_NREF,
    LOST,
    R_ACCEL,
    R_CENTRE_JUMP,
    R_OTHER_ROTOR,
    R_RPM_RANGE,
    R_UNSTEADY,
    TRACKING,
    RotorState,
    new_health_state,
    pack_health_params,
)
from helixtrack_ros.core.health_machine import _health_close, _health_range
from helixtrack_ros.core.health_text import reason_text
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.tracker import HelixTracker
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.sim import Simulator, make_scenario
from helixtrack_ros.sim.schedules import RpmSchedule


# ------------------------------------------------------------------ plausibility gates
def _gate_state():
    hp = pack_health_params(TrackerParams(), 2)
    hs, hi = new_health_state()
    hi[HI_T0] = 0          # a window open since t = 0
    hi[HI_LEVEL] = TRACKING
    return hp, hs, hi


def _close(hp, hs, hi, q, rpm_shaft, t_end):
    """Close the window ending at t_end (with 50 coherent tip-band events: judged)."""
    hi[HI_NTIP] += 50
    hs[HS_COS] += 50 * 0.95
    om = rpm_shaft * 2.0 * math.pi / 60.0 * 2
    _health_close(hp, hs, hi, np.asarray(q, float), True, om, 1.0, 1000 * t_end, t_end)


@pytest.mark.parametrize('rpm, cause', [(70_000.0, R_RPM_RANGE), (50.0, R_RPM_RANGE)])
def test_rpm_outside_its_range_is_lost_at_the_first_window(rpm, cause):
    hp, hs, hi = _gate_state()
    q = [math.log(50.0), 0.0, 400.0, 300.0, 0.0, 0.0]
    _close(hp, hs, hi, q, rpm, int(hp[HP_WIN]))
    assert hi[HI_LEVEL] == LOST and hi[HI_CAUSE] == cause


def test_a_tracking_rpm_leaving_its_range_is_lost_at_the_packet_not_the_window_close():
    """A motor stopping was published at 55 and 2 RPM (gate_rpm_min 100) until its window
    closed (scene review): the range is checked after every packet too."""
    hp, hs, hi = _gate_state()
    for rpm, level in [(5000.0, TRACKING), (60_000.0, TRACKING), (55.0, LOST)]:
        _health_range(hp, hs, hi, rpm * 2.0 * math.pi / 60.0 * 2)
        assert hi[HI_LEVEL] == level, rpm
    assert hi[HI_CAUSE] == R_RPM_RANGE
    hp, hs, hi = _gate_state()
    hi[HI_LEVEL] = DEGRADED                      # (only a TRACKING rotor is judged here)
    _health_range(hp, hs, hi, 1.0)
    assert hi[HI_LEVEL] == DEGRADED


def test_a_per_rotor_rpm_range_replaces_the_default_bounds():
    p = TrackerParams()
    hp = pack_health_params(p, 2, (1000.0, 3000.0))
    hs, hi = new_health_state()
    hi[HI_T0] = 0
    hi[HI_LEVEL] = TRACKING
    _close(hp, hs, hi, [math.log(50.0), 0.0, 400.0, 300.0, 0.0, 0.0], 5000.0, 5000)
    assert hi[HI_LEVEL] == LOST and hi[HI_CAUSE] == R_RPM_RANGE


def test_a_runaway_rpm_or_a_centre_jump_is_lost_within_one_window():
    q = [math.log(50.0), 0.0, 400.0, 300.0, 0.0, 0.0]
    hp, hs, hi = _gate_state()
    win = int(hp[HP_WIN])
    _close(hp, hs, hi, q, 5000.0, win)
    assert hi[HI_LEVEL] == TRACKING
    # 5,000 -> 9,000 RPM in one 5 ms window: 800,000 RPM/s > 500,000
    _close(hp, hs, hi, q, 9000.0, 2 * win)
    assert hi[HI_LEVEL] == LOST and hi[HI_CAUSE] == R_ACCEL
    hp, hs, hi = _gate_state()
    _close(hp, hs, hi, q, 5000.0, win)
    moved = [q[0], q[1], q[2] + 30.0, q[3], q[4], q[5]]      # 0.6 tip radii in one window
    _close(hp, hs, hi, moved, 5000.0, 2 * win)
    assert hi[HI_LEVEL] == LOST and hi[HI_CAUSE] == R_CENTRE_JUMP


@pytest.mark.parametrize('rpms, unsteady_at', [
    ((5000.0, 5100.0, 5200.0, 5300.0, 5400.0), None),     # a steady ramp: 20,000 RPM/s
    ((5000.0, 5000.0, 5000.0, 5100.0), 3),                # its onset: 20,000 > 2.5 x 5,100
])
def test_a_rate_whose_acceleration_jumps_is_not_tracking(rpms, unsteady_at):
    """A change of acceleration between two windows of more than health_jerk_rel (2.5)
    times the shaft RPM: DEGRADED, 'rate unsteady'; a steady acceleration is not one."""
    hp, hs, hi = _gate_state()
    q = [math.log(50.0), 0.0, 400.0, 300.0, 0.0, 0.0]
    hs[HS_NREF], hs[HS_LOGS_REF] = 5.0, q[0]            # settled references
    win = int(hp[HP_WIN])
    for k, rpm in enumerate(rpms):
        _close(hp, hs, hi, q, rpm, (k + 1) * win)
        if k == unsteady_at:
            assert hi[HI_LEVEL] == DEGRADED and hi[HI_CAUSE] == R_UNSTEADY
            assert 'rate unsteady' in reason_text(hi, hs)
        else:
            assert hi[HI_LEVEL] == TRACKING, k


def _lone_trace(scene):
    """(t_us, shaft RPM, state) after every 1 ms of a lone-rotor scene, through the pipeline."""
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    rows = [pipe.process_events(chunk)[0] for chunk in Simulator(scene, seed=0).chunks(
        chunk_us=1000) if len(chunk)]
    return (np.array([o.t_us for o in rows]), np.array([o.rpm_shaft for o in rows]),
            np.array([int(o.state) for o in rows]))


def test_a_slow_rotor_whose_rate_scatters_on_a_shaking_camera_is_not_tracking():
    """Found by the scene review: on low_rpm_shake (a ~1,000 RPM rotor, the camera shaking)
    243 of 546 TRACKING values were 1-3 % off, scattered about the truth while the
    filter's own std said 0.4 %. Their acceleration changes 3-10 RPM/s per RPM between
    windows (tracked scenes: below 1.9): now DEGRADED ('rate unsteady')."""
    scene = make_scenario('low_rpm_shake', duration_s=0.6, seed=0)
    t, rpm, states = _lone_trace(scene)
    ok = states == RotorState.TRACKING
    truth = scene.ground_truth(t)[scene.rotors[0].name]['rpm']
    err = np.abs(rpm[ok] - truth[ok]) / truth[ok]
    assert ok.sum() >= 50 and (err > 0.01).mean() < 0.1 and err.max() < 0.02


def test_a_rotor_slowing_to_an_eighth_is_not_starved():
    """Found by the scene review: a motor cut from 12,000 to 1,500 RPM in 0.15 s. Its blade
    edges pass an eighth as often, so the in-annulus rate fell below the starvation bound
    of its usual (fast) rate: STARVED from 0.3 s to the end, and the search for it waited
    for that rate too. The usual rate now scales down with the RPM."""
    from helixtrack_ros.sim.schedules import RpmSchedule
    scene = make_scenario('lone_constant', duration_s=0.6, seed=0)
    scene.rotors[0].schedule = RpmSchedule.piecewise([0, 150e3, 300e3], [12000, 12000, 1500])
    t, rpm, states = _lone_trace(scene)
    late = t > 400_000
    assert (states[late] == RotorState.TRACKING).all()
    assert np.abs(rpm[late] - 1500.0).max() < 15.0


def _nearest_pick(r, dets, layout, region, tracked, last, may_be_r, reach, moved_px=None):
    """The re-detection pick before pipeline/layout_match.py: the detection nearest the
    rotor's last place that it may be."""
    from helixtrack_ros.pipeline.layout_match import LayoutPick
    near = [j for j in range(len(dets)) if may_be_r(j)
            and math.hypot(dets[j][0] - last[0], dets[j][1] - last[1]) <= reach * last[2]]
    return LayoutPick(min(near, key=lambda j: math.hypot(dets[j][0] - last[0],
                                                         dets[j][1] - last[1]))
                      if near else None, None)


@pytest.mark.parametrize('pick', ['layout', 'nearest'])
def test_a_tracker_that_drifted_onto_another_rotor_publishes_nothing(pick, monkeypatch):
    """Found by the scene review: with the paper preset, rear_right lost its rotor, was
    re-detected on front_right at 40 ms (the detection nearest its place) and locked
    there: 25 TRACKING values of front_right's RPM under rear_right's name (91 % off its
    own). A TRACKING centre within a tip radius of another rotor's last good centre,
    more than a radius from its own, is LOST ('on another rotor') and searched for where
    it belongs (with the old pick: that test catches it). The drone's layout now reads
    the detections of a search: every re-detection is of the rotor's own place. (Its
    windows on front_right read a tip coherence of 0.1-0.4: health_coherence_seed
    refuses them as references, so with the old pick the tracker is never TRACKING
    there; the identity test is exercised with that rule off.)"""
    from helixtrack_ros.core.presets import apply_preset
    from helixtrack_ros.pipeline import recovery
    params = apply_preset('paper')
    if pick == 'nearest':
        monkeypatch.setattr(recovery, 'layout_pick', _nearest_pick)
        params = replace(params, health_coherence_seed=-1.0)
    restarts = []
    restart = recovery.RotorRecovery._restart

    def spy(self, bank, r, init, t_last, resumed):
        restarts.append((r, init.center_px))
        return restart(self, bank, r, init, t_last, resumed)

    monkeypatch.setattr(recovery.RotorRecovery, '_restart', spy)
    scene = make_scenario('quadcopter_2m', duration_s=0.5, seed=0)
    inits = rotor_inits_from_scene(scene)
    pipe = TrackingPipeline(PipelineConfig(rotors=inits, tracker=params, threads=1))
    off, causes = [], set()
    for chunk in Simulator(scene, seed=0).chunks(chunk_us=1000):
        if not len(chunk):
            continue
        outs = pipe.process_events(chunk)
        truth = scene.ground_truth(np.array([outs[0].t_us]))
        for o in outs:
            causes.add(int(o.cause))
            if o.state == RotorState.TRACKING:
                h, ht = np.asarray(o.homography), truth[o.name]['H'][0]
                off.append(math.hypot(h[0, 2] / h[2, 2] - ht[0, 2] / ht[2, 2],
                                      h[1, 2] / h[2, 2] - ht[1, 2] / ht[2, 2]))
    assert max(off, default=0.0) < 20.0          # every value from its own rotor
    # (the drone barely moves: a rotor's own place is within a radius of its first one)
    own = [math.hypot(c[0] - inits[r].center_px[0], c[1] - inits[r].center_px[1])
           < inits[r].radius_px for r, c in restarts]
    if pick == 'nearest':
        assert R_OTHER_ROTOR in causes and not all(own)
    else:
        assert R_OTHER_ROTOR not in causes and all(own) and len(own) >= 8


def test_a_tracker_on_another_rotor_under_a_shaking_camera_publishes_nothing():
    """Found by the coverage review: quadcopter_4m at egomotion 7, rotor 0's tracker sat on
    rotor 3 from 265 to 400 ms and published its ~7,900 RPM (55-65 % off, 135 values):
    the neighbour's last good centre was 1.17 radii stale by then. The rotors keep their
    places relative to each other: seen from every other TRACKING rotor, rotor 0 was on
    rotor 3's place, so it is LOST ('on another rotor')."""
    scene = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=7, seed=0)
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    worst = 0.0
    for chunk in Simulator(scene).chunks(chunk_us=1000):
        if not len(chunk):
            continue
        for o, rotor in zip(pipe.process_events(chunk), scene.rotors):
            if o.state == RotorState.TRACKING:
                truth = float(rotor.rpm_shaft(np.array([o.t_us]))[0])
                worst = max(worst, abs(o.rpm_shaft - truth) / truth)
    assert worst < 0.1


def test_a_tracker_locked_outside_its_rpm_range_is_lost_within_10_ms_of_lock():
    scene = make_scenario('lone_constant', duration_s=0.2, seed=5)
    ev = Simulator(scene, seed=5).all_events()
    init = rotor_inits_from_scene(scene)[0]
    tr = HelixTracker(replace(init, rpm_range=(1000.0, 5000.0)))
    t_lock = None
    for a, b in packetize(ev.t_us, 1000):
        part = ev.slice(a, b)
        tr.process_packets(part, np.array([len(part)]), part.t_us[-1:])
        if t_lock is None and tr.diagnostics()['locked']:
            t_lock = int(part.t_us[-1])
        if tr.health == LOST:
            break
    assert t_lock is not None and tr.health == LOST
    assert int(tr.hi[HI_CAUSE]) == R_RPM_RANGE
    assert int(part.t_us[-1]) - t_lock <= 10_000


def test_rotor_rpm_range_is_validated():
    with pytest.raises(ValueError, match='rpm_range'):
        RotorInit('r', (10.0, 10.0), 20.0, 3000.0, 2, rpm_range=(5000.0, 1000.0))
    with pytest.raises(ValueError, match='gate_rpm_max'):
        TrackerParams(gate_rpm_min=5000.0, gate_rpm_max=100.0)


def _published_off(scene, tracker):
    """Rows (1 ms packets) whose published shaft RPM is more than 1 % off."""
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1,
                                           tracker=tracker))
    off = 0
    for chunk in Simulator(scene).chunks(chunk_us=1000):
        for o, rotor in zip(pipe.process_events(chunk), scene.rotors):
            truth = float(rotor.rpm_shaft(np.array([o.t_us]))[0])
            off += int(np.isfinite(o.rpm_shaft) and abs(o.rpm_shaft - truth) > 0.01 * truth)
    return off


def test_a_rate_lagging_a_sudden_acceleration_is_not_published():
    """8000 -> 12000 shaft RPM in 10 ms: the phase EKF (small jerk noise) keeps the phase
    but its rate lags 5-25 % for ~9 ms while the tip coherence stays 0.98-1. The weighted
    mean phase residual keeps one sign then (health_lag_rel on the recent residuals and
    health_phase_drift on the pending window, checked per packet): at most the packet of
    the onset is published; with both off, 4 packets are (the window close's
    health_jerk_rel catches the rest), with that off too 6 (the phase filter's support,
    health_support_rel, falls during the lag too), with the four off 9."""
    scene = make_scenario('lone_constant', 0.2, seed=0)
    scene.rotors[0].schedule = RpmSchedule.piecewise([0, 150e3, 160e3], [8000, 8000, 12000],
                                                     0.3)
    off = dict(health_phase_drift=0.0, health_lag_rel=0.0)
    assert _published_off(scene, TrackerParams()) <= 1
    assert _published_off(scene, TrackerParams(**off)) >= 3
    assert _published_off(scene, TrackerParams(**off, health_jerk_rel=0.0)) >= 5
    assert _published_off(scene, TrackerParams(**off, health_jerk_rel=0.0,
                                                health_support_rel=0.0)) >= 8
