# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A rotor's first slow references are learnt only from windows that show a phase lock.

Found by the scene review (quadcopter_4m, 640 x 480, egomotion 6, seed 8): front_right
was re-detected in the right place, its phase locked on a rate 9 % high and its pose
walked 1.8 tip radii toward its neighbour. Its windows read a tip coherence of 0.05-0.33
and a spill of 0.55-0.63; with no reference yet only the absolute limits judged them
(coherence 0.1, spill 0.6), a window of 0.11 / 0.56 became the reference, the next ones
passed relative to it, and 5 values +9.3-9.5 % off were published as TRACKING. While
its references are the running mean of its first good windows, a window now needs a
coherence of health_coherence_seed (0.5).

Found by the first-lock review (quadcopter_2m, 346 x 260, egomotion 5, seed 4):
front_left's first references read a spill of 0.54 while its pose still converged, the
next windows passed relative to them, and 8 values +2.0-2.4 % off were published. A
window seeding the references now needs a spill of at most health_spill_seed (0.45).
"""

import math

import numpy as np

from helixtrack_ros.core.health import (
    DEGRADED,
    HI_LEVEL,
    HI_NOUT,
    HI_NTIP,
    HI_T0,
    HP_WIN,
    HS_COH_REF,
    HS_COS,
    HS_NREF,
    HS_SPILL_REF,
    HS_W,
    LOST,
    TRACKING,
    new_health_state,
    pack_health_params,
)
from helixtrack_ros.core.health_machine import _health_close
from helixtrack_ros.core.params import TrackerParams

Q = np.array([math.log(50.0), 0.0, 400.0, 300.0, 0.0, 0.0])
#: a 2-blade rotor at 8,000 RPM: the B-fold phase rate [rad/s]
OMEGA = 8000.0 * 2.0 * math.pi / 60.0 * 2


#: EKF update weight of a window of a followed rotor (80 per ms)
FOLLOWED_WEIGHT = 400.0

def _run(coherences: list[float], params: TrackerParams | None = None,
         level: int = DEGRADED, spills: list[float] | None = None,
         ) -> tuple[list[int], np.ndarray]:
    """Levels after each health window of a just locked rotor (no references yet) whose
    windows have these tip coherences (100 tip-band events each) and spills (none if not
    given), and the final float health state."""
    hp = pack_health_params(params or TrackerParams(), 2)
    hs, hi = new_health_state()
    hi[HI_T0] = 0
    hi[HI_LEVEL] = level
    win = int(hp[HP_WIN])
    levels = []
    for k, coh in enumerate(coherences):
        hi[HI_NTIP] += 100
        if spills is not None:
            hi[HI_NOUT] += round(100 * spills[k] / (1.0 - spills[k]))
        hs[HS_COS] += 100.0 * coh
        hs[HS_W] += FOLLOWED_WEIGHT      # a followed phase filter: its rate is measured
        _health_close(hp, hs, hi, Q, True, OMEGA, 1.0, 50 * (k + 1), (k + 1) * win)
        levels.append(int(hi[HI_LEVEL]))
    return levels, hs


def test_windows_without_a_phase_lock_do_not_seed_the_references():
    levels, hs = _run([0.2] * 12)
    assert TRACKING not in levels
    assert levels[-1] == LOST                 # bad for health_lost_us: re-detected
    assert hs[HS_NREF] == 0


def test_without_the_rule_such_windows_are_published():
    levels, hs = _run([0.2] * 12, TrackerParams(health_coherence_seed=-1.0))
    assert levels[-1] == TRACKING
    assert abs(hs[HS_COH_REF] - 0.2) < 1e-9        # the reference is that of no lock


def test_a_locked_rotor_seeds_its_references_and_tracks():
    levels, hs = _run([0.2] + [0.95] * 8)
    assert levels[0] == DEGRADED
    # the window of no lock, one whose change of acceleration is not known yet, then 10 ms
    # of good windows
    assert levels.index(TRACKING) + 1 == 1 + 1 + 2
    assert abs(hs[HS_COH_REF] - 0.95) < 1e-9      # not the 0.2 of the first window


def test_the_windows_averaged_into_the_first_references_need_a_lock_too():
    """A seed of 0.6, then windows of 0.4: relative to the seed they would pass (above
    health_coherence_rel 0.35 of it) and drag the running mean down; they are bad."""
    levels, hs = _run([0.6] * 3 + [0.4] * 8)
    assert TRACKING not in levels
    assert levels[-1] == LOST
    levels, _ = _run([0.6] * 3 + [0.4] * 8, TrackerParams(health_coherence_seed=-1.0))
    assert levels[-1] == TRACKING


def test_a_rotor_with_references_is_judged_relative_to_them():
    """The seed level applies before the first reference only: a tracked rotor whose
    coherence falls to 0.4 (more than health_coherence_rel 0.35 of its 0.95) stays
    TRACKING."""
    levels, _ = _run([0.95] * 6 + [0.4] * 4)
    assert levels[5] == TRACKING
    assert levels[-1] == TRACKING


def test_windows_of_a_pose_off_the_tips_do_not_seed_the_references():
    """Locked (coherence 0.9) but half the tip-band events just outside the tips: bad while
    no reference exists (the absolute limit health_spill_max, 0.6, lets it pass)."""
    levels, hs = _run([0.9] * 12, spills=[0.5] * 12)
    assert TRACKING not in levels and levels[-1] == LOST and hs[HS_NREF] == 0
    levels, hs = _run([0.9] * 12, TrackerParams(health_spill_seed=1.0), spills=[0.5] * 12)
    assert levels[-1] == TRACKING and abs(hs[HS_SPILL_REF] - 0.5) < 1e-9


def test_the_windows_averaged_into_the_first_references_need_the_pose_on_the_tips_too():
    """Two seeds of spill 0.4, then windows of 0.5: relative to the seeds they would pass
    (within health_spill_rel 0.25, under health_spill_max 0.6) and drag the running mean
    up; they are bad. A rotor whose spill rises from 0.1 to 0.3 is TRACKING."""
    levels, _ = _run([0.9] * 10, spills=[0.4] * 2 + [0.5] * 8)
    assert TRACKING not in levels
    levels, _ = _run([0.9] * 10, TrackerParams(health_spill_seed=1.0),
                     spills=[0.4] * 2 + [0.5] * 8)
    assert levels[-1] == TRACKING
    levels, _ = _run([0.9] * 10, spills=[0.1] * 2 + [0.3] * 8)
    assert levels[-1] == TRACKING
