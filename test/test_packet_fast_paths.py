# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The per-packet shortcuts of issue #16 decide as the general steps they skip (ROS-free).

Each shortcut stands in for a call on every packet: a TRACKING row's status without
``rotor_status``, the stacked kernel's rows read as lists once per batch, a good pose's
place noted only when due, and the stream counters compared in one tuple before they are
said. Each must give what the general step gives.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
from helixtrack_ros.core.health import TRACKING, RotorState
from helixtrack_ros.core.tracker_stack import TrackerStack
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.pipeline import outputs as O  # noqa: N812
from helixtrack_ros.pipeline.recovery import PLACES_EVERY_US, RotorRecovery
from helixtrack_ros.ros.stream_notes import SAY_EVERY_S, StreamNotes
from helixtrack_ros.sim import Simulator, make_scenario


@pytest.mark.parametrize('stride', [1, 2, 8])
def test_a_tracking_row_gets_the_status_rotor_status_gives(stride):
    """Centres and routing boxes on and off the image's edges, non-finite RPMs: the
    shortcut takes a row as TRACKING exactly when rotor_status does, with its texts."""
    w, h = 640, 480
    edges = [-1.0, -0.5, -0.0, 0.0, 0.5, 100.0, 639.5, 640.0, 641.0, math.nan]
    rows = 0
    for cx, cy, box0, box1, rpm, radius in itertools.product(
            edges, [0.0, 479.9, 240.0, 480.0, math.nan], [-50.0, -0.9, 0.0, 639.0, 640.0, 700.0],
            [-1.0, -0.5, 0.0, 479.0, 480.0], [9000.0, math.inf, math.nan], [0.0, 60.0, 300.0]):
        v = [0.0] * (O.layout.PK_BOX + 4)
        v[O._TX], v[O._TY], v[O._RPM], v[O._S] = cx, cy, rpm, radius
        v[O._X0], v[O._Y0], v[O._X1], v[O._Y1] = box0, box0, box0 + 90.0, box1 + 90.0
        level, message, state = O.rotor_status((w, h), stride, cx, cy, rpm, TRACKING, 0, 10,
                                               '', v[O.layout.PK_BOX:O.layout.PK_BOX + 4],
                                               None, radius)
        fits = O._tracking_fits(v, w, h)
        assert fits == (state == RotorState.TRACKING), (cx, cy, box0, box1, rpm)
        if fits:
            assert O._tracking_text(stride) == (level, message)
        rows += 1
    assert rows > 3000


def test_note_good_notes_the_places_the_general_step_notes():
    """A good pose's place is noted once per PLACES_EVERY_US (the step is skipped between):
    the same places as the general step on every call, time going back included."""
    rng = np.random.default_rng(4)
    times = np.cumsum(rng.integers(200, 3000, 3000)).tolist()
    times[1500:] = [t - times[1500] for t in times[1500:]]         # a new stream
    quick, plain = RotorRecovery(), RotorRecovery()
    for t in times:
        q = [3.5, 0.1, float(rng.uniform(0, 640)), float(rng.uniform(0, 480)), 0.0, 0.0]
        quick.note_good(q, 9000.0, 1, t)
        plain._note_place(q, t)
    assert list(quick.places) == list(plain.places)
    assert len(quick.places) > 40 and all(
        b[0] - a[0] >= PLACES_EVERY_US for a, b in zip(quick.places, list(quick.places)[1:]))


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def warning(self, text: str, **_: Any) -> None:
        self.lines.append(text)


class _Seq:
    last_gap = (4, 7)
    last_restart = (9, 0)


class _Pipe:
    def __init__(self) -> None:
        self.counters = dict.fromkeys(StreamNotes.KEYS, 0) | {'packets_dropped': 0}
        self.sequence = _Seq()
        self.format_change = ('evt3 1280x720', 'evt2 640x480')
        self.foreign_source = ('camera', 'camera2')
        self.rotor_names: list[str] = []


def test_the_stream_counters_are_said_once_per_change():
    log, pipe = _Log(), _Pipe()
    now = [100.0]
    notes = StreamNotes(log, clock=lambda: now[0])
    for _ in range(3):
        notes.say(pipe)
    assert log.lines == []
    from types import SimpleNamespace as Pkt

    from helixtrack_ros.pipeline.records import PacketResult
    named = {'packets_refused': PacketResult(error='no usable sensor size'),
             'packets_duplicate': PacketResult(dropped='a copy of the packet before'),
             'packets_late': PacketResult(dropped='late')}
    for key in StreamNotes.KEYS:
        pipe.counters[key] += 1
        res = named.get(key, PacketResult())
        notes.say(pipe, [Pkt(seq=7)], [res])
        notes.say(pipe)
    assert len(log.lines) == len(StreamNotes.KEYS)
    assert 'packet 7 refused (1 so far): no usable sensor size' in log.lines
    assert ('1 packets left out so far as copies of the packet before; the last left out: '
            'packet 7, a copy of the packet before') in log.lines
    now[0] += SAY_EVERY_S
    pipe.counters['seq_gaps'] += 2
    pipe.counters['sensor_gaps'] += 1
    notes.say(pipe)
    assert len(log.lines) == len(StreamNotes.KEYS) + 2
    assert log.lines[-2].startswith('packets lost') and 'sensor time' in log.lines[-1]


def test_a_count_that_changes_within_its_lines_interval_is_said_when_that_is_up():
    """(Red-team review, node under load: the one line said 61 packets dropped while
    1,331 were, in 7 gaps; the later gaps fell inside the logger's 5 s throttle and no
    line came after it.)"""
    log, pipe = _Log(), _Pipe()
    now = [100.0]
    notes = StreamNotes(log, clock=lambda: now[0])
    pipe.counters.update(seq_gaps=1, packets_dropped=61)
    notes.say(pipe)
    assert log.lines == ['packets lost: seq 4 -> 7 (61 dropped so far, in 1 gaps)']
    pipe.counters.update(seq_gaps=7, packets_dropped=1331)
    now[0] += 1.0
    notes.say(pipe)
    notes.flush(pipe)
    assert len(log.lines) == 1                     # (within the 5 s: not yet)
    now[0] += SAY_EVERY_S
    notes.say(pipe)                                # (per packet, nothing new: said now)
    assert log.lines[-1].endswith('(1331 dropped so far, in 7 gaps)')
    pipe.counters.update(seq_gaps=8, packets_dropped=1400)
    notes.say(pipe)
    notes.flush(pipe)
    assert len(log.lines) == 2
    notes.flush(pipe, force=True)                  # (the node's end)
    assert log.lines[-1].endswith('(1400 dropped so far, in 8 gaps)') and len(log.lines) == 3


def _records(scene):
    ev = Simulator(scene, seed=1).all_events()
    ev = type(ev)(ev.t_us[::20], ev.x[::20], ev.y[::20], ev.p[::20])
    enc = Evt3Encoder()
    return [EventPacketRecord(1_700_000_000_000_000_000 + int(ev.t_us[a]) * 1000, '', 720, 1280,
                              k, 0, 'evt3', False, enc.encode(ev.slice(a, b)))
            for k, (a, b) in enumerate(packetize(ev.t_us, 1000))]


def _outputs(pipe, records, batch):
    out = []
    for k in range(0, len(records), batch):
        for res in pipe.process_packets(records[k:k + batch]):
            out.append([(o.name, o.t_us, repr(o.phase_rad), repr(o.omega_rad_s),
                         repr(o.rpm_shaft), np.asarray(o.homography).tobytes(), o.events,
                         o.level, o.message, int(o.health), int(o.state), int(o.cause))
                        for o in res.rotors])
    return out


@pytest.mark.parametrize('batch', [1, 7])
def test_the_stacked_rows_read_at_once_give_the_outputs_read_per_rotor(monkeypatch, batch):
    """The batch's rows as lists in one conversion per array (TrackerStack.last_rows) give
    the outputs that one conversion per rotor gives, rotors lost and found included."""
    scene = make_scenario('quadcopter_2m', duration_s=0.6, ego_level=1, seed=1,
                          hide_rotor=('front_left', 0.25, 0.4))
    records = _records(scene)
    config = PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1)
    at_once = _outputs(TrackingPipeline(config), records, batch)
    orig = TrackerStack.run

    def run(self, *args):
        got = orig(self, *args)
        self.last_rows = None                 # (the per-rotor conversion)
        return got
    monkeypatch.setattr(TrackerStack, 'run', run)
    per_rotor = _outputs(TrackingPipeline(config), records, batch)
    assert at_once == per_rotor
    states = {o[10] for row in at_once for o in row}
    assert {RotorState.TRACKING, RotorState.STARVED} <= states
