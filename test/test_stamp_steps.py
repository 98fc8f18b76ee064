# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What the node says of its output stamps (:class:`StampSteps`), without ROS.

``test_node_stamps.py`` checks the line against the stamps a live node
published; these cases cover the other outcomes: stamps set aside that came
back, stamps of 0, a camera restart, a step ahead.
"""

from __future__ import annotations

import pytest
from test_header_clock_steps import _Log

from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline.records import PacketResult
from helixtrack_ros.ros.stream_notes import StampSteps

BASE_NS = 1_700_000_000_000_000_000


def _feed(steps: StampSteps, t_us: int, header_ns: int, out_ns: int, aside: bool) -> None:
    pkt = EventPacketRecord(header_ns, '', 720, 1280, 0, 0, 'evt3', False, b'')
    steps.note([pkt], [PacketResult(stamp_ns=out_ns, t_us=t_us, n_events=10)], int(aside))


def test_stamps_set_aside_that_come_back_are_said_once_they_are_back():
    log = _Log()
    steps = StampSteps(log)
    for k in range(50):                          # 1 ms packets; 20 ms of stamps 30 ms back
        t = k * 1000
        off = -30_000_000 if 10 <= k < 30 else 0
        _feed(steps, t, BASE_NS + t * 1000 + off, BASE_NS + t * 1000, off != 0)
        assert len(log.lines) == (1 if k >= 30 else 0), (k, log.lines)
    assert log.lines == ["20 header stamps up to 0.030 s behind the sensor clock set aside: "
                         "the outputs keep the sensor clock's time (20 set aside so far)"]


def test_a_step_is_one_line_with_its_size_and_the_packets_set_aside_before():
    log = _Log()
    steps = StampSteps(log)
    for k in range(300):                          # the stamps step ahead 3 s at 100 ms
        t = k * 1000
        header = BASE_NS + t * 1000 + (3 * 10**9 if k >= 100 else 0)
        out = BASE_NS + t * 1000 + (3 * 10**9 if k >= 200 else 0)
        _feed(steps, t, header, out, 100 <= k < 200)
    out_200 = BASE_NS + 200_000_000 + 3 * 10**9
    assert log.lines == [
        f'output stamps stepped ahead 3.000 s at stamp {out_200 // 10**9}.'
        f'{out_200 % 10**9:09d}: they follow the header stamps, which moved ahead that far '
        'against the sensor clock; the 100 packets before it with such stamps were set aside '
        "(their outputs kept the sensor clock's old mapping) (1 such step since the start)"]
    assert steps.steps == 1 and steps.set_aside == 0


def test_a_restart_of_sensor_time_and_small_steps_are_not_steps():
    log = _Log()
    steps = StampSteps(log)
    for k in range(100):
        t = (k if k < 50 else k - 50) * 1000        # the camera restarted at packet 50
        jitter = (k % 7) * 700_000                  # stamps within 5 ms of the mapping
        _feed(steps, t, BASE_NS + k * 10**6 + jitter, BASE_NS + k * 10**6 + jitter, False)
    assert log.lines == []


@pytest.mark.parametrize('seconds', [0.5, 2.5])
def test_stamps_of_0_set_aside_for_long_are_said_every_second(seconds):
    log = _Log()
    steps = StampSteps(log)
    n = int(seconds * 1000)
    for k in range(n):
        t = k * 1000
        _feed(steps, t, 0 if k >= 10 else BASE_NS + t * 1000, BASE_NS + t * 1000, k >= 10)
    assert len(log.lines) == (n - 10) // 1002          # (more than 1 s: 1002 packets)
    for line in log.lines:
        assert line.startswith('1002 header stamps of 0 (no stamp) set aside: the outputs '
                               "keep the sensor clock's time"), line
