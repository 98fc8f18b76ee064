# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Simulated events: where they are, their polarity, rates, determinism, streaming."""

import math

import numpy as np
import pytest

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.sim import Simulator, make_scenario


def _rotor_plane(rotor, ev: EventArrays) -> 'tuple[np.ndarray, np.ndarray]':
    h = rotor.homography(ev.t_us.astype(np.float64))
    z = np.stack([ev.x, ev.y, np.ones(len(ev))], axis=1).astype(np.float64)[:, :, None]
    u = np.linalg.solve(h, z)[:, :, 0]
    ux, uy = u[:, 0] / u[:, 2], u[:, 1] / u[:, 2]
    return np.hypot(ux, uy), np.arctan2(uy, ux)


def _edge_residual(rotor, t_us, r, beta, lead: bool) -> np.ndarray:
    """Angular distance (rad) of events to the nearest leading / trailing blade edge."""
    th = rotor.shaft_angle(t_us.astype(np.float64))
    half = 0.5 * rotor.blade_width_rad(r) * (1 if lead else -1)
    edge = rotor.direction * (th + rotor.blade_center_offset_rad(r) + half)
    per = 2 * math.pi / rotor.blades
    return np.abs((beta - edge + 0.5 * per) % per - 0.5 * per)


def _window(ev: EventArrays, t0: int, t1: int) -> EventArrays:
    i0, i1 = np.searchsorted(ev.t_us, [t0, t1])
    return ev.slice(int(i0), int(i1))


def test_event_container_and_bounds():
    scene = make_scenario('quadcopter_4m', duration_s=0.04, ego_level=3, seed=2)
    ev = Simulator(scene, seed=1).all_events()
    assert ev.t_us.dtype == np.int64 and ev.x.dtype == np.uint16
    assert ev.y.dtype == np.uint16 and ev.p.dtype == np.uint8
    assert len(ev) > 100_000
    assert np.all(np.diff(ev.t_us) >= 0)
    assert ev.t_us[0] >= 0 and ev.t_us[-1] < scene.duration_us
    assert ev.x.max() < scene.width and ev.y.max() < scene.height
    assert set(np.unique(ev.p)) == {0, 1}


@pytest.mark.parametrize('name,level', [('lone_constant', 0), ('lone_3blade', 2),
                                        ('quadcopter_2m', 6)])
def test_events_sit_on_blade_edges_with_edge_polarity(name, level):
    scene = make_scenario(name, duration_s=0.03, ego_level=level, seed=4)
    ev = _window(Simulator(scene, seed=2).all_events(), 20_000, 20_400)
    rotor = scene.rotors[0]
    r, beta = _rotor_plane(rotor, ev)
    band = (r > rotor.hub_radius + 0.05) & (r < 0.95)
    assert band.sum() > 2_000
    lead_pol = 1 if rotor.contrast > 0 else 0
    omega = float(rotor.rpm_shaft(np.array([2e4]))[0]) * 2 * math.pi / 60
    # jitter (~20 us) plus later events of a burst (refractory + gap) in angle
    tol = omega * 60e-6
    for pol, lead in ((lead_pol, True), (1 - lead_pol, False)):
        m = band & (ev.p == pol)
        own = _edge_residual(rotor, ev.t_us[m], r[m], beta[m], lead)
        other = _edge_residual(rotor, ev.t_us[m], r[m], beta[m], not lead)
        assert np.median(own) < 0.5 * tol
        assert np.mean(own < tol) > 0.85
        assert np.mean(own < other) > 0.85  # polarity tells leading from trailing
    # and a plain check of the convention: a dark blade's leading edge is OFF
    assert rotor.contrast < 0 and lead_pol == 0


def test_no_blade_events_off_the_blades():
    scene = make_scenario('lone_constant', duration_s=0.02, seed=1)
    ev = _window(Simulator(scene).all_events(), 5_000, 15_000)
    rotor = scene.rotors[0]
    r, beta = _rotor_plane(rotor, ev)
    band = (r > rotor.hub_radius + 0.03) & (r < 0.97)
    res = np.minimum(_edge_residual(rotor, ev.t_us, r, beta, True),
                     _edge_residual(rotor, ev.t_us, r, beta, False))
    # mid-blade and mid-gap (far from both edges) only noise remains
    far = band & (res > 0.35)
    assert far.sum() < 0.002 * band.sum()


def test_fewer_events_toward_the_hub():
    scene = make_scenario('lone_constant', duration_s=0.05, seed=3)
    ev = Simulator(scene).all_events()
    rotor = scene.rotors[0]
    r, _ = _rotor_plane(rotor, ev)
    edges = np.linspace(rotor.hub_radius + 0.02, 0.96, 6)
    counts, _ = np.histogram(r, edges)
    density = counts / np.diff(edges ** 2)  # per unit area
    assert density[0] < 0.7 * density[-2]
    assert np.all(np.diff(density[:-1]) > 0)


def test_rate_grows_with_ego_level():
    rates = []
    for level in (0, 2, 4, 6, 7):
        scene = make_scenario('background_only', duration_s=0.032, ego_level=level, seed=6)
        rates.append(len(Simulator(scene).all_events()) / 0.032)
    assert rates[0] < 1e6  # noise and hot pixels only
    assert all(b > 1.2 * a for a, b in zip(rates, rates[1:], strict=False)), rates
    assert rates[-1] > 10e6


@pytest.mark.parametrize('name,level', [('quadcopter_4m', 4), ('lone_sweep', 1),
                                        ('lone_constant', 0)])
def test_same_seed_same_events_whatever_the_chunking(name, level):
    scene = make_scenario(name, duration_s=0.05, ego_level=level, seed=8)
    ref = Simulator(scene, seed=5).all_events()
    for chunk_us in (1_000, 7_321, 33_000, 10**9):
        chunks = list(Simulator(scene, seed=5).chunks(chunk_us))
        assert len(chunks) == -(-scene.duration_us // chunk_us)
        for k, c in enumerate(chunks):
            if len(c):
                assert c.t_us[0] >= k * chunk_us and c.t_us[-1] < (k + 1) * chunk_us
        got = EventArrays.concatenate(chunks)
        for f in EventArrays._fields:
            assert np.array_equal(getattr(got, f), getattr(ref, f)), (chunk_us, f)
    other = Simulator(scene, seed=6).all_events()
    assert len(other) != len(ref) or not np.array_equal(other.t_us, ref.t_us)


def test_refractory_and_hot_pixels():
    scene = make_scenario('lone_constant', duration_s=0.05, seed=2)
    ev = Simulator(scene).all_events()
    pix = ev.y.astype(np.int64) * scene.width + ev.x
    order = np.lexsort((ev.t_us, pix))
    same = np.diff(pix[order]) == 0
    gaps = np.diff(ev.t_us[order])[same]
    assert gaps.min() >= math.floor(scene.sensor.refractory_us) - 1
    hot = scene.sensor.hot_xy[np.argmax(scene.sensor.hot_rate_hz)]
    n_hot = np.sum((ev.x == hot[0]) & (ev.y == hot[1]))
    assert n_hot > 0.5 * scene.sensor.hot_rate_hz.max() * 0.05


def test_event_rate_hint_is_in_the_right_ballpark():
    for name, level in (('lone_constant', 0), ('quadcopter_4m', 5)):
        scene = make_scenario(name, duration_s=0.032, ego_level=level, seed=1)
        sim = Simulator(scene)
        rate = len(sim.all_events()) / 0.032
        assert 0.4 < sim.event_rate_hint() / rate < 2.5


def test_invalid_arguments():
    scene = make_scenario('lone_constant', duration_s=0.01)
    with pytest.raises(ValueError):
        list(Simulator(scene).chunks(0))
    with pytest.raises(ValueError):
        Simulator('scene')
