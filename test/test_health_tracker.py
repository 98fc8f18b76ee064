# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Tracker health: TRACKING / DEGRADED / LOST with a reason, from the events alone."""

import numpy as np
import pytest
from reference.synthetic_rotor import make_rotor_events

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.health import (
    DEGRADED,
    HI_LEVEL,
    HI_LOSSES,
    HS_CAUSE_REF,
    HS_CAUSE_VAL,
    LOST,
    R_INCOHERENT,
    TRACKING,
    new_health_state,
)
from helixtrack_ros.core.health_text import reason_text
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.tracker import HelixTracker

CX, CY, RAD = 320.0, 240.0, 50.0
T0 = 1_000_000


@pytest.fixture(scope='module')
def stream():
    ev, _ = make_rotor_events(0.4, 8000.0, radius_px=RAD, center_px=(CX, CY), seed=5,
                              t0_us=T0)
    return ev


def _rotor():
    return RotorInit('a', (CX, CY), RAD, 8000.0, 2, 1)


def _feed_ms(tracker, ev, t_from_us, t_to_us, edit=None):
    """Feed 1 ms batches in [t_from, t_to) and return (t, health, reason) after each."""
    out = []
    for t in range(t_from_us, t_to_us, 1000):
        a, b = np.searchsorted(ev.t_us, [t, t + 1000])
        part = ev.slice(int(a), int(b))
        if edit is not None:
            part = edit(part, t)
        tracker.process(part)
        tracker.advance(t + 1000)
        out.append((t + 1000, tracker.health, tracker.health_reason))
    return out


def test_clean_rotor_tracks_and_the_state_says_so(stream):
    tr = HelixTracker(_rotor())
    assert (tr.health, tr.health_reason) == (DEGRADED, 'acquiring phase lock')
    trace = _feed_ms(tr, stream, T0, T0 + 300_000)
    # TRACKING soon after the phase lock and for good
    first = next(t for t, h, _ in trace if h == TRACKING)
    assert first - T0 <= 30_000
    assert all(h == TRACKING for t, h, _ in trace if t >= first)
    st = tr.state
    assert (st.health, st.health_reason) == (TRACKING, 'tracking')
    vals = tr.health_values()
    assert vals['health'] == 'TRACKING' and float(vals['tip_coherence']) > 0.8
    assert float(vals['tip_spill']) < 0.1


def test_hidden_rotor_is_starved_then_lost_then_tracked_again(stream):
    tr = HelixTracker(_rotor())
    _feed_ms(tr, stream, T0, T0 + 150_000)
    assert tr.health == TRACKING

    def hide(part, t):
        return EventArrays.empty() if T0 + 150_000 <= t < T0 + 250_000 else part

    trace = _feed_ms(tr, stream, T0 + 150_000, T0 + 400_000, hide)
    lost = [(t, r) for t, h, r in trace if h == LOST]
    assert lost and lost[0][0] - (T0 + 150_000) <= 30_000
    assert lost[0][1].startswith('lost: starved')
    back = next(t for t, h, _ in trace if t > T0 + 250_000 and h == TRACKING)
    assert back - (T0 + 250_000) <= 40_000
    assert tr.hi[HI_LOSSES] == 1       # one loss counted


def test_image_jump_is_reported_as_a_pose_error(stream):
    tr = HelixTracker(_rotor())
    _feed_ms(tr, stream, T0, T0 + 150_000)

    def jump(part, t):
        # the rotor's image jumps by 0.9 tip radii at 150 ms
        return EventArrays(part.t_us, (part.x.astype(np.int64) + int(0.9 * RAD)).astype(
            np.uint16), part.y, part.p)

    trace = _feed_ms(tr, stream, T0 + 150_000, T0 + 200_000, jump)
    bad = [(t, h, r) for t, h, r in trace if h != TRACKING]
    assert bad and bad[0][0] - (T0 + 150_000) <= 10_000
    assert any(h == LOST for _, h, _ in bad)
    assert all(('pose off' in r or 'phase incoherent' in r) for _, _, r in bad)


def test_health_does_not_depend_on_batch_splits(stream):
    ev = stream.slice(0, 600_000)
    whole = HelixTracker(_rotor())
    whole.process(ev)
    parts = HelixTracker(_rotor())
    rng = np.random.default_rng(1)
    cuts = np.unique(np.r_[0, rng.integers(0, len(ev), 30), len(ev)])
    for a, b in zip(cuts[:-1], cuts[1:]):
        parts.process(ev.slice(int(a), int(b)))
    np.testing.assert_array_equal(parts.hi, whole.hi)
    np.testing.assert_array_equal(parts.hs, whole.hs)
    assert whole.health == TRACKING


def test_advance_closes_windows_without_events(stream):
    tr = HelixTracker(_rotor())
    tr.advance(T0)                       # nothing seen yet: no effect
    assert tr.health == DEGRADED
    _feed_ms(tr, stream, T0, T0 + 100_000)
    assert tr.health == TRACKING
    tr.advance(T0 + 160_000)             # 60 ms without an event
    assert tr.health == LOST and 'starved' in tr.health_reason
    tr.reset(_rotor())
    assert (tr.health, tr.health_reason) == (DEGRADED, 'acquiring phase lock')


def test_health_parameters_are_validated_and_texts_are_readable():
    with pytest.raises(ValueError, match='health_window_us'):
        TrackerParams(health_window_us=10)
    hs, hi = new_health_state()
    hi[HI_LEVEL], hi[1], hi[2] = LOST, R_INCOHERENT, R_INCOHERENT
    hs[HS_CAUSE_VAL], hs[HS_CAUSE_REF] = 0.05, 0.9
    assert reason_text(hi, hs) == 'lost: phase incoherent: tip coherence 0.05 (usual 0.90)'
