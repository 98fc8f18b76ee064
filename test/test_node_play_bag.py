# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``scripts/play_bag.py`` replays a rosbag2's EventPackets over DDS, paced or not."""

from __future__ import annotations

from pathlib import Path
import subprocess
import time

import node_fixtures as F  # noqa: N812
import pytest

pytest.importorskip('rclpy')
pytest.importorskip('event_camera_msgs.msg')
pytest.importorskip('rosbags')

PERIOD_NS = 5_000_000
N = 40
MSGDEF = (F.ROOT / 'tools' / 'event_camera_msgs' / 'msg' / 'EventPacket.msg')


def write_bag(path: Path, n: int = N) -> list:
    """A sqlite3 rosbag2 with ``n`` EventPackets on /event_camera/events."""
    from rclpy.serialization import serialize_message
    from rosbags.rosbag2 import Writer
    packets = F.fake_packets(n, period_ns=PERIOD_NS, payload_bytes=100)
    for k, m in enumerate(packets):
        m.events = bytes([k % 256]) * 100
    with Writer(path, version=8) as writer:
        conn = writer.add_connection('/event_camera/events', F.PLAY_MSGTYPE,
                                     msgdef=MSGDEF.read_text(), rihs01='RIHS01_' + '0' * 64)
        other = writer.add_connection('/other', 'std_msgs/msg/Empty', msgdef='',
                                      rihs01='RIHS01_' + '1' * 64)
        for m in packets:
            writer.write(conn, F.stamp_ns(m), serialize_message(m))
        writer.write(other, F.stamp_ns(packets[-1]), b'\x00\x01\x00\x00\x00\x00\x00\x00')
    return packets


@pytest.fixture(scope='module')
def bag(tmp_path_factory):
    path = tmp_path_factory.mktemp('bag') / 'events'
    return path, write_bag(path)


def _play(bag_path: Path, *extra: str) -> tuple[list, float, subprocess.CompletedProcess]:
    from event_camera_msgs.msg import EventPacket
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    probe = F.Probe('play_bag_probe')
    got = []
    try:
        probe.node.create_subscription(
            EventPacket, '/replay', lambda m: got.append((time.monotonic(), m)),
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT))
        res = subprocess.run([F.PYTHON, str(F.ROOT / 'scripts' / 'play_bag.py'), str(bag_path),
                              '--out', '/replay', *extra], env=F.subprocess_env(),
                             capture_output=True, text=True, timeout=60)
        if res.returncode == 0:
            F.wait_until(lambda: len(got) >= N, 5, f'{N} packets')
    finally:
        probe.close()
    span = got[-1][0] - got[0][0] if got else 0.0
    return [m for _, m in got], span, res


def test_real_pace(bag):
    path, sent = bag
    got, span, res = _play(path)
    assert res.returncode == 0, res.stderr
    assert [bytes(m.events) for m in got] == [bytes(m.events) for m in sent]
    assert [F.stamp_ns(m) for m in got] == [F.stamp_ns(m) for m in sent]
    assert got[0].encoding == 'evt3' and got[0].width == 1280
    stream_s = (N - 1) * PERIOD_NS * 1e-9
    assert 0.7 * stream_s < span < stream_s + 0.15
    assert f'played {N} packets' in res.stderr + res.stdout


def test_full_speed_restamped(bag):
    path, sent = bag
    t0 = time.time_ns()
    got, span, res = _play(path, '--full-speed', '--restamp')
    assert res.returncode == 0, res.stderr
    assert len(got) == N
    stamps = [F.stamp_ns(m) for m in got]
    assert stamps[0] >= t0                                   # starts at "now"
    assert [s - stamps[0] for s in stamps] == [k * PERIOD_NS for k in range(N)]
    assert span < (N - 1) * PERIOD_NS * 1e-9


def test_missing_topic_is_an_error(bag):
    path, _ = bag
    res = subprocess.run([F.PYTHON, str(F.ROOT / 'scripts' / 'play_bag.py'), str(path),
                          '--topic', '/nope'], env=F.subprocess_env(), capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 1 and '/event_camera/events' in res.stderr
