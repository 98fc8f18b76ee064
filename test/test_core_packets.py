# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""HelixTracker.process_packets (route + track many packets in one call) against its twin."""

import numpy as np
import pytest
from reference.naive_packets import process_packets_naive

from helixtrack_ros.codecs.evt3_encoder import packetize
from helixtrack_ros.core.health import HI_CAUSE, HI_LEVEL, LOST
from helixtrack_ros.core.tracker import HelixTracker
from helixtrack_ros.core.tracker_layout import OUT_RPM, PK_BOX, PK_N
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.sim import Simulator, make_scenario


@pytest.fixture(scope='module')
def quad():
    scene = make_scenario('quadcopter_4m', 0.25, 2, seed=3)
    ev = Simulator(scene, seed=3).all_events()
    cuts = np.array([stop for _, stop in packetize(ev.t_us, 1000)], np.int64)
    t_last = ev.t_us[cuts - 1]
    return scene, ev, cuts, t_last


def _rows(run):
    return [(run.rpm_shaft[k], run.phase_rad[k], run.omega_rad_s[k], int(run.events[k]),
             tuple(int(b) for b in run.boxes[k]), int(run.levels[k]))
            for k in range(run.done)]


def test_packet_run_names_its_columns():
    """The named accessors of a PacketRun read the kernel's PK_* / OUT_* / HI_* columns."""
    scene = make_scenario('lone_constant', 0.05, seed=2)
    ev = Simulator(scene, seed=2).all_events()
    cuts = np.array([stop for _, stop in packetize(ev.t_us, 1000)], np.int64)
    tr = HelixTracker(rotor_inits_from_scene(scene)[0])
    run = tr.process_packets(ev, cuts, ev.t_us[cuts - 1])
    v = run.values
    assert np.array_equal(run.rpm_shaft, v[:, OUT_RPM]) and run.q.shape == (run.done, 6)
    assert np.array_equal(run.q_core[-1], tr.q) and np.array_equal(run.events, v[:, PK_N])
    assert np.array_equal(run.boxes, v[:, PK_BOX:PK_BOX + 4])
    assert np.array_equal(run.levels, run.health_int[:, HI_LEVEL])
    assert np.array_equal(run.causes, run.health_int[:, HI_CAUSE])
    assert run.levels[-1] == tr.health and run.causes[-1] == tr.health_cause
    assert run.reason(run.done - 1) == tr.health_reason
    assert run.direction[-1] == tr.direction and run.rpm_ekf[-1] == tr.rpm_shaft
    c = run.columns()
    assert c.rpm_shaft == run.rpm_shaft.tolist() and c.tx == run.q[:, 2].tolist()
    assert c.log_s == run.q_core[:, 0].tolist() and c.y1 == run.boxes[:, 3].tolist()
    assert c.level == run.levels.tolist() and c.cause == run.causes.tolist()


@pytest.mark.parametrize('stride', [1, 3])
@pytest.mark.parametrize('batch', [1, 7, 1000])
def test_batches_equal_the_naive_packet_loop_bit_for_bit(quad, stride, batch):
    scene, ev, cuts, t_last = quad
    for init in rotor_inits_from_scene(scene):
        a = HelixTracker(init)
        b = HelixTracker(init)
        ref = process_packets_naive(a, ev, cuts, t_last, stride)
        got = []
        for k in range(0, len(cuts), batch):
            e0 = int(cuts[k - 1]) if k else 0
            run = b.process_packets(ev.slice(e0, int(cuts[min(k + batch, len(cuts)) - 1])),
                                    cuts[k:k + batch] - e0, t_last[k:k + batch], stride)
            assert run.done == len(cuts[k:k + batch])
            got += _rows(run)
        assert got == ref, init.name
        assert np.array_equal(a.q, b.q) and np.array_equal(a.fs, b.fs)


def test_stops_after_the_packet_that_loses_the_rotor():
    scene = make_scenario('lone_constant', 0.4, seed=2, hide_rotor=('rotor', 0.1, 0.4))
    ev = Simulator(scene, seed=2).all_events()
    cuts = np.array([stop for _, stop in packetize(ev.t_us, 1000)], np.int64)
    t_last = ev.t_us[cuts - 1]
    init = rotor_inits_from_scene(scene)[0]
    ref = process_packets_naive(HelixTracker(init), ev, cuts, t_last)
    run = HelixTracker(init).process_packets(ev, cuts, t_last)
    assert ref[-1][5] == LOST and run.done == len(ref) < len(cuts)
    assert _rows(run) == ref


def test_reset_deadline_stops_a_rotor_that_never_locks(quad):
    scene, ev, cuts, t_last = quad
    init = rotor_inits_from_scene(scene)[0]
    run = HelixTracker(init).process_packets(ev, cuts, t_last, reset_deadline_us=int(t_last[3]))
    # still acquiring (not TRACKING) when the deadline passes: stop there
    assert run.done == 5


def test_bad_arguments_are_refused(quad):
    scene, ev, cuts, t_last = quad
    tr = HelixTracker(rotor_inits_from_scene(scene)[0])
    with pytest.raises(ValueError, match='non-decreasing'):
        tr.process_packets(ev, cuts[::-1], t_last)
    with pytest.raises(ValueError, match='equal length'):
        tr.process_packets(ev, cuts, t_last[:-1])
    with pytest.raises(ValueError, match='stride'):
        tr.process_packets(ev, cuts, t_last, stride=0)
