# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Induced losses in the simulator: a hidden rotor, an instant image jump."""

import numpy as np
import pytest

from helixtrack_ros.sim import Simulator, make_scenario


def _disc(ev, center, radius, t0, t1):
    m = (ev.t_us >= t0) & (ev.t_us < t1) & (np.hypot(ev.x - center[0], ev.y - center[1])
                                            < 0.9 * radius)
    return int(m.sum())


@pytest.fixture(scope='module')
def plain_and_lossy():
    plain = Simulator(make_scenario('quadcopter_4m', 0.2, 2, seed=3), seed=3).all_events()
    scene = make_scenario('quadcopter_4m', 0.2, 2, seed=3,
                          hide_rotor=('rear_left', 0.05, 0.1),
                          jump=('front_right', 0.15, 0.3, -0.2))
    return plain, scene, Simulator(scene, seed=3).all_events()


def test_losses_leave_everything_before_them_unchanged(plain_and_lossy):
    plain, _, lossy = plain_and_lossy
    k = int(np.searchsorted(plain.t_us, 50_000))
    assert k == int(np.searchsorted(lossy.t_us, 50_000))
    for a, b in zip(plain, lossy):
        np.testing.assert_array_equal(a[:k], b[:k])
    # and without options a scene is the plain scenario
    again = make_scenario('quadcopter_4m', 0.2, 2, seed=3, hide_rotor=None, jump=None)
    assert all(np.isinf(r.jump_us) and r.hidden_us == () for r in again.rotors)


def test_hidden_rotor_emits_nothing(plain_and_lossy):
    plain, scene, lossy = plain_and_lossy
    r = scene.rotor('rear_left')
    c = r.homography(np.array([75_000]))[0][:2, 2]
    n_plain = _disc(plain, c, r.radius_px, 50_000, 100_000)
    assert n_plain > 10_000
    assert _disc(lossy, c, r.radius_px, 50_000, 100_000) < 0.1 * n_plain   # background only
    assert _disc(lossy, c, r.radius_px, 100_000, 150_000) > 10_000
    # the ground truth does not change
    gt = scene.ground_truth(np.array([75_000]))['rear_left']
    assert gt['rpm'][0] > 0


def test_jump_moves_the_image_and_the_ground_truth(plain_and_lossy):
    plain, scene, lossy = plain_and_lossy
    r = scene.rotor('front_right')
    before, after = r.homography(np.array([149_999, 150_000]))
    shift = after[:2, 2] - before[:2, 2]
    np.testing.assert_allclose(shift, [0.3 * r.radius_px, -0.2 * r.radius_px], atol=0.5)
    # rotor events follow the jump: just beyond the old tip circle, inside the new one
    u = shift / np.hypot(*shift)
    probe = before[:2, 2] + 1.1 * r.radius_px * u
    new = _disc(lossy, probe, r.radius_px * 0.15, 160_000, 200_000)
    assert new > 5 * _disc(plain, probe, r.radius_px * 0.15, 160_000, 200_000)


def test_bad_loss_options_are_refused():
    with pytest.raises(ValueError, match='no rotor'):
        make_scenario('lone_constant', 0.1, hide_rotor=('front_left', 0.0, 0.05))
    with pytest.raises(ValueError, match='t0_s < t1_s'):
        make_scenario('lone_constant', 0.1, hide_rotor=('rotor', 0.05, 0.0))
    with pytest.raises(ValueError, match='jump'):
        make_scenario('lone_constant', 0.1, jump=('rotor', 0.05, 0.3))
    with pytest.raises(ValueError, match='one jump per rotor'):
        make_scenario('lone_constant', 0.1, jump=[('rotor', 0.05, 0.3, 0.0),
                                                  ('rotor', 0.07, 0.3, 0.0)])
    two = make_scenario('lone_constant', 0.1, hide_rotor=[('rotor', 0.01, 0.02),
                                                          ('rotor', 0.05, 0.06)])
    assert two.rotors[0].hidden_us == ((10_000.0, 20_000.0), (50_000.0, 60_000.0))
