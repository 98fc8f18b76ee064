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

pytest.importorskip('rclpy')
pytest.importorskip('event_camera_msgs.msg')
_reason = F.real_pipeline_available()
if _reason:
    pytest.skip(_reason, allow_module_level=True)
pytest.importorskip('helixtrack_ros.sim')
pytest.importorskip('helixtrack_ros.codecs.evt3_encoder')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

FQN = '/t/helixtrack'
ROTORS = FQN + '/rotors'
BASE_NS = 1_700_000_000_000_000_000
SCENARIO, DURATION_S = 'lone_constant', 0.8
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


def _mare(scene, joints, skip_s: float = 0.0) -> tuple[float, int]:
    """MArE of shaft RPM from JointState velocities against ground truth."""
    (name,) = [r.name for r in scene.rotors]
    t_us = np.array([(F.stamp_ns(j) - BASE_NS) / 1000.0 for j in joints])
    rpm = np.array([abs(j.velocity[list(j.name).index(name)]) * 60 / (2 * math.pi)
                    for j in joints])
    keep = t_us >= t_us[0] + skip_s * 1e6 if len(t_us) else t_us > 0
    gt = scene.ground_truth(t_us[keep])[name]['rpm']
    return float(np.mean(np.abs(rpm[keep] - gt) / gt)), int(keep.sum())


def _wait_outputs(rig, n: int, timeout: float = 60.0) -> None:
    F.wait_until(lambda: len(rig.probe.messages(ROTORS)) >= n, timeout, f'{n} outputs')


def test_real_pace_then_full_speed_then_bad_packets(rig, stream):
    scene, packets, _ = stream
    n = len(packets)
    a, b = int(n * 0.4), int(n * 0.75)

    # real pace (the pipeline may stride when the machine is slow: that is its policy)
    stats = _play(rig, packets[:a], rate=1.0)
    _wait_outputs(rig, a - 5)
    got = rig.probe.messages(ROTORS)
    mare, used = _mare(scene, got, skip_s=0.1)
    print(f'real pace: {len(got)}/{a} outputs, MArE {100 * mare:.3f} % over {used}, '
          f'player up to {1e3 * stats.max_late_s:.1f} ms late')
    assert mare < MARE_BAR
    assert len(got) >= a - 5                       # best effort may lose a few at most

    # full speed: as fast as the player can publish
    rig.probe.clear(ROTORS)
    stats = _play(rig, packets[a:b], rate=None)
    F.wait_until(lambda: F.node_values(rig.probe.messages('/diagnostics'), FQN)
                 and int(F.node_values(rig.probe.messages('/diagnostics'), FQN)['last_seq'])
                 >= rig.seq - 1 - 5, 120, 'the node to catch up')
    got = rig.probe.messages(ROTORS)
    vals = F.node_values(rig.probe.messages('/diagnostics'), FQN)
    mare, used = _mare(scene, got)
    print(f'full speed: {b - a} packets published in {stats.wall_s:.2f} s, {len(got)} outputs, '
          f'{vals["packets_dropped"]} dropped, MArE {100 * mare:.3f} %')
    assert len(got) + int(vals['packets_dropped']) >= (b - a) - 5
    assert mare < MARE_BAR

    # bad packets: unknown encoding, garbage, truncated, a seq gap, time backwards
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
    rig.probe.clear(ROTORS)
    before = F.node_values(rig.probe.messages('/diagnostics'), FQN)
    _play(rig, bad, rate=None)
    rig.seq += 7                                       # seq gap of 7
    _play(rig, packets[b + 1:], rate=1.0)
    _wait_outputs(rig, (n - b - 1) - 5)
    F.wait_until(lambda: int(F.node_values(rig.probe.messages('/diagnostics'), FQN)['last_seq'])
                 == rig.seq - 1, 10, 'diagnostics after the stream')
    assert rig.proc.alive()
    vals = F.node_values(rig.probe.messages('/diagnostics'), FQN)
    pipe = F.status_values(rig.probe.messages('/diagnostics'), 'helixtrack: pipeline')
    print('node', vals)
    print('pipeline', pipe)
    assert int(vals['packets_refused']) - int(before['packets_refused']) >= 1
    assert int(vals['packets_dropped']) - int(before['packets_dropped']) >= 7
    got = rig.probe.messages(ROTORS)
    mare, used = _mare(scene, got, skip_s=0.05)
    print(f'after bad packets: {len(got)} outputs, MArE {100 * mare:.3f} % over {used}')
    assert mare < MARE_BAR
