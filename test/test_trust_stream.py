# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Outputs a consumer can trust: the stream's time and packets (leaps, restarts,
late, repeated, refused, stale or mislabelled packets, header stamps). Each test
names the failure it guards against; each failed on the code before its fix."""

import math

import numpy as np
import pytest
from trust_scenes import STAMP0_NS, _encoded, _raw, quad_scene

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.health import (
    R_GAP,
    R_STARVED,
    RotorState,
)
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.sim import make_scenario


@pytest.fixture(scope='module')
def quad():
    return quad_scene()


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
    # a reader that numbers messages by their place (ROS 2 struct-event arrays have no
    # seq): the copy has the next number, the same stamp and bytes (input review)
    numbered = TrackingPipeline(PipelineConfig(rotors=inits, threads=1))
    recs = [r._replace(seq=k) for k, r in enumerate(doubled[:40])]
    got = numbered.process_packets(recs)
    assert [r.dropped is not None for r in got] == [False, True] * 20
    assert numbered.counters['packets_duplicate'] == 20
    assert numbered.counters['seq_gaps'] == 0
    for a, b in zip(ref[:20], got[::2]):
        assert [x.rpm_shaft for x in a.rotors] == pytest.approx(
            [x.rpm_shaft for x in b.rotors], nan_ok=True)


def test_refused_and_empty_packets_do_not_leave_a_rotor_tracking(quad):
    """Before: while only refused packets (garbage) or only empty packets arrived, the
    node published nothing new or repeated TRACKING with the last RPM for seconds
    (node review, 2026-11-27). Now a refused packet's outputs are NaN, DEGRADED
    (events lost in transport), an empty packet's NaN, DEGRADED (no events in the packet;
    it repeated the last TRACKING value for 10 ms: red-team review), and one two health
    windows (10 ms of header time) after the last packet with events turns a rotor
    STARVED, NaN."""
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
    # right after events: nothing new measured, and nothing repeated
    assert all(r.state == RotorState.TRACKING for r in out[0].rotors)
    for r in out[1].rotors:
        assert r.state == RotorState.DEGRADED and r.cause == R_STARVED
        assert math.isnan(r.rpm_shaft) and math.isnan(r.rpm_shaft_std)
        assert 'no events in the packet' in r.message
    late = out[-1]
    assert all(r.state == RotorState.STARVED and math.isnan(r.rpm_shaft)
               for r in late.rotors)
    assert late.stamp_ns == out[0].stamp_ns   # no output time beyond the last event


@pytest.mark.parametrize('byte', [0x00, 0xFF])
def test_a_payload_of_valid_codes_and_no_event_is_refused_as_garbage(quad, byte):
    """30 KB of 0x00 (EVT3 ADDR_Y words) or 0xFF (CONTINUED_12) are valid codes that
    decode to no event: they went by as empty packets, uncounted, and the last TRACKING
    value was repeated (red-team review). Now such a packet is refused as corrupt."""
    scene, pkts = quad
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.process_packets(_raw(pkts, range(150)))
    junk = _raw(pkts, [150])[0]._replace(events=bytes([byte]) * 30_000)
    (res,) = pipe.process_packets([junk])
    assert res.error is not None and 'not one event' in res.error
    assert pipe.counters['packets_corrupt'] == 1
    for r in res.rotors:
        assert r.state == RotorState.DEGRADED and r.cause == R_GAP
        assert math.isnan(r.rpm_shaft)
    out = pipe.process_packets(_raw(pkts, range(151, 260)))
    assert all(r.state == RotorState.TRACKING for r in out[-1].rotors)


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
    assert all(r.state == RotorState.DEGRADED and r.cause == R_STARVED for r in res.rotors)


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
