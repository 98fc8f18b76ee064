# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Simulator ground truth: RPM schedules, shaft angle, homographies, scenario layout."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from helixtrack_ros.sim import (
    SCENARIOS,
    CameraMotion,
    RpmSchedule,
    make_scenario,
    q_from_homography,
    q_homography,
)


def _check_derivative(sched: RpmSchedule, t_us: np.ndarray) -> None:
    h = 2.0  # us; central difference of the closed-form angle
    d = (sched.shaft_angle(t_us + h) - sched.shaft_angle(t_us - h)) / (2 * h * 1e-6)
    rpm_num = d * 60.0 / (2.0 * math.pi)
    np.testing.assert_allclose(rpm_num, sched.rpm(t_us), rtol=1e-6, atol=0.05)


def test_shaft_angle_is_the_integral_of_rpm_for_every_scenario():
    t = np.linspace(3.0, 1.999e6, 777)
    for name in SCENARIOS:
        scene = make_scenario(name, duration_s=2.0, seed=5)
        for rotor in scene.rotors:
            _check_derivative(rotor.schedule, t)
            theta0 = rotor.schedule.theta0_rad
            assert rotor.shaft_angle(np.array([0.0]))[0] == pytest.approx(theta0, abs=1e-12)
            # the angle is increasing (RPM >= 0), whatever the rotation direction
            assert np.all(np.diff(rotor.shaft_angle(t)) > 0)


@settings(max_examples=40, deadline=None)
@given(knots=st.lists(st.floats(500, 16_000), min_size=1, max_size=6),
       gaps=st.lists(st.floats(1e3, 4e5), min_size=6, max_size=6),
       amp=st.floats(0, 400), freq=st.floats(0.1, 40), theta0=st.floats(-10, 10))
def test_piecewise_plus_sines_integrates_exactly(knots, gaps, amp, freq, theta0):
    t_knots = np.concatenate([[-2e4], -2e4 + np.cumsum(gaps[:len(knots) - 1])])
    sched = RpmSchedule(tuple(t_knots), tuple(knots), (amp,), (freq,), (0.7,), theta0)
    t = np.linspace(-3e4, 2.5e6, 301)
    _check_derivative(sched, t)
    assert sched.shaft_angle(np.zeros(1))[0] == pytest.approx(theta0, abs=1e-9)


def test_spiral_sweep_stays_between_30_and_80_percent():
    rng = np.random.default_rng(2)
    for _ in range(20):
        rpm_max = rng.uniform(12_000, 16_000)
        sched = RpmSchedule.spiral_sweep(rpm_max, rng)
        rpm = sched.rpm(np.linspace(0, 60e6, 20_001))
        assert rpm.min() >= 0.30 * rpm_max - 1e-6 and rpm.max() <= 0.80 * rpm_max + 1e-6
        assert rpm.max() - rpm.min() > 0.3 * rpm_max  # really sweeps


def test_named_rpm_regimes():
    t = np.linspace(0, 1e6, 101)
    assert np.allclose(make_scenario('lone_constant').rotors[0].rpm_shaft(t), 10_000.0)
    low = make_scenario('low_rpm').rotors[0].rpm_shaft(t)
    assert 1_200 < low.min() and low.max() < 1_500
    ramp = make_scenario('lone_ramp', duration_s=3.0).rotors[0].rpm_shaft(
        np.linspace(0, 3e6, 301))
    assert ramp.min() < 3_500 and ramp.max() > 14_500
    for name in ('quadcopter_2m', 'quadcopter_4m'):
        for r in make_scenario(name, seed=9).rotors:
            rpm = r.rpm_shaft(np.linspace(0, 20e6, 2001))
            assert 900 <= rpm.min() and rpm.max() <= 16_000


def test_homography_at_zero_is_the_q_model_and_moves_with_the_camera():
    scene = make_scenario('quadcopter_2m', duration_s=1.0, ego_level=5, seed=1)
    assert np.allclose(scene.camera.matrix(np.zeros(1))[0], np.eye(3))
    for r in scene.rotors:
        h0 = q_homography(r.radius_px, r.psi_rad, *r.center_px, *r.perspective)
        assert np.allclose(r.homography(np.zeros(1))[0], h0)
        q = q_from_homography(h0)
        assert q['s'] == pytest.approx(r.radius_px) and q['psi'] == pytest.approx(r.psi_rad)
        h = r.homography(np.array([0.0, 3e5, 6e5]))
        assert h.shape == (3, 3, 3) and np.allclose(h[:, 2, 2], 1.0)
        centers = h[:, :2, 2]
        assert np.ptp(centers, axis=0).max() > 0.5  # the camera moved the rotor
    p = scene.initial_rotor_params(0)
    assert [d['name'] for d in p] == ['front_left', 'front_right', 'rear_left', 'rear_right']
    for d, r in zip(p, scene.rotors, strict=True):
        assert d['center_px'] == pytest.approx(list(r.center_px))
        assert d['radius_px'] == pytest.approx(r.radius_px)
        assert d['rpm'] == pytest.approx(float(r.rpm_shaft(np.zeros(1))[0]))
        assert d['perspective'] == pytest.approx(list(r.perspective))
        assert d['blades'] == r.blades and d['direction'] == r.direction


def test_ground_truth_dict_is_consistent():
    scene = make_scenario('lone_sweep', duration_s=0.5, seed=3)
    t = np.array([0.0, 1e5, 4e5])
    gt = scene.ground_truth(t)
    r = scene.rotors[0]
    assert set(gt) == {r.name}
    assert np.allclose(gt[r.name]['rpm'], r.rpm_shaft(t))
    assert np.allclose(gt[r.name]['shaft_angle_rad'], r.shaft_angle(t))
    assert gt[r.name]['H'].shape == (3, 3, 3)


@pytest.mark.parametrize('name,lo,hi', [('quadcopter_2m', 85, 115), ('quadcopter_4m', 42, 58)])
def test_quadcopter_layout(name, lo, hi):
    for seed in range(4):
        scene = make_scenario(name, seed=seed)
        rot = {r.name: r for r in scene.rotors}
        assert set(rot) == {'front_left', 'front_right', 'rear_left', 'rear_right'}
        for r in scene.rotors:
            assert lo <= r.radius_px <= hi and r.blades == 2
            assert 0.0 < math.hypot(*r.perspective) < 0.05
        # diagonal pairs turn the same way, neighbours the opposite way
        assert rot['front_left'].direction == rot['rear_right'].direction
        assert rot['front_right'].direction == rot['rear_left'].direction
        assert rot['front_left'].direction == -rot['front_right'].direction
        # close together: tip-to-tip gaps of a fraction of a radius, no overlap
        names = list(rot)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                ra, rb = rot[a], rot[b]
                gap = math.dist(ra.center_px, rb.center_px) - ra.radius_px - rb.radius_px
                assert gap > 0.0
        fl, fr = rot['front_left'], rot['front_right']
        gap = math.dist(fl.center_px, fr.center_px) - fl.radius_px - fr.radius_px
        assert gap < 0.6 * fl.radius_px
        # each rotor its own sweep
        rpms = [r.rpm_shaft(np.array([0.0]))[0] for r in scene.rotors]
        assert len(set(np.round(rpms))) == 4


def test_scenarios_are_reproducible_and_seed_dependent():
    a = make_scenario('quadcopter', seed=1)
    b = make_scenario('quadcopter', seed=1)
    c = make_scenario('quadcopter', seed=2)
    assert a.ego_level == 2 and len(a.rotors) == 4
    assert a.initial_rotor_params() == b.initial_rotor_params()
    assert a.initial_rotor_params() != c.initial_rotor_params()
    assert np.array_equal(a.edges.xy, b.edges.xy)
    assert make_scenario('background_only').rotors == []
    with pytest.raises(ValueError):
        make_scenario('nope')
    with pytest.raises(ValueError):
        make_scenario('lone_constant', ego_level=8)
    with pytest.raises(ValueError):
        make_scenario('lone_constant', duration_s=0)


def test_camera_motion_grows_with_level():
    speeds = []
    for level in range(8):
        cam = CameraMotion.generate(level, 2_000_000, np.random.default_rng(0))
        t = np.arange(0, 2e6, 1e3)
        xy = cam.matrix(t)[:, :2, 2]
        speeds.append(np.mean(np.hypot(*np.diff(xy, axis=0).T)) / 1e-3)
    assert speeds[0] == 0.0
    assert all(b > a for a, b in zip(speeds, speeds[1:], strict=False))
    assert speeds[7] > 500.0
