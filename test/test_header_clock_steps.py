# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A header clock that steps back is no loss of events; a real loss still is.

Found by a review of the live node: the camera driver's header stamps stepped
back 50 ms while the sensor time in the packets went on; the intake read it as
events lost before the driver, told the rotors to skip 50 ms, and they
published NaN (DEGRADED) for ~25 ms, the log saying "events lost before the
driver". Nothing was lost.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from test_pipeline import _raw_packets

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
from helixtrack_ros.core.health import RotorState
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.pipeline.records import PacketResult
from helixtrack_ros.ros.stream_notes import StreamNotes
from helixtrack_ros.sim import make_scenario

#: the packet from which on the header stamps are stepped (or events lost)
AT = 200


class _Log:
    """A logger that keeps its warnings."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def warning(self, text: str, **_: Any) -> None:
        self.lines.append(text)


@pytest.fixture(scope='module')
def quad() -> tuple[Any, list[EventPacketRecord]]:
    scene = make_scenario('quadcopter_4m', duration_s=0.45, ego_level=2, seed=3)
    return scene, _raw_packets(scene, 3)


def _run(scene: Any, packets: list[EventPacketRecord]
         ) -> tuple[TrackingPipeline, list[PacketResult], list[str]]:
    """Feed the packets in batches of 5 as the node does; its results and log lines."""
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    log = _Log()
    notes = StreamNotes(log)
    results: list[PacketResult] = []
    for k in range(0, len(packets), 5):
        results += pipe.process_packets(packets[k:k + 5])
        notes.say(pipe)
    return pipe, results, log.lines


@pytest.mark.parametrize('step_ms', [50, 500])
def test_a_header_clock_stepped_back_is_no_loss_of_events(quad, step_ms):
    """Before: the step was a 'sensor gap' of step_ms, every rotor skipped that much
    time and went DEGRADED (NaN) for ~25 ms (50 ms) or longer (500 ms), and the log said
    events were lost before the driver. Now the sensor time, continuous across the
    packets, says nothing was lost: no skip, no NaN, no such count or line."""
    scene, raw = quad
    step_ns = step_ms * 1_000_000
    stepped = raw[:AT] + [p._replace(stamp_ns=p.stamp_ns - step_ns) for p in raw[AT:]]
    pipe, results, lines = _run(scene, stepped)
    c = pipe.counters
    assert all(r.state == RotorState.TRACKING for r in results[AT - 1].rotors)
    for res in results[AT - 1:]:
        assert res.error is None
        for r in res.rotors:
            assert r.state == RotorState.TRACKING and not math.isnan(r.rpm_shaft), res.t_us
    assert c['sensor_gaps'] == 0 and c['time_gaps'] == 0 and c['events_mistimed'] == 0
    assert c['camera_restarts'] == 0 and c['packets_corrupt'] == 0
    assert not [s for s in lines if 'lost' in s], lines
    # (the header stamps moved: the time mapping sets them aside, then follows them)
    assert c['stamp_jumps'] > 0
    assert results[-1].stamp_ns < raw[-1].stamp_ns - step_ns // 2


def _lost_before_the_driver(raw: list[EventPacketRecord], lost: int, clean: bool
                            ) -> list[EventPacketRecord]:
    """The packets without ``lost`` of them after packet AT, numbered on without a gap and
    stamped 1 ms apart (a driver behind the camera that dropped its backlog). ``clean``:
    the packets after the loss are encoded afresh (they start with a full time word),
    else the words before the next TIME_HIGH keep the old one."""
    kept = raw[:AT] + raw[AT + lost:]
    if clean:
        dec, enc = make_decoder('evt3', 1280, 720), Evt3Encoder()
        events = [dec.decode(p.events).events for p in raw]
        kept = raw[:AT] + [p._replace(events=enc.encode(ev))
                           for p, ev in zip(raw[AT + lost:], events[AT + lost:])]
    stamp0 = raw[0].stamp_ns
    return [p._replace(seq=j, stamp_ns=stamp0 + 1_000_000 * j) for j, p in enumerate(kept)]


@pytest.mark.parametrize('lost, clean', [(40, True), (80, True), (40, False), (150, False)])
def test_events_lost_before_the_driver_are_still_a_loss(quad, lost, clean):
    """The same scene with ``lost`` ms of sensor time gone before packet AT, the seq
    numbers contiguous and the header stamps 1 ms on: sensor time jumps where the stamps
    do not. Still a sensor gap, said in the log (or, where the words after it keep the
    old TIME_HIGH, a stale packet refused, and after 150 ms a leap), and the rotors skip
    it, NaN, and come back TRACKING."""
    scene, raw = quad
    pipe, results, lines = _run(scene, _lost_before_the_driver(raw, lost, clean))
    c = pipe.counters
    if clean:
        assert c['sensor_gaps'] == 1 and c['packets_corrupt'] == 0
        assert [s for s in lines if 'events lost before the driver' in s], lines
    else:
        assert c['sensor_gaps'] + c['time_gaps'] + c['packets_corrupt'] >= 1
    assert any(all(math.isnan(r.rpm_shaft) for r in res.rotors)
               for res in results[AT:AT + 5])
    assert all(r.state == RotorState.TRACKING for r in results[-1].rotors)


def test_a_gap_in_the_sequence_numbers_is_still_a_loss(quad):
    """Packets missing from the sequence (lost in transport) still make the rotors skip
    their time, also when the header clock stepped back at the same packet."""
    scene, raw = quad
    step_ns = 50_000_000
    kept = raw[:AT] + [p._replace(stamp_ns=p.stamp_ns - step_ns) for p in raw[AT + 30:]]
    pipe, results, lines = _run(scene, kept)
    c = pipe.counters
    assert c['seq_gaps'] == 1 and c['packets_dropped'] == 30
    assert [s for s in lines if 'packets lost' in s], lines
    assert any(all(math.isnan(r.rpm_shaft) for r in res.rotors)
               for res in results[AT:AT + 10])
    assert all(r.state == RotorState.TRACKING for r in results[-1].rotors)
