# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A driver that sets no header stamps: the node stamps its outputs from its own clock on
arrival, not 0 (red-team round 5: every output, 11,894 TRACKING values included, was
stamped 0 and the log said "the outputs keep the sensor clock's time")."""

from __future__ import annotations

import time

import node_fixtures as F  # noqa: N812
import pytest

from helixtrack_ros.ros.arrival_stamps import ArrivalStamps


def _record(stamp_ns: int):
    from helixtrack_ros.io.packet_record import EventPacketRecord
    return EventPacketRecord(stamp_ns, '', 720, 1280, 0, 0, 'evt3', False, b'', 0)


def test_unstamped_packets_take_their_arrival_while_no_mapping_or_filling():
    said = []
    fill = ArrivalStamps(said.append)
    got = fill.fill([_record(0), _record(0)], [100, 200], 5, mapped=False)
    assert [p.stamp_ns for p in got] == [105, 205] and len(said) == 1 and fill.filled == 2
    # (the mapping the arrivals made goes on with them: the stream is being filled)
    got = fill.fill([_record(0)], [300], 5, mapped=True)
    assert [p.stamp_ns for p in got] == [305] and fill.filling
    # a stamped packet: the driver's stamps map the time, later 0s are set aside again
    got = fill.fill([_record(7_000), _record(0)], [400, 500], 5, mapped=True)
    assert [p.stamp_ns for p in got] == [7_000, 0] and not fill.filling
    assert len(said) == 1


def test_stamps_of_0_in_a_mapped_stream_are_left_to_the_mapping():
    fill = ArrivalStamps(lambda line: None)
    assert [p.stamp_ns for p in fill.fill([_record(0)], [100], 5, mapped=True)] == [0]
    assert fill.filled == 0


def test_a_clock_that_does_not_run_stamps_nothing():
    """Sim time before its first clock message: the node's clock reads 0."""
    fill = ArrivalStamps(lambda line: None)
    assert [p.stamp_ns for p in fill.fill([_record(0)], [1_000], -1_000, False)] == [0]
    assert not fill.filling and fill.filled == 0


FQN = '/nostamp/helixtrack'


def test_the_node_stamps_an_unstamped_stream_on_arrival(tmp_path):
    F.require_real_node()
    pytest.importorskip('helixtrack_ros.sim')
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    from helixtrack_ros.io.params_file import rotor_params_tree
    scene, packets, last_t = F.sim_stream('lone_constant', 0.3, seed=2)
    for m in packets:
        m.header.stamp.sec = m.header.stamp.nanosec = 0
    tree = rotor_params_tree(scene.initial_rotor_params())
    tree['diagnostics_period_s'] = 0.1
    params = F.write_params_file(tmp_path / 'params.yaml', tree)
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/nostamp',
                          '-r', '~/events:=/nostamp/events'], log_dir=tmp_path)
    probe = F.Probe('nostamp_probe')
    try:
        probe.collect(JointState, FQN + '/rotors', depth=20000)
        probe.collect(DiagnosticArray, '/diagnostics')
        pub = probe.events_publisher('/nostamp/events')
        probe.wait_matched(pub, [FQN + '/rotors'], timeout=60)
        # (primed with stamped empty packets, as the red-team's harness did: they map no
        # time, and the unstamped stream after them must still be stamped)
        seq = probe.prime(pub, lambda: F.node_saw_packets(probe, FQN))
        probe.clear(FQN + '/rotors')
        t0_ns = time.time_ns()
        for i, m in enumerate(packets):
            m.seq = seq + i
            pub.publish(m)
            time.sleep(0.001)
        F.wait_until(lambda: len(probe.messages(FQN + '/rotors')) >= len(packets), 60,
                     f'{len(packets)} outputs')
        t1_ns = time.time_ns()
        outs = probe.messages(FQN + '/rotors')
    finally:
        log = F.close_and_check(probe, proc)
    stamps = [F.stamp_ns(j) for j in outs]
    assert all(t0_ns - 10**9 < s < t1_ns for s in stamps), (t0_ns, stamps[:3], t1_ns)
    assert stamps == sorted(stamps)
    assert any(v == v for j in outs for v in j.velocity)          # (TRACKING values)
    assert log.count('header stamps are 0 (the driver sets none)') == 1
    assert "the outputs keep the sensor clock's time" not in log
