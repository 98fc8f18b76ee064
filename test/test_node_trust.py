# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The live node over loopback DDS never publishes a number the tracker does not stand behind.

One node tracks a simulated quadcopter plus a configured rotor whose centre
is off the sensor, under the real-time stride, while 19 packets of the
stream never reach it (as when DDS drops them under load). Before issue #11:
the lost packets left every rotor LOST with runaway RPMs published, and the
off-sensor rotor published its initial RPM on every packet.
"""

from __future__ import annotations

import math

import node_fixtures as F  # noqa: N812
import numpy as np
import pytest

F.require_real_node()
pytest.importorskip('helixtrack_ros.sim')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

FQN = '/trust/helixtrack'
BASE_NS = 1_700_000_000_000_000_000
DROPPED = range(200, 219)


def _play_into_node(tmp_path, rotors: list[dict], packets: list, dropped=(), rate=0.3):
    """A fresh node with these rotors (real-time stride on); the stream played into it
    without the ``dropped`` packets. Returns its ~/rotors and ~/health messages."""
    from helixtrack_ros.io.params_file import rotor_params_tree
    tree = rotor_params_tree(rotors)
    tree['diagnostics_period_s'] = 0.1
    tree['realtime_stride'] = True
    params = F.write_params_file(tmp_path / 'params.yaml', tree)
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/trust',
                          '-r', '~/events:=/trust/events'], log_dir=tmp_path)
    probe = F.Probe('trust_probe')
    try:
        probe.collect(JointState, FQN + '/rotors', depth=20000)
        probe.collect(DiagnosticArray, FQN + '/health', depth=20000)
        probe.collect(Float64, FQN + f'/{rotors[-1]["name"]}/rpm', depth=20000)
        probe.collect(DiagnosticArray, '/diagnostics')
        pub = probe.events_publisher('/trust/events')
        probe.wait_matched(pub, [FQN + '/rotors', FQN + '/health'], timeout=60)
        seq = probe.prime(pub, lambda: F.node_saw_packets(probe, FQN),
                          start_ns=BASE_NS - 10**9)
        for topic in ('/rotors', '/health', f'/{rotors[-1]["name"]}/rpm'):
            probe.clear(FQN + topic)
        sent = []
        for i, m in enumerate(packets):
            m.seq = seq + i
            if i not in dropped:
                sent.append(m)
        F.load_play_bag().play(pub, sent, rate=rate)
        # both topics: ~/health of the last packet may arrive just after its ~/rotors
        F.wait_until(lambda: min(len(probe.messages(FQN + '/rotors')),
                                 len(probe.messages(FQN + '/health'))) >= len(sent), 60,
                     f'{len(sent)} outputs')
        js = probe.messages(FQN + '/rotors')
        hs = probe.messages(FQN + '/health')
        last_rpm = probe.messages(FQN + f'/{rotors[-1]["name"]}/rpm')
    finally:
        F.close_and_check(probe, proc)
    assert len(hs) == len(js)
    assert [F.stamp_ns(h) for h in hs] == [F.stamp_ns(j) for j in js]
    # whatever the state, a number is finite exactly when its rotor is TRACKING
    for j, h in zip(js, hs):
        for k in range(len(j.name)):
            assert math.isfinite(j.velocity[k]) == (h.status[k].level == b'\x00')
    return js, hs, last_rpm


def test_lost_packets_and_an_off_sensor_rotor_over_dds(tmp_path):
    scene, packets, _ = F.sim_stream('quadcopter_4m', 0.4, seed=2, ego_level=3,
                                     base_ns=BASE_NS)
    rotors = scene.initial_rotor_params()
    off = dict(rotors[0], name='off_sensor', center_px=[1500.0, 900.0])
    js, hs, off_rpm = _play_into_node(tmp_path, [*rotors, off], packets, DROPPED)
    names = list(js[0].name)
    k_off = names.index('off_sensor')
    # the off-sensor rotor: NaN on every topic, OUTSIDE on ~/health, from the start
    assert all(math.isnan(j.velocity[k_off]) for j in js)
    assert off_rpm and all(math.isnan(m.data) for m in off_rpm)
    off_states = {(h.status[k_off].values[0].value, h.status[k_off].level) for h in hs}
    assert off_states == {('OUTSIDE', b'\x02')}, off_states
    # the real rotors: every number after the loss is measured and right
    t_gap = (F.stamp_ns(packets[DROPPED[-1] + 1]) - BASE_NS) // 1000
    t_us = np.array([(F.stamp_ns(j) - BASE_NS) // 1000 for j in js])
    after = t_us > t_gap
    gt = scene.ground_truth(t_us[after])
    for rotor in scene.rotors:
        k = names.index(rotor.name)
        # withheld while re-validated after the loss (DEGRADED), then measured to the end
        states = [h.status[k].values[0].value for h, a in zip(hs, after) if a]
        assert states[0] == 'DEGRADED' and 'TRACKING' in states, (
            rotor.name, states[:3], t_gap, t_us[after][:3], t_us[~after][-3:])
        back = states.index('TRACKING')
        assert set(states[:back]) == {'DEGRADED'} and set(states[back:]) == {'TRACKING'}
        assert t_us[after][back] - t_gap <= 10_000 + len(DROPPED) * 250 + 10_000
        rpm = np.array([abs(j.velocity[k]) for j in js])[after][back:] * 60 / (2 * math.pi)
        truth = gt[rotor.name]['rpm'][back:]
        err = np.max(np.abs(rpm - truth) / truth)
        assert err < 0.005, (rotor.name, err)


def test_a_hidden_rotor_comes_back_within_150_ms_over_dds(tmp_path):
    hide_us = (250_000, 300_000)
    scene, packets, _ = F.sim_stream('quadcopter_4m', 0.6, seed=4, ego_level=1,
                                     base_ns=BASE_NS, hide_rotor=(
                                         'front_left', hide_us[0] / 1e6, hide_us[1] / 1e6))
    js, hs, _ = _play_into_node(tmp_path, scene.initial_rotor_params(), packets, rate=0.5)
    names = list(js[0].name)
    t_us = np.array([(F.stamp_ns(j) - BASE_NS) // 1000 for j in js])
    k = names.index('front_left')
    state = [h.status[k].values[0].value for h in hs]
    starved = [t for t, s in zip(t_us, state) if t >= hide_us[0] and s == 'STARVED']
    assert starved and starved[0] - hide_us[0] <= 50_000
    back = [t for t, s in zip(t_us, state) if t >= hide_us[1] and s == 'TRACKING']
    trace = [(int(t) // 1000, s) for t, s in zip(t_us, state) if t >= hide_us[0]]
    changes = [trace[0]] + [b for a, b in zip(trace, trace[1:]) if a[1] != b[1]]
    # resumed at its last pose as soon as its events are back: no re-detection, whose
    # background wall time used to add sensor time (152-195 ms in 1 of 5 runs before)
    assert back and back[0] - hide_us[1] <= 150_000, changes
    for other in names:
        if other != 'front_left':
            j = names.index(other)
            seen = {h.status[j].values[0].value for h, t in zip(hs, t_us) if t > 100_000}
            assert seen == {'TRACKING'}, (other, seen)
