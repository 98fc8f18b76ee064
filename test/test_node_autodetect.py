# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Over DDS: a node started with no rotors finds them itself (auto_detect, the default)."""

from __future__ import annotations

import math

import node_fixtures as F  # noqa: N812
import numpy as np

F.require_real_node()

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

FQN = '/ad/helixtrack'
BASE_NS = 1_700_000_000_000_000_000


def test_node_without_rotors_detects_and_tracks_four_rotors(tmp_path):
    scene, packets, _ = F.sim_stream('quadcopter_4m', 0.7, seed=4, ego_level=2, base_ns=BASE_NS)
    # no rotor_names and no auto_detect in the file: detection is what the node does then
    params = F.write_params_file(tmp_path / 'params.yaml', {'diagnostics_period_s': 0.1})
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/ad',
                          '-r', '~/events:=/ev_ad'], log_dir=tmp_path)
    probe = F.Probe('autodetect_probe')
    try:
        probe.collect(JointState, FQN + '/rotors', depth=5000)
        probe.collect(Float64, FQN + '/rotor_0/rpm', depth=5000)
        probe.collect(DiagnosticArray, '/diagnostics')
        pub = probe.events_publisher('/ev_ad')
        probe.wait_matched(pub, [FQN + '/rotors'], timeout=90)
        # event-less packets until the node has seen one (a best-effort reader can drop
        # the first packets of a new writer)
        probe.prime(pub, lambda: F.node_saw_packets(probe, FQN),
                    start_ns=BASE_NS - 10**9)
        for i, m in enumerate(packets):
            m.seq = 1000 + i
        F.load_play_bag().play(pub, packets, rate=1.0)
        F.wait_until(lambda: any(F.stamp_ns(j) >= F.stamp_ns(packets[-1]) - 5_000_000
                                 for j in probe.messages(FQN + '/rotors')), 60,
                     'outputs of the last packets')
        last = probe.messages(FQN + '/rotors')[-1]
        assert list(last.name) == ['rotor_0', 'rotor_1', 'rotor_2', 'rotor_3']
        t_us = np.array([(F.stamp_ns(last) - BASE_NS) // 1000])
        truth = sorted(float(r.rpm_shaft(t_us)[0]) for r in scene.rotors)
        got = sorted(abs(v) * 60 / (2 * math.pi) for v in last.velocity)
        assert np.allclose(got, truth, rtol=0.03), (got, truth)
        assert probe.messages(FQN + '/rotor_0/rpm')
    finally:
        log = F.close_and_check(probe, proc)
    assert 'no rotors configured: detecting them' in log
    assert 'detected rotors' in log
