# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""End to end over DDS: simulated EVT3 packets in, shaft speeds out, real pipeline.

One ``python -m helixtrack_ros.node --ros-args --params-file ...`` process
tracks one continuous simulated stream: first at real pace, then at full
speed, then through a burst of bad packets, then at real pace again. The
shaft speeds on ``~/rotors`` are compared with the simulator's ground truth.
"""

from __future__ import annotations

import math

import node_fixtures as F  # noqa: N812
import numpy as np
import pytest

F.require_real_node()
pytest.importorskip('helixtrack_ros.sim')
pytest.importorskip('helixtrack_ros.codecs.evt3_encoder')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

FQN = '/t/helixtrack'
ROTORS = FQN + '/rotors'
BASE_NS = 1_700_000_000_000_000_000
SCENARIO, DURATION_S = 'lone_constant', 0.9
MARE_BAR = 0.02             # 2 % mean absolute relative error of shaft RPM


@pytest.fixture(scope='module')
def stream():
    return F.sim_stream(SCENARIO, DURATION_S, seed=1, base_ns=BASE_NS)


@pytest.fixture(scope='module')
def rig(stream, tmp_path_factory):
    from helixtrack_ros.io.params_file import rotor_params_tree
    scene, _, _ = stream
    tmp = tmp_path_factory.mktemp('track')
    # start from the true state: convergence from a wrong one is the tracker's test
    tree = rotor_params_tree(scene.initial_rotor_params())
    tree['diagnostics_period_s'] = 0.1
    params = F.write_params_file(tmp / 'params.yaml', tree)
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/t',
                          '-r', '~/events:=/ev'], log_dir=tmp)
    probe = F.Probe('tracking_probe')
    try:
        joints = probe.collect(JointState, ROTORS, depth=20000)
        probe.collect(DiagnosticArray, '/diagnostics')
        pub = probe.events_publisher('/ev')
        probe.wait_matched(pub, [ROTORS, '/diagnostics'], timeout=60)
        seq = probe.prime(pub, lambda: _packets(probe) > 0, start_ns=BASE_NS - 10**9)

        class Rig:
            pass
        rig = Rig()
        rig.proc, rig.probe, rig.pub, rig.joints, rig.seq = proc, probe, pub, joints, seq
        rig.play = F.load_play_bag().play
        yield rig
    finally:
        probe.close()
        rc = proc.stop()
        log = proc.output()
        print(log[-3000:])
        assert rc == 0, log
        assert 'Traceback' not in log, log


def _packets(probe) -> int:
    vals = F.node_values(probe.messages('/diagnostics'), FQN) or {}
    return int(vals.get('packets', 0))


def _play(rig, packets, rate):
    for m in packets:
        m.seq = rig.seq
        rig.seq += 1
    return rig.play(rig.pub, packets, rate=rate)


def _mare(scene, joints, start_us: float, skip_us: float = 0.0) -> tuple[float, int, int]:
    """MArE of shaft RPM (JointState velocities) against ground truth.

    Outputs of the first ``skip_us`` after ``start_us`` are left out; those
    stamped more than 50 ms before ``start_us`` or after the scene are
    counted as off (a time-mapping fault).

    Returns
    -------
    mare, used, off
    """
    (name,) = [r.name for r in scene.rotors]
    t_us = np.array([(F.stamp_ns(j) - BASE_NS) / 1000.0 for j in joints])
    rpm = np.array([abs(j.velocity[list(j.name).index(name)]) * 60 / (2 * math.pi)
                    for j in joints])
    # (NaN: a value withheld while the rotor is not TRACKING is not an error, nor used)
    keep = (t_us >= start_us + skip_us) & (t_us <= scene.duration_us) & np.isfinite(rpm)
    off = int(np.sum(t_us > scene.duration_us) + np.sum(t_us < start_us - 50_000))
    if not keep.any():
        return math.inf, 0, off
    gt = scene.ground_truth(t_us[keep])[name]['rpm']
    return float(np.mean(np.abs(rpm[keep] - gt) / gt)), int(keep.sum()), off


def _values(rig) -> dict[str, str]:
    return F.node_values(rig.probe.messages('/diagnostics'), FQN) or {}


def _flush(rig, stamp: int) -> dict[str, str]:
    """Send event-less packets until the node reports seeing one; return its values.

    Lost packets of a burst then all show as seq gaps (``packets_dropped``).
    """
    target = rig.seq
    deadline = 120.0
    import time
    t_end = time.monotonic() + deadline
    while True:
        (m,) = F.fake_packets(1, start_ns=stamp, seq0=rig.seq, payload_bytes=0)
        rig.pub.publish(m)
        rig.seq += 1
        try:
            return F.wait_until(lambda: (v := _values(rig)) and int(v['last_seq']) >= target
                                and v, 0.3, 'flush')
        except AssertionError:
            if time.monotonic() > t_end:
                raise


def _phase(rig, packets, rate) -> tuple[list, dict, dict]:
    """Play packets, flush; return (outputs, node values before, after)."""
    before = _values(rig)
    rig.probe.clear(ROTORS)
    stats = _play(rig, packets, rate)
    after = _flush(rig, F.stamp_ns(packets[-1]))
    received = int(after['packets']) - int(before['packets']) - 1   # minus the flush
    dropped = int(after['packets_dropped']) - int(before['packets_dropped'])
    pipe = F.status_values(rig.probe.messages('/diagnostics'), 'helixtrack: pipeline') or {}
    got = [j for j in rig.probe.messages(ROTORS) if F.stamp_ns(j) < F.stamp_ns(packets[-1])
           + 10**9]
    print(f'rate {rate}: {len(packets)} packets in {stats.wall_s:.2f} s, node received '
          f'{received}, dropped {dropped}, {len(got)} outputs; pipeline load '
          f'{pipe.get("load")}, stride {pipe.get("stride")}')
    return got, {'received': received, 'dropped': dropped}, after


def _cuts(n: int) -> tuple[int, int, int]:
    """Stream split: [0, a) real pace, [a, b) full speed, [b, c) bad packets, [c, n) image."""
    return int(n * 0.35), int(n * 0.65), int(n * 0.85)


def test_real_pace_then_full_speed(rig, stream):
    scene, packets, _ = stream
    a, b, _ = _cuts(len(packets))

    # real pace (the pipeline may stride when the machine is slow: that is its policy)
    got, acc, _ = _phase(rig, packets[:a], rate=1.0)
    assert acc['received'] + acc['dropped'] >= a - 1     # every loss is counted
    assert len(got) >= 0.8 * a
    mare, used, off = _mare(scene, got, 0, skip_us=100_000)
    print(f'real pace: MArE {100 * mare:.3f} % over {used} outputs ({off} stamped off)')
    assert off == 0
    assert mare < MARE_BAR

    # full speed: as fast as the player can publish
    got, acc, _ = _phase(rig, packets[a:b], rate=None)
    assert acc['received'] + acc['dropped'] >= (b - a) - 1
    assert acc['received'] >= 0.3 * (b - a)
    mare, used, off = _mare(scene, got, (F.stamp_ns(packets[a]) - BASE_NS) / 1e3)
    print(f'full speed: MArE {100 * mare:.3f} % over {used} outputs ({off} stamped off)')
    assert off == 0
    assert mare < MARE_BAR


def test_bad_packets_leave_tracking_alive(rig, stream):
    """Unknown encoding, garbage, truncated, time backwards and a seq gap, then tracking."""
    scene, packets, _ = stream
    _, b, c = _cuts(len(packets))
    rng = np.random.default_rng(0)
    bad = []
    for kind in ('evt21', 'garbage', 'truncated', 'old'):
        m = F.fake_packets(1, start_ns=F.stamp_ns(packets[b - 1]), payload_bytes=0)[0]
        if kind == 'evt21':
            m.encoding, m.events = 'evt21', bytes(4000)
        elif kind == 'garbage':
            m.events = rng.integers(0, 256, 3001, dtype=np.uint8).tobytes()
        elif kind == 'truncated':
            m.events = bytes(packets[b].events)[:1001]
        else:
            m.events = bytes(packets[b - 300].events)
        bad.append(m)
    before = _values(rig)
    _play(rig, bad, rate=1.0)
    rig.seq += 7                                       # seq gap of 7
    got, acc, vals = _phase(rig, packets[b + 1:c], rate=1.0)
    assert rig.proc.alive()
    pipe = F.status_values(rig.probe.messages('/diagnostics'), 'helixtrack: pipeline')
    print('node', vals)
    print('pipeline', pipe)
    assert int(vals['packets_refused']) - int(before['packets_refused']) >= 1
    assert int(vals['packets_dropped']) - int(before['packets_dropped']) >= 7
    assert int(pipe['decode_errors']) > 0
    t0 = (F.stamp_ns(packets[b + 1]) - BASE_NS) / 1e3
    stamps = [(F.stamp_ns(j) - BASE_NS) / 1e3 for j in got]
    mare, used, off = _mare(scene, got, t0)
    print(f'after bad packets: MArE {100 * mare:.3f} % over {used} outputs '
          f'({off} stamped off)')
    # tracking goes on: output stamps follow the stream again (a garbage payload must not
    # leave the sensor clock stuck) and the speeds are right
    t_end = (F.stamp_ns(packets[c - 1]) - BASE_NS) / 1e3
    progress = (np.percentile(stamps, 80) - t0) / (t_end - t0)
    assert progress > 0.5, (
        f'state time stuck after bad packets: 80 % of outputs stamped before '
        f'{np.percentile(stamps, 80) / 1e3:.1f} ms, stream from {t0 / 1e3:.1f} to '
        f'{t_end / 1e3:.1f} ms; pipeline {pipe}')
    assert used >= 0.8 * (c - b - 1)
    assert off <= 0.05 * (c - b - 1)
    assert mare < MARE_BAR


def _bright_dark(img) -> tuple[int, int]:
    """Pixels of ON (255) and OFF (0) events in a mono8 debug image."""
    a = np.frombuffer(bytes(img.data), np.uint8)
    return int((a == 255).sum()), int((a == 0).sum())


def test_debug_image(rig, stream):
    from sensor_msgs.msg import Image
    scene, packets, _ = stream
    _, _, c = _cuts(len(packets))
    image_topic = FQN + '/debug_image'
    rig.probe.collect(Image, image_topic)
    ok, = rig.probe.set_parameters(FQN, {'debug_image_hz': 50.0})
    assert ok.successful, ok.reason
    try:
        rig.probe.wait_matched(topics=[image_topic])
        _play(rig, packets[c:], rate=1.0)
        # the newest image that shows events (one published before the node, behind on a
        # busy machine, took the played packets holds only the drawn rotor)
        img = F.wait_until(lambda: next((m for m in reversed(rig.probe.messages(image_topic))
                                         if min(_bright_dark(m)) > 1000), None),
                           10, 'a debug image with events')
    finally:
        ok, = rig.probe.set_parameters(FQN, {'debug_image_hz': 0.0})
        assert ok.successful
    assert (img.width, img.height, img.encoding) == (scene.width, scene.height, 'mono8')
    a = np.frombuffer(bytes(img.data), np.uint8).reshape(img.height, img.width)
    on, off = _bright_dark(img)
    print(f'debug image: {on} bright and {off} dark pixels')
    # the tracked tip circle is drawn: bright pixels lie on the projected unit circle
    from helixtrack_ros.debug_image import ellipse_points
    H = scene.ground_truth(np.array([scene.duration_us]))[scene.rotors[0].name]['H'][0]
    pts = np.rint(ellipse_points(H, 90)).astype(int)
    inside = (pts[:, 0] >= 0) & (pts[:, 0] < img.width) & (pts[:, 1] >= 0) \
        & (pts[:, 1] < img.height)
    hits = [a[max(y - 2, 0):y + 3, max(x - 2, 0):x + 3].max() == 255 for x, y in pts[inside]]
    assert np.mean(hits) > 0.9
