# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A re-validating rotor turns TRACKING only on windows whose rate the events measured.

Found by the live review (quadcopter_2m, 346 x 260, egomotion 6, seed 16): behind real
time, at an event stride of 3-5, a re-locked rotor whose phase filter hardly updated
(2-10 update weight per ms, ~110 while followed) coasted 5-15 % off. Its rate did not
change, so the settle test read it settled; the lag and drift tests had too little
weight to judge; its usual coherence and support were learnt from those same windows.
It was published TRACKING for 5 ms, 1.5-15 % off. A re-validating window now counts as
good only when its mean phase residual is known well enough to show a lag at the drift
bound ('rate unverified' otherwise).
"""

import numpy as np
from test_health_evidence import OM, Q
from test_health_evidence import _tracking as _settled

from helixtrack_ros.core.health import (
    DEGRADED,
    HI_CAUSE,
    HI_LEVEL,
    HI_NTIP,
    HP_WIN,
    HS_COS,
    HS_EPS,
    HS_EPS2,
    HS_NREF,
    HS_W,
    R_UNVERIFIED,
    TRACKING,
)
from helixtrack_ros.core.health_machine import _health_close
from helixtrack_ros.core.health_text import reason_text
from helixtrack_ros.core.params import TrackerParams


def _relocked(params=None):
    """A rotor just re-locked: DEGRADED, no references yet (learnt from its windows)."""
    hp, hs, hi = _settled(params)
    hi[HI_LEVEL] = DEGRADED
    hs[HS_NREF] = 0.0
    return hp, hs, hi


def _window(hp, hs, hi, k, weight, rng, sd=0.25):
    """Window k: coherent tip events, a steady rate, EKF updates of this total weight
    (residuals of spread ``sd`` about 0, in updates of weight 0.5)."""
    win = int(hp[HP_WIN])
    hi[HI_NTIP] += 100
    hs[HS_COS] += 95.0
    eps = rng.normal(0.0, sd, max(int(weight / 0.5), 1))
    hs[HS_W] += 0.5 * eps.size
    hs[HS_EPS] += 0.5 * eps.sum()
    hs[HS_EPS2] += 0.5 * (eps * eps).sum()
    _health_close(hp, hs, hi, Q, True, OM, 1.0, 50 * (k + 1), (k + 1) * win)


def test_a_relocked_rotor_on_few_updates_is_not_published():
    """8 update weight per ms (a coasting filter at stride 3): never TRACKING, and why."""
    rng = np.random.default_rng(1)
    hp, hs, hi = _relocked()
    for k in range(12):
        _window(hp, hs, hi, k, 40.0, rng)
        assert hi[HI_LEVEL] != TRACKING
    assert hi[HI_CAUSE] == R_UNVERIFIED
    assert reason_text(hi, hs).startswith("rate unverified: a window's mean phase residual "
                                          'known to 0.0')


def test_a_relocked_rotor_measured_at_stride_5_is_published():
    """A followed rotor at stride 5 (~60 weight per ms, scatter 0.1 rad) re-validates."""
    rng = np.random.default_rng(2)
    hp, hs, hi = _relocked()
    for k in range(4):
        _window(hp, hs, hi, k, 300.0, rng, sd=0.1)
    assert hi[HI_LEVEL] == TRACKING


def test_the_rule_is_off_with_the_drift_rule():
    rng = np.random.default_rng(3)
    hp, hs, hi = _relocked(TrackerParams(health_phase_drift=0.0))
    for k in range(4):
        _window(hp, hs, hi, k, 40.0, rng)
    assert hi[HI_LEVEL] == TRACKING
