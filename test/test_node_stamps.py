# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The live node's log says what its output stamps do when the header stamps step back.

The camera driver's clock steps back while the sensor time in the packets goes
on: the node sets the stamps aside, and when they hold for 100 ms of sensor
time its outputs follow them. Before (live-node review), its one line said the
opposite: "header stamps far off the sensor clock set aside: the outputs keep
the sensor clock's time". The line is checked here against the stamps the node
published over loopback DDS.
"""

from __future__ import annotations

import re
import time

import node_fixtures as F  # noqa: N812
import pytest

F.require_real_node()
pytest.importorskip('helixtrack_ros.sim')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

FQN = '/stamps/helixtrack'
BASE_NS = 1_700_000_000_000_000_000
#: the header stamps step back from the packet whose first event is this late [us]
STEP_AT_US = 150_000


def _publish_paced(pub, packets: list, last_t: list[int], rate: float) -> None:
    """Publish at ``rate`` times the pace of sensor time (the stamps cannot pace it)."""
    wall0 = time.perf_counter()
    for m, t in zip(packets, last_t):
        wait = wall0 + (t - last_t[0]) * 1e-6 / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        pub.publish(m)


@pytest.mark.parametrize('step_ns', [2_000_000_000, 50_000_000])
def test_the_log_says_what_the_output_stamps_do_when_header_stamps_step_back(tmp_path,
                                                                             step_ns):
    """A step of 2 s, and one of 50 ms (which the pipeline also reads as events lost
    before the driver: sensor time went on further than the header stamps)."""
    from helixtrack_ros.io.params_file import rotor_params_tree
    scene, packets, last_t = F.sim_stream('lone_constant', 0.4, seed=1, base_ns=BASE_NS)
    first_t = [(F.stamp_ns(m) - BASE_NS) // 1000 for m in packets]   # header = first event
    k_step = next(i for i, t in enumerate(first_t) if t >= STEP_AT_US)
    for m in packets[k_step:]:
        ns = F.stamp_ns(m) - step_ns
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(ns, 1_000_000_000)
    tree = rotor_params_tree(scene.initial_rotor_params())
    tree['diagnostics_period_s'] = 0.1
    params = F.write_params_file(tmp_path / 'params.yaml', tree)
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/stamps',
                          '-r', '~/events:=/stamps/events'], log_dir=tmp_path)
    probe = F.Probe('stamps_probe')
    try:
        probe.collect(JointState, FQN + '/rotors', depth=20000)
        probe.collect(DiagnosticArray, '/diagnostics')
        pub = probe.events_publisher('/stamps/events')
        probe.wait_matched(pub, [FQN + '/rotors'], timeout=60)
        seq = probe.prime(pub, lambda: F.node_saw_packets(probe, FQN),
                          start_ns=BASE_NS - 10**9)
        probe.clear(FQN + '/rotors')
        for i, m in enumerate(packets):
            m.seq = seq + i
        _publish_paced(pub, packets, last_t, rate=0.5)
        F.wait_until(lambda: len(probe.messages(FQN + '/rotors')) >= len(packets), 60,
                     f'{len(packets)} outputs')
        stamps = [F.stamp_ns(j) for j in probe.messages(FQN + '/rotors')]
    finally:
        log = F.close_and_check(probe, proc)
    assert len(stamps) == len(packets)
    # what was published: the sensor clock's mapping, until the stamps held for 100 ms
    offsets = [s - t * 1000 for s, t in zip(stamps, last_t)]
    k = next(i for i, o in enumerate(offsets) if o != BASE_NS)
    assert set(offsets[:k]) == {BASE_NS} and set(offsets[k:]) == {BASE_NS - step_ns}
    assert 100_000 <= last_t[k] - first_t[k_step] <= 102_000
    # ... and what the log says: one line, the step, where, and the packets set aside
    lines = [line for line in log.splitlines()
             if 'output stamps' in line or 'set aside' in line]
    assert len(lines) == 1, lines
    m = re.search(r'output stamps stepped back (\d+\.\d{3}) s at stamp (\d+)\.(\d{9}): they '
                  r'follow the header stamps.*the (\d+) packets before it', lines[0])
    assert m, lines[0]
    step = (stamps[k] - stamps[k - 1]) - (last_t[k] - last_t[k - 1]) * 1000
    assert float(m[1]) == pytest.approx(-step / 1e9, abs=5e-4)
    assert int(m[2]) * 10**9 + int(m[3]) == stamps[k]
    assert int(m[4]) == k - k_step
    assert "the outputs keep the sensor clock's time" not in log
