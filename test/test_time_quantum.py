# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Event times too coarse for a rotor (pipeline/time_quantum.py)."""

import math

import numpy as np
import pytest
from trust_scenes import STAMP0_NS

from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.health import R_COARSE_TIME, RotorState
from helixtrack_ros.core.params import RotorInit
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.pipeline.records import RotorOutput
from helixtrack_ros.pipeline.time_quantum import TimeQuantum, hold_coarse_times
from helixtrack_ros.sim import Simulator, make_scenario


def _packets(t_us: np.ndarray, period_us: int = 1000) -> list[np.ndarray]:
    edges = np.searchsorted(t_us, np.arange(t_us[0], t_us[-1] + period_us, period_us))
    return [t_us[a:b] for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _quantum(t_us: np.ndarray) -> int:
    q = TimeQuantum()
    for part in _packets(t_us):
        q.observe(part)
    return q.quantum_us


def _naive_quantum(t_us: np.ndarray) -> int:
    """The least positive step between distinct times, over every event."""
    return int(np.diff(np.unique(t_us)).min())


@pytest.mark.parametrize('rate_per_ms', [60, 3000])
@pytest.mark.parametrize('rounded_to', [1, 7, 250, 1000, 2000])
def test_the_quantum_is_the_least_step_between_event_times(rate_per_ms, rounded_to):
    """Against a naive twin: a sensor's times (1 us), rounded ones, one time per packet
    (1000) or per two packets (2000)."""
    rng = np.random.default_rng(rounded_to + rate_per_ms)
    t = np.sort(rng.integers(0, 400_000, 400 * rate_per_ms))
    t = (t // rounded_to) * rounded_to
    assert _quantum(t) == _naive_quantum(t) == rounded_to


def _output(rpm: float, state=RotorState.TRACKING) -> RotorOutput:
    return RotorOutput('r', 1000, 0.0, 2 * math.pi * rpm / 60, rpm, 1.0, np.eye(3), 10,
                       state=state)


def test_outputs_whose_blade_pass_spans_fewer_than_ten_quanta_are_withheld():
    init = RotorInit('r', (100.0, 100.0), 50.0, 6000.0, 2)      # 6000 RPM: a 5 ms pass
    outs = [[_output(6000.0)]]
    hold_coarse_times(outs, [500], [init])
    assert outs[0][0].state == RotorState.TRACKING               # 10 quanta
    hold_coarse_times(outs, [501], [init])
    o = outs[0][0]
    assert o.state == RotorState.DEGRADED and o.cause == R_COARSE_TIME
    assert math.isnan(o.rpm_shaft) and 'event times too coarse' in o.message


def _coarse_stream(scene, rounded_to: int, from_us: int = 0) -> list[EventPacketRecord]:
    """EVT3 packets of ``scene`` with its event times from ``from_us`` on rounded."""
    ev = Simulator(scene, seed=2).all_events()
    late = ev.t_us >= from_us
    ev = EventArrays(np.where(late, (ev.t_us // rounded_to) * rounded_to, ev.t_us), ev.x, ev.y,
                     ev.p)
    enc = Evt3Encoder()
    out = []
    for i, (a, b) in enumerate(packetize(ev.t_us, 1000)):
        part = ev.slice(a, b)
        out.append(EventPacketRecord(STAMP0_NS + int(part.t_us[0]) * 1000, '', 720, 1280, i,
                                     0, 'evt3', False, enc.encode(part)))
    return out


@pytest.mark.parametrize('rounded_to', [100, 1000])
def test_a_stream_of_rounded_times_publishes_no_value_it_cannot_resolve(rounded_to):
    """Times rounded to 1 ms (a driver stamping each event with its packet's time, a
    text export in ms) published TRACKING values up to 5.4 % off, their std a tenth of
    the error (red-team review); to 0.1 ms they track as well as a sensor's."""
    scene = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=1, seed=2)
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    results = pipe.process_packets(_coarse_stream(scene, rounded_to))
    assert pipe.time_quantum_us == rounded_to
    (status,) = [d for d in pipe.diagnostics() if d['name'] == 'helixtrack: pipeline']
    assert status['values']['time_quantum_us'] == str(rounded_to)
    t = np.array([r.t_us for r in results])
    truth = scene.ground_truth(t)
    published = 0
    for k, rotor in enumerate(scene.rotors):
        rpm = np.array([r.rotors[k].rpm_shaft for r in results])
        m = np.isfinite(rpm)
        published += int(m.sum())
        assert np.all(np.abs(rpm[m] / truth[rotor.name]['rpm'][m] - 1) < 0.01), rotor.name
    if rounded_to == 1000:
        assert published == 0 and pipe.counters['outputs_coarse_time'] > 0
        assert any(o.cause == R_COARSE_TIME for o in results[-1].rotors)
    else:
        assert published > 4 * 300 and pipe.counters['outputs_coarse_time'] == 0


def test_a_sparse_tail_of_a_sensors_stream_is_no_rounding():
    """Found by a review: a microsecond stream whose last packets held 1-3 events each
    read as times rounded to 5-204 us (their steps), and track warned of it."""
    rng = np.random.default_rng(3)
    dense = np.sort(rng.integers(0, 100_000, 300_000))
    sparse = np.sort(rng.integers(100_000, 400_000, 600))
    assert _quantum(np.concatenate([dense, sparse])) == 1


def test_a_new_stream_format_measures_its_quantum_afresh():
    """The quantum is the stream's: a change of encoding or sensor size starts it again
    (a finer past must not hide rounded times for 128 packets; review)."""
    from helixtrack_ros.pipeline.intake import PacketIntake
    intake = PacketIntake({})
    intake.quantum.observe(np.arange(0, 1000, 1))
    assert intake.quantum.quantum_us == 1
    intake._get_decoder('evt3', 640, 480)
    intake._get_decoder('evt3', 1280, 720)
    for k in range(2):                      # one time per packet now
        intake.quantum.observe(np.full(64, 5000 + 1000 * k))
    assert intake.quantum.quantum_us == 1000


def test_a_batch_is_judged_as_its_packets_one_by_one():
    """Found by a review: the quantum was read once a batch was tracked, so a 400-packet
    call whose stream turned coarse halfway withheld all 694 good outputs of its first
    half, which packet by packet were published. Each packet now carries the quantum known
    when it was admitted."""
    scene = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=1, seed=2)
    pkts = _coarse_stream(scene, 1000, from_us=200_000)

    def states(batch: int) -> tuple[list[list[bool]], list]:
        pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene),
                                               threads=1))
        res = []
        for k in range(0, len(pkts), batch):
            res += pipe.process_packets(pkts[k:k + batch])
        return [[o.state == RotorState.TRACKING for o in r.rotors] for r in res], res

    one, res = states(1)
    assert states(len(pkts))[0] == one          # (what is published, not how it recovers)
    fine = [r for r in res if r.t_us < 190_000]
    coarse = [r for r in res if r.t_us > 240_000]
    assert sum(o.state == RotorState.TRACKING for r in fine for o in r.rotors) > 500
    assert not any(np.isfinite(o.rpm_shaft) for r in coarse for o in r.rotors)
