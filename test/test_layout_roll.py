# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The layout's turn in the image, in the published RPM stds (pipeline/layout_roll.py)."""

import math

import numpy as np
import pytest

from helixtrack_ros.core.health import RotorState
from helixtrack_ros.pipeline.layout_roll import RPM_PER_RAD_S, LayoutRoll, _turn
from helixtrack_ros.pipeline.records import RotorOutput, withheld

STD_RPM = 3.0


def _layout(t_us: int, angle: float, shift=(0.0, 0.0), scale: float = 1.0,
            states=None) -> list[list[RotorOutput]]:
    """One packet of four rotors on a square of 200 px radius turned by ``angle``."""
    per_rotor = []
    for r in range(4):
        a = angle + r * math.pi / 2
        H = np.eye(3)
        H[0, 2] = 640 + shift[0] + scale * 200 * math.cos(a)
        H[1, 2] = 360 + shift[1] + scale * 200 * math.sin(a)
        H *= 2.0                       # (a homography is known up to scale)
        o = RotorOutput(f'r{r}', t_us, 0.0, 600.0, 6000.0, STD_RPM, H, 100)
        if states is not None and states[r] != RotorState.TRACKING:
            o = withheld(o.name, t_us, 100, 1, 'lost', 3, states[r], 0)
        per_rotor.append([o])
    return per_rotor


def _run(roll: LayoutRoll, angle_of_t, n: int = 300, **kw) -> list[list[RotorOutput]]:
    last = None
    for k in range(n):
        last = _layout(1000 * k, angle_of_t(k * 1e-3), **kw)
        roll.widen(last)
    return last


def test_a_layout_turning_at_a_steady_rate_widens_every_std_by_that_rate():
    roll = LayoutRoll()
    last = _run(roll, lambda t: 2.0 * t)              # 2 rad/s
    assert roll.rms_rad_s == pytest.approx(2.0, rel=1e-6)
    for (o,) in last:
        assert o.rpm_shaft_std == pytest.approx(math.hypot(STD_RPM, 2.0 * RPM_PER_RAD_S))


def test_moving_nearer_or_sideways_without_turning_widens_nothing():
    roll = LayoutRoll()
    last = _run(roll, lambda t: 0.3, shift=(50.0, -20.0), scale=1.0)
    assert roll.rms_rad_s == 0.0 and last[0][0].rpm_shaft_std == STD_RPM
    for k in range(300):                               # sliding and growing, no turn
        roll.widen(_layout(300_000 + 1000 * k, 0.3, shift=(0.2 * k, 0.1 * k),
                           scale=1.0 + 0.001 * k))
    assert roll.rms_rad_s < 1e-9


def test_one_rotor_alone_keeps_its_filter_std_without_a_focal_length():
    roll = LayoutRoll()
    for k in range(100):
        outs = _layout(1000 * k, 3.0 * k * 1e-3)[:1]
        roll.widen(outs)
        assert outs[0][0].rpm_shaft_std == STD_RPM


FOCAL_PX = 1280.0


def test_a_still_rotor_alone_keeps_its_filter_std():
    roll = LayoutRoll()
    for k in range(200):
        outs = _layout(1000 * k, 0.4)[:1]
        roll.widen(outs, FOCAL_PX)
        assert outs[0][0].rpm_shaft_std == STD_RPM


def test_a_rotor_alone_sliding_across_the_image_widens_its_std_by_the_pan_rate():
    """One rotor's centre moving at v px/s: the camera is taken to turn at
    |v| / (sqrt(2) f) about its axis too (the turn a layout would show is unseen)."""
    roll = LayoutRoll()
    vx, vy = 300.0, -400.0                             # 500 px/s
    last = None
    for k in range(300):
        last = _layout(1000 * k, 0.4, shift=(vx * k * 1e-3, vy * k * 1e-3))[:1]
        roll.widen(last, FOCAL_PX)
    expect = 500.0 / (math.sqrt(2.0) * FOCAL_PX)
    assert roll.rms_rad_s == pytest.approx(expect, rel=1e-6)
    assert last[0][0].rpm_shaft_std == pytest.approx(math.hypot(STD_RPM,
                                                                expect * RPM_PER_RAD_S))


def test_a_rotor_left_alone_after_a_turn_goes_on_from_its_own_centre():
    """Three of four lost: the one left is followed from its own centre (a fresh fit,
    not the layout's angle), and its speed sets the std once the turn has faded."""
    roll = LayoutRoll()
    _run(roll, lambda t: 2.0 * t)
    lost = [RotorState.TRACKING] + [RotorState.LOST] * 3
    for k in range(300, 700):                          # standing still now
        outs = _layout(1000 * k, 0.6, states=lost)
        roll.widen(outs, FOCAL_PX)
    # the 2 rad/s seen fades as exp(-t / 2 RMS_TAU_US) in the RMS; a jump at the switch of
    # source (the angle and the centre in one fit) would stand far above that
    fade = 2.0 * math.exp(-0.4 / (2 * 0.05))
    assert roll.rms_rad_s < 1.05 * fade
    assert outs[0][0].rpm_shaft_std < math.hypot(STD_RPM, 1.05 * fade * RPM_PER_RAD_S)


def test_rotors_not_tracking_give_no_turn_and_keep_nan():
    """A rotor coming back elsewhere must not read as a turn of the layout: only rotors
    TRACKING in consecutive packets are compared."""
    roll = LayoutRoll()
    lost = [RotorState.TRACKING, RotorState.TRACKING, RotorState.LOST, RotorState.TRACKING]
    for k in range(100):
        outs = _layout(1000 * k, 0.0, states=lost)
        roll.widen(outs)
        assert math.isnan(outs[2][0].rpm_shaft_std)
    back = _layout(100_000, 0.0)
    back[2][0].homography[0, 2] += 300.0               # back 150 px off its old place
    roll.widen(back)
    assert roll.rms_rad_s == 0.0


def test_a_gap_or_a_step_back_in_time_starts_the_measure_again():
    roll = LayoutRoll()
    _run(roll, lambda t: 2.0 * t)
    roll.widen(_layout(200_000, 0.0))                  # 100 ms back: a restarted clock
    assert roll.rms_rad_s == 0.0
    _run(roll, lambda t: 2.0 * t, n=50)
    assert roll.rms_rad_s > 0.0
    roll.widen(_layout(10_000_000, 0.0))               # a 10 s gap
    assert roll.rms_rad_s == 0.0


def test_the_turn_equals_the_pairwise_one():
    """_turn forms no pair (n sum c b* - sum c (sum b)*); the naive twin does."""
    rng = np.random.default_rng(5)
    for n in (2, 3, 4, 6):
        b = rng.uniform(0, 1000, n) + 1j * rng.uniform(0, 700, n)
        c = b * np.exp(1j * rng.normal(0, 0.01)) + rng.normal(0, 2, n) + 1j * rng.normal(0, 2, n)
        pairs = sum((c[j] - c[i]) * np.conj(b[j] - b[i])
                    for i in range(n) for j in range(i + 1, n))
        got = _turn(dict(enumerate(b.tolist())), dict(enumerate(c.tolist())))
        assert got == pytest.approx(math.atan2(pairs.imag, pairs.real), abs=1e-12)
    assert _turn({0: 0j}, {0: 1j, 1: 2j}) is None      # one rotor in both packets


def test_the_decaying_fit_equals_a_weighted_least_squares_slope():
    """The fit's sums, moved to each new sample, against np.polyfit with the weights."""
    rng = np.random.default_rng(8)
    roll = LayoutRoll()
    t = np.cumsum(rng.uniform(0.0005, 0.002, 40))
    a = np.cumsum(rng.normal(0.0, 0.001, 40))
    for k in range(1, len(t)):
        got = roll._fit_step(t[k] - t[k - 1], a[k] - a[k - 1])
    w = np.exp(-(t[-1] - t[1:]) / 5e-3)
    ref = np.polyfit(t[1:], a[1:], 1, w=np.sqrt(w))[0]
    assert got == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize('bad', [0.0, math.nan, math.inf])
def test_a_centre_that_is_no_number_is_left_out(bad):
    """A TRACKING output whose homography gives no finite centre (h22 = 0, NaN or inf)
    must neither stop the batch nor make the std NaN: it gives no turn."""
    roll = LayoutRoll()
    _run(roll, lambda t: 2.0 * t, n=100)
    outs = _layout(100_000, 0.2)
    outs[1][0].homography[2, 2] = bad
    outs[1][0].homography[0, 2] = bad if bad else 5.0
    roll.widen(outs)
    assert all(math.isfinite(o.rpm_shaft_std) for (o,) in outs)
    assert roll.rms_rad_s == pytest.approx(2.0, rel=0.05)


def test_the_turn_seen_goes_once_no_two_rotors_are_tracked_for_a_while():
    """Found by review: with three of four rotors lost after a roll, the one left kept the
    last turn in its std for as long as packets came."""
    roll = LayoutRoll()
    _run(roll, lambda t: 2.0 * t)
    lost = [RotorState.TRACKING] + [RotorState.LOST] * 3
    stds = []
    for k in range(300, 500):
        outs = _layout(1000 * k, 2.0 * k * 1e-3, states=lost)
        roll.widen(outs)                              # (no focal length: no lone term)
        stds.append(outs[0][0].rpm_shaft_std)
    assert stds[0] > STD_RPM + 5.0                    # just lost: the turn seen is kept
    assert stds[-1] == STD_RPM and roll.rms_rad_s == 0.0


def test_the_first_rates_after_a_start_are_not_the_centres_noise():
    """Found by review: a slope from the first three samples, 0.25 ms apart, was mostly
    the centres' noise (42-54 RPM with no turn at all, 0.8 RPM later); a slope now needs
    samples spread over about RATE_TAU_US / 2."""
    rng = np.random.default_rng(11)
    roll = LayoutRoll()
    worst = 0.0
    for k in range(400):
        outs = _layout(250 * k, 0.0)[:2]
        for (o,) in outs:
            o.homography[:2, 2] += rng.normal(0.0, 0.2 * 2.0, 2)   # 0.2 px (H is doubled)
        roll.widen(outs)
        worst = max(worst, roll.rms_rad_s * RPM_PER_RAD_S)
    assert worst < 5.0
