# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Outputs a consumer can trust (issue #11): lost packets, withheld values, gates, starvation.

Each test names the failure it guards against; each failed on the code
before its fix (noted per test).
"""

from dataclasses import replace
import math

import numpy as np
import pytest

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
from helixtrack_ros.core.events import EventArrays
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
    R_GAP,
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
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.sim import Simulator, make_scenario
from helixtrack_ros.sim.schedules import RpmSchedule

STAMP0_NS = 10**18


def _encoded(scene, seed: int) -> list[tuple[bytes, int, int]]:
    """(payload, first t_us, last t_us) of ~1 ms EVT3 packets of a simulated scene."""
    ev = Simulator(scene, seed=seed).all_events()
    enc = Evt3Encoder()
    out = []
    for a, b in packetize(ev.t_us, 1000):
        part = ev.slice(a, b)
        out.append((enc.encode(part), int(part.t_us[0]), int(part.t_us[-1])))
    return out


def _raw(pkts, indices) -> list[EventPacketRecord]:
    return [EventPacketRecord(STAMP0_NS + pkts[i][1] * 1000, '', 720, 1280, i, 0, 'evt3', False,
                              pkts[i][0]) for i in indices]


@pytest.fixture(scope='module')
def quad():
    scene = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=3, seed=2)
    return scene, _encoded(scene, 2)


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
    the detections of a search: every re-detection is of the rotor's own place."""
    from helixtrack_ros.core.presets import apply_preset
    from helixtrack_ros.pipeline import recovery
    if pick == 'nearest':
        monkeypatch.setattr(recovery, 'layout_pick', _nearest_pick)
    restarts = []
    restart = recovery.RotorRecovery._restart

    def spy(self, bank, r, init, t_last, resumed):
        restarts.append((r, init.center_px))
        return restart(self, bank, r, init, t_last, resumed)

    monkeypatch.setattr(recovery.RotorRecovery, '_restart', spy)
    scene = make_scenario('quadcopter_2m', duration_s=0.5, seed=0)
    inits = rotor_inits_from_scene(scene)
    pipe = TrackingPipeline(PipelineConfig(rotors=inits, tracker=apply_preset('paper'),
                                           threads=1))
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


# ------------------------------------------------------------------ time sanity
def test_random_payloads_never_give_an_output_outside_the_accepted_stream():
    """Before: runs of random-byte packets were taken as a camera restart after five in a
    row, and their random TIME_HIGH words became output times of up to 1.27e9 us."""
    scene = make_scenario('lone_constant', duration_s=0.3, seed=5)
    pkts = _encoded(scene, 5)
    rng = np.random.default_rng(3)
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    t_lo, t_hi = pkts[0][1], pkts[-1][2]
    outputs, refused = [], 0
    for i, (payload, t0, _) in enumerate(pkts):
        junk = (i % 7 == 3) or (120 <= i < 140)     # scattered and a run of 20
        if junk:
            payload = rng.integers(0, 256, max(len(payload), 64), np.uint8).tobytes()
        res = pipe.process_packet(payload, 'evt3', 1280, 720, False, STAMP0_NS + t0 * 1000, i)
        refused += res.error is not None
        if res.error is None and res.rotors:
            outputs.append(res.t_us)
    assert refused >= 20 and pipe.counters['camera_restarts'] == 0
    assert t_lo <= min(outputs) and max(outputs) <= t_hi
    assert np.all(np.diff(outputs) >= 0)


def test_a_sensor_time_leap_beyond_the_header_stamps_is_refused_until_it_persists(quad):
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(50)))
    # the same packets again, their sensor time 0.3 s ahead of their header stamps
    dec = make_decoder('evt3', 1280, 720)
    evs = [dec.decode(p[0]).events for p in pkts[:60]]
    errors = []
    for k in range(50, 60):
        ev = evs[k]
        moved = EventArrays(ev.t_us + 300_000, ev.x, ev.y, ev.p)
        res = pipe.process_packet(Evt3Encoder().encode(moved), 'evt3', 1280, 720, False,
                                  STAMP0_NS + pkts[k][1] * 1000, k)
        errors.append(res.error)
    assert all('leapt' in e for e in errors[:5]) and errors[5:] == [None] * 5
    assert pipe.counters['packets_corrupt'] == 5 and pipe.counters['camera_restarts'] == 0
    assert pipe.counters['time_gaps'] == 1


@pytest.mark.parametrize('lost', [150, 40])
def test_events_lost_upstream_without_a_seq_gap_do_not_lock_the_rotors_out(quad, lost):
    """A driver behind the camera drops its backlog: 150 or 40 ms of sensor time gone, the
    seq numbers contiguous, the header stamps 1 ms on. Before: after 150 ms every later
    packet was refused as a time leap and all rotors stayed STARVED to the end; after
    40 ms they starved and took 0.4 s to lock again (live-node review). (After 50 ms of
    this scene the words before the next TIME_HIGH carry the old time without falling
    behind it: not seen, as before; benchmarks/RESULTS.md.)"""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    kept = list(range(100)) + list(range(100 + lost, len(pkts)))
    stamps = [STAMP0_NS + pkts[0][1] * 1000 + 1_000_000 * j for j in range(len(kept))]
    results = []
    for j, i in enumerate(kept):
        results += pipe.process_packets([EventPacketRecord(
            stamps[j], '', 720, 1280, j, 0, 'evt3', False, pkts[i][0])])
    after = [r for r in results[100:] if r.error is None and r.rotors]
    t = np.array([r.t_us for r in after])
    assert t[-1] >= pkts[-1][2] - 1000           # tracked to the end of the stream
    gt = scene.ground_truth(t)
    t_gap = pkts[100 + lost][1]
    for k, rotor in enumerate(scene.rotors):
        states = np.array([int(r.rotors[k].state) for r in after])
        back = np.flatnonzero((states == RotorState.TRACKING) & (t > t_gap))
        first = int(np.argmax(t > t_gap))
        assert states[first] in (RotorState.DEGRADED, RotorState.ACQUIRING), rotor.name
        assert RotorState.STARVED not in states[first:], rotor.name
        assert len(back) and t[back[0]] - t_gap <= 60_000, rotor.name
        assert (states[-50:] == RotorState.TRACKING).all(), rotor.name
        rpm = np.array([r.rotors[k].rpm_shaft for r in after])
        ok = states == RotorState.TRACKING
        err = np.abs(rpm[ok] - gt[rotor.name]['rpm'][ok]) / gt[rotor.name]['rpm'][ok]
        assert err.max() < 0.01, (rotor.name, err.max())
    assert pipe.counters['packets_corrupt'] <= 10
    c = pipe.counters
    assert c['sensor_gaps'] + c['time_gaps'] + c['packets_corrupt'] >= 1


def test_a_silence_inside_a_packet_of_a_sparse_stream_is_no_unseen_gap(quad):
    """A driver that cuts packets as events come holds a silence inside a packet (stamped
    at its first event): not events lost upstream, so nothing is left out."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    dec = make_decoder('evt3', 1280, 720)
    evs = [dec.decode(p[0]).events for p in pkts]
    enc = Evt3Encoder()
    parts = [evs[k] for k in range(100)] + [EventArrays.concatenate([evs[100], evs[130]])]
    parts += [evs[k] for k in range(131, 200)]
    n_in = 0
    for j, ev in enumerate(parts):
        pipe.process_packet(enc.encode(ev), 'evt3', 1280, 720, False,
                            STAMP0_NS + int(ev.t_us[0]) * 1000, j)
        n_in += len(ev)
    c = pipe.counters
    assert c['sensor_gaps'] == 0 and c['events_mistimed'] == 0 and c['events_in'] == n_in


def test_garbage_after_a_change_of_encoding_rolls_back_the_new_decoder(quad):
    # the decoder's state after the last good packet is what garbage rolls back to; a
    # stream that changes its encoding gets a new decoder, whose state that is not
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(30)))
    rng = np.random.default_rng(4)
    for k in range(30, 36):
        junk = rng.integers(0, 256, 4096, np.uint8).tobytes()
        res = pipe.process_packet(junk, 'evt2', 1280, 720, False, STAMP0_NS + pkts[k][1] * 1000,
                                  k)
        assert res.error is None or 'corrupt' in res.error
    assert pipe.counters['packets_corrupt'] >= 1


def test_a_packet_delivered_twice_is_dropped_not_tracked_again(quad):
    """Before: a bag with every message written twice fed each packet's events twice;
    the decoder clamped the repeated times and the rotors went LOST (helper review,
    2026-11-27). Now the copy is refused and the outputs are those of the stream once.
    A packet with the same seq but other bytes (a driver that does not count) is kept."""
    scene, pkts = quad
    inits = rotor_inits_from_scene(scene)
    once = TrackingPipeline(PipelineConfig(rotors=inits, threads=1))
    twice = TrackingPipeline(PipelineConfig(rotors=inits, threads=1))
    n = 150
    ref = once.process_packets(_raw(pkts, range(n)))
    doubled = [r for rec in _raw(pkts, range(n)) for r in (rec, rec)]
    got = twice.process_packets(doubled)
    assert [r.dropped is not None for r in got] == [False, True] * n
    assert all(r.error is None and not (r.dropped and r.rotors) for r in got)
    assert twice.counters['packets_duplicate'] == n
    assert twice.counters['seq_restarts'] == 0
    for a, b in zip(ref, got[::2]):
        assert [x.rpm_shaft for x in a.rotors] == pytest.approx(
            [x.rpm_shaft for x in b.rotors], nan_ok=True)
    same_seq = TrackingPipeline(PipelineConfig(rotors=inits, threads=1))
    recs = [r._replace(seq=0) for r in _raw(pkts, range(20))]
    assert all(r.error is None for r in same_seq.process_packets(recs))
    assert same_seq.counters['packets_duplicate'] == 0


def test_refused_and_empty_packets_do_not_leave_a_rotor_tracking(quad):
    """Before: while only refused packets (garbage) or only empty packets arrived, the
    node published nothing new or repeated TRACKING with the last RPM for seconds
    (node review, 2026-11-27). Now a refused packet's outputs are NaN, DEGRADED
    (events lost in transport), and an empty packet two health windows (10 ms of header
    time) after the last packet with events turns a rotor STARVED, NaN."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    good = pipe.process_packets(_raw(pkts, range(150)))
    assert all(r.state == RotorState.TRACKING for r in good[-1].rotors)
    garbage = _raw(pkts, [150])[0]._replace(
        events=np.random.default_rng(3).integers(0, 256, 4000, np.uint8).tobytes())
    refused = pipe.process_packets([garbage])[0]
    assert refused.error is not None and len(refused.rotors) == 4
    for r in refused.rotors:
        assert r.state == RotorState.DEGRADED and r.cause == R_GAP
        assert math.isnan(r.rpm_shaft) and math.isnan(r.phase_rad)
    last = _raw(pkts, [151])[0]
    empty = [last._replace(seq=152 + k, events=b'', stamp_ns=last.stamp_ns + k * 1_000_000)
             for k in range(1, 13)]
    out = pipe.process_packets(_raw(pkts, [151]) + empty)
    # right after events: the states of the packet before (nothing new measured)
    assert out[1].rotors == out[0].rotors
    late = out[-1]
    assert all(r.state == RotorState.STARVED and math.isnan(r.rpm_shaft)
               for r in late.rotors)
    assert late.stamp_ns == out[0].stamp_ns   # no output time beyond the last event


def test_a_mislabelled_encoding_is_counted_and_measures_nothing(quad):
    """Before: EVT3 packets labelled evt2 decoded to no event, silently, and the last
    TRACKING value was repeated for each (node review, 2026-11-27). Now the change is
    counted and named, and the rotors turn STARVED once a health window passed."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(150)))
    wrong = [r._replace(encoding='evt2') for r in _raw(pkts, range(150, 170))]
    out = pipe.process_packets(wrong)
    assert pipe.counters['format_changes'] == 1
    assert pipe.format_change == ('evt3 1280x720', 'evt2 1280x720')
    assert all(math.isnan(r.rpm_shaft) and r.state != RotorState.TRACKING
               for r in out[-1].rotors)


def test_the_encoding_name_is_read_whatever_its_case(quad):
    """Found by the live-node review: packets labelled 'EVT3' and 'evt3' in turn made a new
    decoder at every flip (10 format changes, 284k decode errors), and the EVT3-only
    checks skipped 'EVT3'. Now the name is read as the decoders read it."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    flipped = [r._replace(encoding='EVT3 ' if r.seq % 2 else 'evt3')
               for r in _raw(pkts, range(200))]
    out = pipe.process_packets(flipped)
    c = pipe.counters
    assert c['format_changes'] == 0 and c['decode_errors'] == 0
    assert all(r.state == RotorState.TRACKING for r in out[-1].rotors)


def test_a_late_packet_is_dropped_not_read_as_a_restart(quad):
    """Before: packets swapped in pairs counted as 100 dropped and 50 camera restarts,
    ~110 ms of NaN, and an output stamp going back (node review, 2026-11-27). Now a
    packet that comes after a later one is dropped as late (its events are older than
    those tracked), no longer counted as dropped, and no output goes back in time."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    order = list(range(200))
    for k in range(120, 140, 2):
        order[k], order[k + 1] = order[k + 1], order[k]
    out = []
    for k in range(0, 200, 5):
        out += pipe.process_packets(_raw(pkts, order[k:k + 5]))
    c = pipe.counters
    assert c['packets_late'] == 10 and c['packets_dropped'] == 0
    assert c['seq_restarts'] == 0 and c['camera_restarts'] == 0
    stamps = [r.stamp_ns for r in out if r.rotors]
    assert stamps == sorted(stamps)
    assert sum(r.dropped is not None for r in out) == 10 and c['packets_refused'] == 0
    assert all(x.state == RotorState.TRACKING for x in out[-1].rotors)


def test_a_small_sequence_reset_is_a_restart_not_late_packets(quad):
    """A driver that starts counting again at 0 soon after it started is no run of late
    packets (review, 2026-11-27: the first late rule dropped 9 good packets here)."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    recs = _raw(pkts, range(40))
    recs = recs[:10] + [r._replace(seq=k) for k, r in enumerate(recs[10:])]
    out = pipe.process_packets(recs)
    c = pipe.counters
    assert c['packets_late'] == 0 and c['seq_restarts'] == 1 and c['packets_dropped'] == 0
    assert all(r.dropped is None and r.error is None for r in out)


def test_header_stamps_of_zero_and_jitter_do_not_break_the_outputs(quad):
    """Stamps of 0 (sim time before its clock runs) give outputs stamped 0, not an
    error; an empty packet whose stamp came 6 ms late (host jitter) starves no rotor
    (review, 2026-11-27: the first empty-packet rule compared the header stamp with
    the mapped one, and turned such rotors STARVED)."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    zero = [r._replace(stamp_ns=0) for r in _raw(pkts, range(5))]
    out = pipe.process_packets(zero)
    assert all(r.error is None and r.stamp_ns == 0 for r in out)
    out = pipe.process_packets(_raw(pkts, range(5, 150)))
    assert out[-1].stamp_ns > STAMP0_NS
    assert all(r.state == RotorState.TRACKING for r in out[-1].rotors)
    last = _raw(pkts, [149])[0]
    late_empty = last._replace(seq=150, events=b'', stamp_ns=last.stamp_ns + 6_000_000)
    (res,) = pipe.process_packets([late_empty])
    assert res.rotors == out[-1].rotors


def test_a_failed_batch_leaves_nothing_queued(quad, monkeypatch):
    """A failure inside process_packets (a bug) left the packets admitted before it
    queued, pointing into batch memory the next call reuses (review, 2026-11-27); now
    they are dropped, and the next packets track as usual."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(100)))
    real = pipe._intake.admit
    calls = []

    def broken(*args):
        calls.append(1)
        if len(calls) == 3:         # after two packets were queued
            raise RuntimeError('a bug')
        return real(*args)
    monkeypatch.setattr(pipe._intake, 'admit', broken)
    with pytest.raises(RuntimeError):
        pipe.process_packets(_raw(pkts, range(100, 105)))
    assert not pipe._batches._pending and pipe._batches._inflight is None
    monkeypatch.setattr(pipe._intake, 'admit', real)
    out = pipe.process_packets(_raw(pkts, range(105, 200)))
    assert all(r.error is None for r in out)
    assert all(r.state == RotorState.TRACKING for r in out[-1].rotors)


def test_a_search_follows_a_change_of_sensor_size(quad):
    """A search that began while packets said 640x480 kept its region clipped to that
    image, and re-detected a rotor outside it only ~400 ms after the true size came
    back (node review, 2026-11-27); now the region follows the image."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(100)))
    small = [r._replace(width=640, height=480) for r in _raw(pkts, range(100, 130))]
    pipe.process_packets(small)
    back = 130
    out = []
    for k in range(back, 400, 10):
        out += pipe.process_packets(_raw(pkts, range(k, min(k + 10, 400))))
    t_back = pkts[back][1]
    for i, rotor in enumerate(scene.rotors):
        first = next((r.t_us for r in out if r.rotors[i].state == RotorState.TRACKING), None)
        assert first is not None and first - t_back < 200_000, (rotor.name, first)


def test_an_evt3_packet_whose_events_fall_behind_is_refused_as_stale(quad):
    """EVT3 words after an unseen loss carry the old TIME_HIGH; when they fall behind the
    latest time, the packet's times are not to be trusted (before: tracked at times 40 ms
    off, TRACKING)."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(100)))
    dec = make_decoder('evt3', 1280, 720)
    evs = [dec.decode(p[0]).events for p in pkts[:101]]
    late = evs[100]
    back = EventArrays(late.t_us - 2000, late.x, late.y, late.p)   # 2 ms behind
    res = pipe.process_packet(Evt3Encoder().encode(back), 'evt3', 1280, 720, False,
                              STAMP0_NS + pkts[100][1] * 1000, 100)
    assert res.error is not None and 'the time is stale' in res.error
    assert all(math.isnan(r.rpm_shaft) for r in res.rotors)


@pytest.mark.parametrize('shift_ms, late_only', [(-2000, False), (20, True), (60, True)])
def test_header_stamps_stepped_back_or_late_are_no_unseen_gap(quad, shift_ms, late_only):
    """A header clock stepped back 2 s from packet 200 on made every packet of the time
    mapping's 100 ms confirmation a 'sensor gap' (all rotors NaN for 0.6 s); one stamp
    20 ms late made the next packet one (review of this change)."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    results = []
    for i, p in enumerate(pkts):
        moved = i == 200 if late_only else i >= 200
        stamp = STAMP0_NS + p[1] * 1000 + (shift_ms * 1_000_000 if moved else 0)
        results += pipe.process_packets([EventPacketRecord(stamp, '', 720, 1280, i, 0, 'evt3',
                                                           False, p[0])])
    assert pipe.counters['sensor_gaps'] == 0 and pipe.counters['events_mistimed'] == 0
    assert all(r.state == RotorState.TRACKING for res in results[200:] for r in res.rotors)


def test_an_evt3_source_whose_every_packet_falls_behind_is_not_refused_for_ever():
    """(Review: with no way out, such a source would be NaN to the end of its stream.)"""
    from helixtrack_ros.pipeline.intake import STALE_RUN_ACCEPT, PacketIntake
    intake = PacketIntake({})
    intake.decoder_key = ('evt3', 1280, 720)
    seen = [intake._stale_clock(1000, 600) for _ in range(STALE_RUN_ACCEPT + 5)]
    assert seen == [True] * STALE_RUN_ACCEPT + [False] * 5
    assert not intake._stale_clock(1000, 10) and intake._stale_clock(1000, 600)
    intake.decoder_key = ('libcaer', 346, 260)
    assert not intake._stale_clock(1000, 600)


@pytest.fixture(scope='module')
def ramp():
    scene = make_scenario('lone_ramp', duration_s=0.4, seed=1)
    return scene, _encoded(scene, 1)


def test_a_loss_that_jumps_inside_a_packet_restarts_the_rotors_not_starves_them(ramp):
    """40 ms lost upstream where the first packet after it starts with words that kept the
    old TIME_HIGH and then jumps (no event falls behind): the rotor starved on that packet
    and took 76-91 ms to lock again by re-detection (and 0.3 s at real pace, live-node
    review). Now the next packet shows the loss and the rotor starts again from its
    estimate."""
    scene, pkts = ramp
    at, lost = 201, 40
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    kept = list(range(at)) + list(range(at + lost, at + lost + 100))
    results = []
    for j, i in enumerate(kept):
        results += pipe.process_packets([EventPacketRecord(
            STAMP0_NS + pkts[0][1] * 1000 + 1_000_000 * j, '', 720, 1280, j, 0, 'evt3', False,
            pkts[i][0])])
    after = results[at:]
    states = np.array([int(r.rotors[0].state) for r in after])
    assert pipe.counters['sensor_gaps'] == 1 and pipe.counters['packets_corrupt'] == 0
    assert (states == RotorState.STARVED).sum() <= 1
    back = np.flatnonzero(states == RotorState.TRACKING)
    assert len(back) and back[0] <= 50 and (states[back[0]:] == RotorState.TRACKING).all()
    t = np.array([r.t_us for r in after])
    rpm = np.array([r.rotors[0].rpm_shaft for r in after])
    truth = scene.ground_truth(t)[scene.rotors[0].name]['rpm']
    ok = states == RotorState.TRACKING
    assert np.max(np.abs(rpm[ok] - truth[ok]) / truth[ok]) < 0.01


def test_a_new_recording_that_starts_mid_flight_is_a_restart_not_frozen_values(quad):
    """The stream starts again from an earlier time (a recording replayed from 100 ms, a
    camera restarted) and its first words keep the time of before (EVT3: no TIME_HIGH
    yet), so the restart is inside a packet. Before: the events after it fell behind the
    rotors' time, their states froze and stayed TRACKING for the whole new stream, up
    to 84 % off (live-node review). Now it is a camera restart: the mis-timed head is
    left out and the rotors start again from their estimates."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    order = list(range(300)) + list(range(100, len(pkts)))
    results = []
    for j, i in enumerate(order):
        results += pipe.process_packets([EventPacketRecord(
            STAMP0_NS + 1_000_000 * j, '', 720, 1280, j, 0, 'evt3', False, pkts[i][0])])
    c = pipe.counters
    assert c['camera_restarts'] == 1 and c['events_mistimed'] > 0
    # (the packets before the new stream's first TIME_HIGH, at most 4 ms, still read as
    # the old time: extrapolated states, as after any loss the stale words hide)
    t_all = np.array([r.t_us for r in results])
    restart = 300 + int(np.argmax(np.diff(t_all[299:]) < 0))
    assert restart <= 305 and t_all[restart] < pkts[106][2]
    after = [r for r in results[restart:] if r.error is None and r.rotors]
    t = np.array([r.t_us for r in after])
    assert t[-1] >= pkts[-1][2] - 1000
    gt = scene.ground_truth(t)
    for k, rotor in enumerate(scene.rotors):
        states = np.array([int(r.rotors[k].state) for r in after])
        ok = states == RotorState.TRACKING
        assert ok[-100:].all(), rotor.name                  # tracked again
        rpm = np.array([r.rotors[k].rpm_shaft for r in after])[ok]
        err = np.abs(rpm - gt[rotor.name]['rpm'][ok]) / gt[rotor.name]['rpm'][ok]
        assert err.max() < 0.01, (rotor.name, err.max())


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
    mean phase residual keeps one sign then (health_phase_drift, checked per packet): at
    most the packet of the onset is published; with the check off, 4 packets are (the
    window close's health_jerk_rel catches the rest), with both off 6 (the phase filter's
    support, health_support_rel, falls during the lag too), with the three off 9."""
    scene = make_scenario('lone_constant', 0.2, seed=0)
    scene.rotors[0].schedule = RpmSchedule.piecewise([0, 150e3, 160e3], [8000, 8000, 12000],
                                                     0.3)
    assert _published_off(scene, TrackerParams()) <= 1
    assert _published_off(scene, TrackerParams(health_phase_drift=0.0)) >= 3
    assert _published_off(scene, TrackerParams(health_phase_drift=0.0,
                                                health_jerk_rel=0.0)) >= 5
    assert _published_off(scene, TrackerParams(health_phase_drift=0.0, health_jerk_rel=0.0,
                                                health_support_rel=0.0)) >= 8


def test_refused_packets_are_events_lost_not_starvation(quad):
    """Found by the live-node review: 20 packets of an unknown encoding were counted as
    refused, but the stream went on as if nothing was lost: the next packet was decoded
    with a stale clock (a TRACKING value stamped 20 ms before its data) and the rotors
    were STARVED for up to 0.6 s. A refused packet now counts as events lost in
    transport: the decoder resynchronises and the rotors are re-validated."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(150)))
    unknown = [r._replace(encoding='mystery_fmt') for r in _raw(pkts, range(150, 170))]
    assert all(r.error for r in pipe.process_packets(unknown))
    after = pipe.process_packets(_raw(pkts, range(170, 230)))
    assert pipe.counters['events_clamped'] == 0
    states = [{o.state for o in r.rotors} for r in after]
    assert not any(RotorState.STARVED in s for s in states)
    assert states[-1] == {RotorState.TRACKING}
    for r in after:
        assert r.stamp_ns >= STAMP0_NS + r.t_us * 1000 - 2_000_000
