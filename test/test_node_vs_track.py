# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Over DDS: what the node publishes for a bag is what ``helixtrack track`` writes for it.

The same simulated bag goes through ``helixtrack track`` (results.mcap) and,
played over loopback DDS, through a ``helixtrack_node``; the node's
``~/rotors``, ``~/<rotor>/rpm`` and ``~/<rotor>/homography`` messages must
equal the bag's, message for message (same count, same stamps, same values).
"""

from __future__ import annotations

import node_fixtures as F  # noqa: N812
import numpy as np
import pytest
import yaml

F.require_real_node()
pytest.importorskip('rosbags')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64, Float64MultiArray  # noqa: E402

FQN = '/nvt/helixtrack'


def _stamp(msg) -> int:
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def test_node_outputs_equal_what_helixtrack_track_writes(tmp_path):
    from event_camera_msgs.msg import EventPacket
    from rclpy.serialization import deserialize_message

    from helixtrack_ros.cli import simulate_to_dir, track_bag
    from helixtrack_ros.io.bags import iter_messages

    info = simulate_to_dir('quadcopter_4m', 0.25, 5, tmp_path / 'scene', ego_level=2,
                           quiet=True)
    track_bag(str(info['bag']), str(info['params']), tmp_path / 'track', quiet=True)
    offline: dict[str, list] = {}
    for topic, _, msg in iter_messages(tmp_path / 'track' / 'results.mcap'):
        offline.setdefault(topic, []).append(msg)
    names = list(offline['/helixtrack/rotors'][0].name)

    # the node gets the same file, and never subsamples (as the offline tool)
    tree = yaml.safe_load(info['params'].read_text())['/**']['ros__parameters']
    tree['realtime_stride'] = False
    tree['diagnostics_period_s'] = 0.1
    tree['rotor_topics_hz'] = 0.0      # per-rotor topics with every packet, as results.mcap
    params = F.write_params_file(tmp_path / 'node.yaml', tree)
    play = F.load_play_bag()
    packets = [deserialize_message(raw, EventPacket)
               for _, raw in play.read_packets(info['bag'])]
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/nvt',
                          '-r', '~/events:=/nvt/events'], log_dir=tmp_path)
    probe = F.Probe('node_vs_track_probe')
    try:
        probe.collect(JointState, FQN + '/rotors', depth=10_000)
        probe.collect(DiagnosticArray, '/diagnostics')
        for n in names:
            probe.collect(Float64, f'{FQN}/{n}/rpm', depth=10_000)
            probe.collect(Float64, f'{FQN}/{n}/rpm_std', depth=10_000)
            probe.collect(Float64MultiArray, f'{FQN}/{n}/homography', depth=10_000)
        pub = probe.events_publisher('/nvt/events')
        probe.wait_matched(pub, [FQN + '/rotors'], timeout=90)
        # event-less packets until the node has seen one (a best-effort reader can drop
        # the first packets of a writer); they change no tracker state
        probe.prime(pub, lambda: F.node_saw_packets(probe, FQN),
                    start_ns=F.stamp_ns(packets[0]) - 10**9)
        for i, m in enumerate(packets):
            m.seq = 1000 + i
        play.play(pub, packets, rate=0.25)
        want = len(offline['/helixtrack/rotors'])
        F.wait_until(lambda: len(probe.messages(FQN + '/rotors')) >= want, 60,
                     f'{want} outputs')
        # each rotor's topics go out after ~/rotors: let their last messages land too
        for n in names:
            for topic in ('rpm', 'rpm_std', 'homography'):
                got = offline[f'/helixtrack/{n}/{topic}']
                F.wait_until(lambda n=n, topic=topic, got=got: len(
                    probe.messages(f'{FQN}/{n}/{topic}')) >= len(got), 30,
                    f'{len(got)} {n}/{topic}')
        live = probe.messages(FQN + '/rotors')
        ref = offline['/helixtrack/rotors']
        assert len(live) == len(ref)
        assert [_stamp(m) for m in live] == [_stamp(m) for m in ref]
        assert all(list(m.name) == names for m in live)
        # (NaN where a rotor is not TRACKING: the same packets in both)
        assert np.array_equal([list(m.position) for m in live],
                              [list(m.position) for m in ref], equal_nan=True)
        assert np.array_equal([list(m.velocity) for m in live],
                              [list(m.velocity) for m in ref], equal_nan=True)
        for n in names:
            rpm = [m.data for m in probe.messages(f'{FQN}/{n}/rpm')]
            assert np.array_equal(rpm, [m.data for m in offline[f'/helixtrack/{n}/rpm']],
                                  equal_nan=True), n
            assert np.isfinite(rpm[-1]), n
            std = [m.data for m in probe.messages(f'{FQN}/{n}/rpm_std')]
            assert np.array_equal(std, [m.data for m in offline[f'/helixtrack/{n}/rpm_std']],
                                  equal_nan=True), n
            assert np.array_equal(np.isnan(std), np.isnan(rpm)), n
            hom = [list(m.data) for m in probe.messages(f'{FQN}/{n}/homography')]
            assert np.array_equal(hom, [list(m.data)
                                        for m in offline[f'/helixtrack/{n}/homography']],
                                  equal_nan=True), n
    finally:
        F.close_and_check(probe, proc)
