# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The packet pipeline shared by node and CLI: routing, bad input, restarts."""

import math

import numpy as np
import pytest

from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
from helixtrack_ros.core.health import R_OTHER_ROTOR, RotorState
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.pipeline.realtime import MIN_TRACKED_PER_US, StridePolicy
from helixtrack_ros.sim import Simulator, make_scenario


@pytest.fixture(scope='module')
def packets():
    scene = make_scenario('lone_constant', duration_s=0.3, seed=5)
    ev = Simulator(scene, seed=5).all_events()
    enc = Evt3Encoder()
    out = []
    for start, stop in packetize(ev.t_us, 1000):
        part = ev.slice(start, stop)
        out.append((enc.encode(part), int(part.t_us[0]), int(part.t_us[-1])))
    return scene, out


def _pipe(scene):
    return TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))


def _feed(pipe, pkts, seq0=0, stamp0_ns=10**18):
    results = []
    for i, (payload, t0, _) in enumerate(pkts):
        results.append(pipe.process_packet(payload, 'evt3', 1280, 720, False,
                                           stamp0_ns + t0 * 1000 + 300_000, seq0 + i))
    return results


def test_clean_stream_tracks_and_counts_nothing_bad(packets):
    scene, pkts = packets
    pipe = _pipe(scene)
    res = _feed(pipe, pkts)
    assert all(r.error is None for r in res)
    assert abs(res[-1].rotors[0].rpm_shaft - 10_000) < 50
    c = pipe.counters
    assert c['seq_gaps'] == 0 and c['packets_corrupt'] == 0 and c['decode_errors'] == 0
    assert c['events_in'] == sum(r.n_events for r in res)
    names = [d['name'] for d in pipe.diagnostics()]
    assert names == ['helixtrack: pipeline', 'helixtrack: rotor rotor']


def test_unknown_encoding_is_refused_with_the_supported_list(packets):
    scene, pkts = packets
    pipe = _pipe(scene)
    r = pipe.process_packet(pkts[0][0], 'evt4', 1280, 720, False, 1, 0)
    assert r.error and 'evt3' in r.error and 'mono' in r.error
    assert pipe.counters['packets_refused'] == 1


def test_garbage_and_gaps_do_not_stop_tracking(packets):
    scene, pkts = packets
    pipe = _pipe(scene)
    rng = np.random.default_rng(0)
    half = len(pkts) // 2
    _feed(pipe, pkts[:half])
    garbage = rng.integers(0, 256, 4000, dtype=np.uint8).tobytes()
    bad = pipe.process_packet(garbage, 'evt3', 1280, 720, False,
                              10**18 + pkts[half][1] * 1000, half)
    assert bad.error and 'corrupt' in bad.error
    truncated = pipe.process_packet(pkts[half][0][:7], 'evt3', 1280, 720, False,
                                    10**18 + pkts[half][1] * 1000, half + 1)
    assert truncated.error is None
    # skip five packets (a seq gap), then go on
    res = _feed(pipe, pkts[half + 5:], seq0=half + 7)
    assert all(r.error is None for r in res)
    assert res[-1].t_us == pkts[-1][2]
    assert abs(res[-1].rotors[0].rpm_shaft - 10_000) < 100
    c = pipe.counters
    assert c['packets_corrupt'] == 1 and c['seq_gaps'] >= 1 and c['decode_errors'] > 0


def test_camera_restart_is_survived(packets):
    scene, pkts = packets
    pipe = _pipe(scene)
    _feed(pipe, pkts)
    # the same camera starts again: a new stream whose time restarts from zero
    enc_pkts = packets[1]
    res = _feed(pipe, enc_pkts[:5], seq0=0, stamp0_ns=2 * 10**18)
    assert all(r.error is None for r in res[5:])
    assert pipe.counters['camera_restarts'] + pipe.counters['packets_corrupt'] >= 1
    # its sequence numbers start again too: a restart, not a gap (nothing was lost)
    c = pipe.counters
    assert (c['seq_restarts'], c['seq_gaps'], c['packets_dropped']) == (1, 0, 0)
    assert pipe.sequence.last_restart == (len(pkts) - 1, 0) and pipe.sequence.last == 4


def _assert_rpm_of_the_rotors_under_them(scene, res):
    """Each output rotor's RPM is within 2 % of the true rotor under its centre."""
    for out in res.rotors:
        H = np.array(out.homography)
        c = H[:2, 2] / H[2, 2]
        k = int(np.argmin([np.hypot(*(c - r.homography(np.array([res.t_us]))[0][:2, 2]))
                           for r in scene.rotors]))
        truth = float(scene.rotors[k].rpm_shaft(np.array([res.t_us]))[0])
        assert abs(out.rpm_shaft - truth) / truth < 0.02, (out.name, out.rpm_shaft, truth)


def test_auto_detect_finds_and_tracks_every_rotor():
    scene = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=2, seed=21)
    ev = Simulator(scene, seed=21).all_events()
    enc = Evt3Encoder()
    pipe = TrackingPipeline(PipelineConfig(rotors=[], auto_detect=True, threads=1))
    assert pipe.rotor_names == []
    res = None
    for i, (start, stop) in enumerate(packetize(ev.t_us, 1000)):
        part = ev.slice(start, stop)
        res = pipe.process_packet(enc.encode(part), 'evt3', 1280, 720, False,
                                  10**18 + int(part.t_us[0]) * 1000, i)
        if int(part.t_us[-1]) < 90_000:
            assert res.rotors == []
    assert len(pipe.rotor_names) == 4 and pipe.counters['detections'] >= 1
    values = pipe.diagnostics()[0]['values']
    assert all(f'detected_rotor_{i}' in values for i in range(4))
    assert 'blades' in values['detected_rotor_0']
    # the start-up detections are kept for the debug image, named like the rotors
    assert [n for n, _ in pipe.recent_detections(10**6)] == pipe.rotor_names
    _assert_rpm_of_the_rotors_under_them(scene, res)


def test_scene_through_the_pipeline_is_scored_like_bare_trackers():
    from helixtrack_ros.evaluation import track_scene_pipeline
    scene = make_scenario('lone_constant', duration_s=0.4, seed=2)
    results, info = track_scene_pipeline(scene, Simulator(scene, seed=2))
    (r,) = results
    assert r.errors.n > 150 and r.errors.mare_pct < 0.5
    assert abs(r.scale_error_pct) < 5 and r.center_error_px < 5
    assert info['events'] > 100_000


def _raw_packets(scene, seed):
    ev = Simulator(scene, seed=seed).all_events()
    enc = Evt3Encoder()
    out = []
    for i, (start, stop) in enumerate(packetize(ev.t_us, 1000)):
        part = ev.slice(start, stop)
        out.append(EventPacketRecord(10**18 + int(part.t_us[-1]) * 1000 + 300_000, '', 720,
                                     1280, i, 0, 'evt3', False, enc.encode(part)))
    return out


def _summary(results):
    return [[(o.t_us, o.rpm_shaft, o.phase_rad, o.events, o.level, o.message, o.health)
             for o in r.rotors] for r in results]


@pytest.mark.parametrize('threads,stream', [(1, False), (2, False), (2, True), (0, True)])
def test_batches_of_packets_give_the_packet_by_packet_results(threads, stream):
    scene = make_scenario('quadcopter_4m', 0.3, 2, seed=6)
    raw = _raw_packets(scene, 6)
    # a garbage packet and an empty one inside a batch
    raw.insert(40, raw[40]._replace(events=np.random.default_rng(1).integers(
        0, 256, 4000).astype(np.uint8)))
    raw.insert(80, raw[80]._replace(events=np.zeros(0, np.uint8)))
    raw = [p._replace(seq=i) for i, p in enumerate(raw)]
    config = PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=threads)
    one = TrackingPipeline(config)
    ref = [one.process_packets([p])[0] for p in raw]
    many = TrackingPipeline(config)
    got = []
    batches = [raw[k:k + 13] for k in range(0, len(raw), 13)]
    if stream:
        # decoding overlaps tracking; each batch comes back with its own packets
        done = list(many.process_stream(iter(batches), diagnostics_period_us=100_000))
        assert [d.packets for d in done] == batches
        diag = [d.diagnostics for d in done]
        assert diag[0] is not None and diag[-1] is not None
        assert 2 <= sum(d is not None for d in diag) <= 5
        got = [r for d in done for r in d.results]
    else:
        for b in batches:
            got += many.process_packets(b)
    assert [r.error for r in got] == [r.error for r in ref]
    assert _summary(got) == _summary(ref)
    assert many.counters == one.counters
    # the empty packet measured nothing: no value of the packet before repeated
    assert ref[80].n_events == 0 and ref[79].rotors[0].state == RotorState.TRACKING
    assert all(math.isnan(r.rpm_shaft) and r.state == RotorState.DEGRADED
               for r in ref[80].rotors)


def test_batches_recover_a_jumped_rotor_like_single_packets():
    scene = make_scenario('quadcopter_4m', 0.5, 1, seed=2, jump=('rear_right', 0.15, 0.0, 0.9))
    raw = _raw_packets(scene, 2)
    config = PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=2)
    one = TrackingPipeline(config)
    ref = [one.process_packets([p])[0] for p in raw]
    many = TrackingPipeline(config)
    got = []
    for k in range(0, len(raw), 10):
        got += many.process_packets(raw[k:k + 10])
    # (one recovery, or two when the re-initialised rotor slips once more before locking:
    # that flips with rounding-level changes of the tracker; both paths must agree)
    assert many.counters['recoveries'] == one.counters['recoveries'] >= 1
    k = [r.name for r in scene.rotors].index('rear_right')
    health = [r.rotors[k].health for r in got]
    # LOST, re-detected, TRACKING again at the same packets
    assert health == [r.rotors[k].health for r in ref]
    assert 2 in health and health[-1] == 0
    end_ref = np.array([o.rpm_shaft for o in ref[-1].rotors])
    end_got = np.array([o.rpm_shaft for o in got[-1].rotors])
    assert np.allclose(end_got, end_ref, rtol=1e-3, equal_nan=True)


def test_start_up_detection_runs_in_line_even_live():
    # live mode detects LOST rotors in the background, but the start-up detection stays in
    # line: tracking starts at the packet that completes the 100 ms window, whatever the
    # machine's speed
    scene = make_scenario('quadcopter_4m', duration_s=0.3, ego_level=2, seed=21)
    ev = Simulator(scene, seed=21).all_events()
    enc = Evt3Encoder()
    pipe = TrackingPipeline(PipelineConfig(rotors=[], auto_detect=True, threads=1,
                                           detect_in_background=True))
    first = None
    for i, (start, stop) in enumerate(packetize(ev.t_us, 1000)):
        part = ev.slice(start, stop)
        res = pipe.process_packet(enc.encode(part), 'evt3', 1280, 720, False,
                                  10**18 + int(part.t_us[0]) * 1000, i)
        if res.rotors and first is None:
            first = int(part.t_us[-1])
    pipe.close()
    assert len(pipe.rotor_names) == 4 and pipe.counters['detections'] == 1
    assert first is not None and 100_000 <= first <= 102_000
    _assert_rpm_of_the_rotors_under_them(scene, res)


def test_scene_with_automatic_initialisation_is_scored_per_true_rotor():
    from helixtrack_ros.evaluation import track_scene_autodetect
    scene = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=1, seed=3)
    results, info = track_scene_autodetect(scene, Simulator(scene, seed=3))
    assert info['detected'] == info['matched'] == 4
    assert 100_000 <= info['first_output_us'] <= 102_000
    assert [r.name for r in results] != [r.name for r in scene.rotors]   # rotor_i names
    assert all(r.errors.mare_pct < 2.0 for r in results)


def test_jobs_run_every_call_once_and_raise_a_helpers_error():
    from concurrent.futures import ThreadPoolExecutor
    import threading

    from helixtrack_ros.pipeline.batching import Jobs

    seen = []
    lock = threading.Lock()

    def call(k):
        with lock:
            seen.append((k, threading.get_ident()))
        return k * k

    with ThreadPoolExecutor(3) as pool:
        jobs = Jobs([(k, call, (k,)) for k in range(200)])
        jobs.helpers = [pool.submit(jobs.drain) for _ in range(3)]
        assert jobs.wait() == [(k, k * k) for k in range(200)]
        assert sorted(k for k, _ in seen) == list(range(200))

        def boom(k):
            if k == 5:
                raise RuntimeError('rotor 5 failed')
            return k

        jobs = Jobs([(k, boom, (k,)) for k in range(10)])
        jobs.helpers = [pool.submit(jobs.drain) for _ in range(2)]
        with pytest.raises(RuntimeError, match='rotor 5'):
            jobs.wait()


def test_realtime_policy_follows_the_queue_and_scales_the_gauss_newton_target():
    scene = make_scenario('quadcopter_4m', 0.1, 1, seed=1)
    config = PipelineConfig(rotors=rotor_inits_from_scene(scene), realtime_stride=True,
                            threads=1, max_stride=4)
    pipe = TrackingPipeline(config)

    def gn_targets(p):
        return {t.gn_target_events for t in p._bank.trackers}

    # a replay slower than real time: processing takes 2x the sensor time, no queue
    for _ in range(100):
        pipe.note_backlog(0)
        pipe._account_load(0.002, 1000)
    assert pipe.stride == 1 and gn_targets(pipe) == {3000}
    # packets queue up: the stride widens up to max_stride, the GN target is halved
    for _ in range(100):
        pipe.note_backlog(10)
        pipe._account_load(0.002, 1000)
    assert pipe.stride == 4 and gn_targets(pipe) == {1500}
    assert pipe.diagnostics()[0]['values']['gn_target_events'] == '1500'
    # a tracker parameter set meanwhile keeps the scaling
    pipe.update_tracker_params({'gn_target_events': 2000})
    assert gn_targets(pipe) == {1000}
    # the queue empties and the load leaves room: back to every event
    for _ in range(200):
        pipe.note_backlog(0)
        pipe._account_load(0.0002, 1000)
    assert pipe.stride == 1 and gn_targets(pipe) == {2000}
    # a caller that knows no queue: the load alone decides
    other = TrackingPipeline(config)
    for _ in range(100):
        other._account_load(0.002, 1000)
    assert other.stride == 4


def test_realtime_stride_leaves_the_sparsest_rotor_enough_events():
    """The stride goes to max_stride only where the sparsest tracked rotor keeps
    MIN_TRACKED_PER_US; it comes down at once when the rotors get sparser."""
    policy = StridePolicy(True, max_stride=8)
    policy.note_rotor_rate(1.5)                  # events per us of the sparsest rotor
    for _ in range(100):
        policy.note_backlog(10)
        policy.account(0.002, 1000)
    assert policy.stride == 4 == int(1.5 / MIN_TRACKED_PER_US)
    for _ in range(30):
        policy.note_rotor_rate(13.0)             # a dense scene may go further
        policy.note_backlog(10)
        policy.account(0.002, 1000)
    assert policy.stride == 8
    for _ in range(30):
        policy.note_rotor_rate(0.4)              # the rotors got sparser: down at once
        policy.account(0.002, 1000)
    assert policy.stride == 1


def test_realtime_stride_stops_at_4_by_default():
    """Offline with the live detector's lateness simulated (2 m / 3 m / 4 m quadcopters,
    346 x 260 and 640 x 480, egomotion 3-6), fixed strides 3 / 4 / 5 / 6: from 5 on,
    rotors under camera motion were lost (quadcopter_3m egomotion 5: 3,482 / 2,796 / 1,381
    / 8 TRACKING values) or published 1-1.7 % off (quadcopter_3m egomotion 4 at stride 6:
    59 values); the default max_stride is 4, however dense the rotors."""
    scene = make_scenario('quadcopter_4m', 0.1, 1, seed=1)
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene),
                                           realtime_stride=True, threads=1))
    pipe._bank.sparsest_rate = 20.0              # dense rotors: 0.35 per us would allow 57
    for _ in range(100):
        pipe.note_backlog(50)
        pipe._account_load(0.005, 1000)
    assert pipe.stride == 4


def test_a_strided_batch_tracks_every_kth_event_of_the_batch_once_for_all_rotors():
    """Under the stride the rotors get every k-th event of the batch (decimated once,
    not once per rotor in the routing); packet ends stay where the packets end."""
    from helixtrack_ros.core.events import EventArrays
    from helixtrack_ros.pipeline.batching import Inflight

    t = np.arange(23, dtype=np.int64)
    ev = EventArrays(t, t.astype(np.uint16), t.astype(np.uint16), (t % 2).astype(np.uint8))
    inf = Inflight([], ev=ev, ends=np.array([5, 6, 6, 23]), stride=4)
    inf.decimate()
    assert inf.tracked.t_us.tolist() == list(range(0, 23, 4))
    for k in range(4):
        part, _ = inf.tracked_packet(k)
        whole = inf.packet(k).t_us.tolist()
        assert part.t_us.tolist() == [v for v in whole if v % 4 == 0]


@pytest.mark.parametrize('stride, words', [(2, '2nd'), (3, '3rd'), (4, '4th')])
def test_diagnostics_name_the_stride_in_english(stride, words):
    scene = make_scenario('lone_constant', 0.05, seed=5)
    pipe = _pipe(scene)
    pipe.set_stride(stride)
    assert pipe.diagnostics()[0]['message'] == f'behind real time: every {words} event'


def test_junk_packets_are_refused_and_not_counted_as_events(packets):
    """Random bytes on the events topic add packets and refusals, never events."""
    scene, pkts = packets
    pipe = _pipe(scene)
    rng = np.random.default_rng(3)
    good = _feed(pipe, pkts[:10])
    before = pipe.counters['events_in']
    for k in range(5):
        junk = rng.integers(0, 256, 4000, dtype=np.uint8).tobytes()
        bad = pipe.process_packet(junk, 'evt3', 1280, 720, False,
                                  10**18 + pkts[10][1] * 1000, 10 + k)
        assert bad.error is not None and bad.n_events == 0
    c = pipe.counters
    assert c['events_in'] == before == sum(r.n_events for r in good)
    assert c['packets_corrupt'] == 5 and c['packets'] == 15


def test_diagnostics_say_when_the_stream_stopped(packets):
    """Once packets stop, no status repeats 'behind real time' or 'tracking' as current;
    with the next packets they report the live state again."""
    from helixtrack_ros.pipeline.diagnostics import STREAM_IDLE_S

    scene, pkts = packets
    pipe = _pipe(scene)
    _feed(pipe, pkts[:30])
    pipe.set_stride(2)
    live = pipe.diagnostics()
    assert live[0]['message'] == 'behind real time: every 2nd event'
    assert not live[1]['message'].startswith('stream stopped')
    pipe._last_packet_wall -= STREAM_IDLE_S + 1.0     # the stream stopped a while ago
    pipeline, rotor = pipe.diagnostics()
    assert pipeline['message'].startswith('stream stopped: no packets for ')
    assert rotor['message'].startswith('stream stopped (last: ')
    assert pipeline['level'] == rotor['level'] == 1
    _feed(pipe, pkts[30:32], seq0=30)
    assert pipe.diagnostics()[0]['message'] == 'behind real time: every 2nd event'


@pytest.mark.parametrize('threads', [1, 2])
def test_offline_stream_declares_a_rotor_on_another_before_tracking_on(threads):
    """The identity test of a batch ('on another rotor': the tracker is declared LOST) ran
    while the next batch already tracked that rotor (offline, decoding overlapped): with
    rotor threads the outcome depended on which came first and `helixtrack track` gave
    a different rpm.csv on every run (quadcopter_4m, 346 x 260, egomotion 5, seed 4); on
    one thread the loss came a batch late. The stream now gives the results of tracking
    batch after batch, on any number of threads."""
    scene = make_scenario('quadcopter_4m', 0.3, 5, seed=4, sensor_size=(346, 260))
    raw = [p._replace(height=260, width=346) for p in _raw_packets(scene, 4)]
    batches = [raw[k:k + 64] for k in range(0, len(raw), 64)]
    config = PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=threads)
    ref = TrackingPipeline(config)
    want = [r for b in batches for r in ref.process_packets(b)]
    assert sum(o.cause == R_OTHER_ROTOR for r in want for o in r.rotors) > 100
    got = [r for d in TrackingPipeline(config).process_stream(iter(batches)) for r in d.results]
    assert _summary(got) == _summary(want)


def test_a_corrupt_packet_without_decode_errors_is_said_in_the_diagnostics(packets):
    """A packet whose sensor time leaps 5 s while its header stamp moves 1 ms is dropped as
    corrupt, though every word decodes. Before, the pipeline's status still said 'ok'
    (only refusals and decode errors made it 'bad packets seen'); now it says so, with
    the events the packet held."""
    from helixtrack_ros.core.events import EventArrays
    from helixtrack_ros.pipeline.diagnostics import WARN
    scene, pkts = packets
    pipe = _pipe(scene)
    _feed(pipe, pkts[:20])
    assert pipe.diagnostics()[0]['message'] == 'ok'
    n = 500
    t0 = pkts[20][1] + 5_000_000
    leap = EventArrays(t0 + np.arange(n, dtype=np.int64), (np.arange(n) % 600).astype(np.uint16),
                       (np.arange(n) % 400).astype(np.uint16), (np.arange(n) % 2).astype(np.uint8))
    bad = pipe.process_packet(Evt3Encoder().encode(leap), 'evt3', 1280, 720, False,
                              10**18 + pkts[20][1] * 1000 + 300_000, 20)
    assert bad.error is not None and 'corrupt' in bad.error
    _feed(pipe, pkts[21:30], seq0=21)
    c = pipe.counters
    assert c['packets_corrupt'] == 1 and c['decode_errors'] == 0 and c['packets_refused'] == 1
    status = pipe.diagnostics()[0]
    assert (status['level'], status['message']) == (WARN, 'bad packets seen')
    assert status['values']['events_corrupt'] == str(n)
