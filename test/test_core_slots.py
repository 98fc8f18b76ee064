# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Slot tables (core.slots): indices in declaration order, packers from the same declaration."""

import math

import numpy as np
import pytest

from helixtrack_ros.core import gn_layout, health, tracker_layout
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.slots import Slots


def test_slots_are_given_out_in_order_and_packed_from_their_fills():
    table = Slots('demo')
    a = table.slot('kappa')
    b = table.slot(width=3)
    c = table.slot(lambda p, k: p.q_jerk * k)
    d = table.slot(-1.0, width=2)
    with pytest.raises(RuntimeError, match='before close'):
        table.pack(TrackerParams(), 2.0)
    n = table.close()
    assert (a, b, c, d, n) == (0, 1, 4, 5, 7)
    with pytest.raises(RuntimeError, match='after close'):
        table.slot()
    v = table.pack(TrackerParams(kappa=3.0, q_jerk=5.0), 2.0)
    assert v.tolist() == [3.0, 0.0, 0.0, 0.0, 10.0, -1.0, -1.0]
    assert table.pack(TrackerParams(), 1.0, dtype=np.int64).dtype == np.int64


def _constants(module, prefix):
    return {k: v for k, v in vars(module).items() if k.startswith(prefix) and k != prefix + 'LEN'}


@pytest.mark.parametrize('module, prefix', [
    (tracker_layout, 'FS_'), (tracker_layout, 'IS_'), (tracker_layout, 'TP_'),
    (tracker_layout, 'OUT_'), (gn_layout, 'G_'), (gn_layout, 'ACC_'), (health, 'HP_'),
    (health, 'HS_'), (health, 'HI_')])
def test_every_table_is_contiguous_with_distinct_slots(module, prefix):
    """The generated constants of a table are distinct and inside its length."""
    slots = _constants(module, prefix)
    length = getattr(module, prefix + 'LEN')
    assert len(set(slots.values())) == len(slots)
    assert min(slots.values()) == 0 and max(slots.values()) < length


def test_packers_fill_the_named_slots():
    p = TrackerParams(kappa=11.0, gn_damping=0.25, health_window_us=4000, gate_scale_rel=1.0)
    rotor = RotorInit('r', (10.0, 20.0), 30.0, 6000.0, 3, -1, rpm_range=(50.0, 900.0))
    tp = tracker_layout.pack_tracker_params(p, rotor, 1234)
    assert tp.shape == (tracker_layout.TP_LEN,)
    assert tp[tracker_layout.TP_B] == 3 and tp[tracker_layout.TP_KAPPA] == 11.0
    assert tp[tracker_layout.TP_GNTARGET] == 1234
    assert tp[tracker_layout.TP_OMEGA0] == 6000.0 * 2.0 * math.pi / 60.0 * 3
    gp = gn_layout.pack_gn_params(p, 3, -1)
    assert gp[gn_layout.G_ZETA] == -1.0 and gp[gn_layout.G_DAMP] == 0.25
    assert gp[gn_layout.G_FIXT] == 0.0
    hp = health.pack_health_params(p, 3, rotor.rpm_range)
    assert (hp[health.HP_RPM_MIN], hp[health.HP_RPM_MAX]) == (50.0, 900.0)
    assert hp[health.HP_WIN] == 4000 and hp[health.HP_SCALE_GATE] == math.log(2.0)
    fs, ist = tracker_layout.new_tracker_state(p, rotor)
    assert fs[tracker_layout.FS_P11] == p.p0_omega_rad2_s2 and ist.dtype == np.int64
    assert ist[tracker_layout.IS_T] == -1 and ist[tracker_layout.IS_ZETA] == -1
    hs, hi = health.new_health_state()
    assert math.isnan(hs[health.HS_COH]) and hs[health.HS_GATE_T] == -1.0
    assert hi[health.HI_LEVEL] == health.DEGRADED and hi[health.HI_T0] == -1
