# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The numba blade-crossing kernel against its brute-force numpy twin on a tiny scene."""

from collections import defaultdict

import numpy as np
import pytest
from reference.naive_sim import naive_rotor_crossings

from helixtrack_ros.sim import (
    CameraMotion,
    EdgeSet,
    RotorSpec,
    RpmSchedule,
    Scene,
    SensorSpec,
    Simulator,
)

W, H = 64, 48


def _tiny_scene(level: int, direction: int, contrast: float) -> Scene:
    rotor = RotorSpec(name='tiny', blades=2, direction=direction, radius_px=14.0,
                      center_px=(31.0, 24.5),
                      schedule=RpmSchedule.piecewise([0, 20_000], [9_000, 12_000], 0.3),
                      psi_rad=0.4, perspective=(0.002, -0.003), sweep_rad=0.1,
                      contrast=contrast)
    cam = CameraMotion.generate(level, 20_000, np.random.default_rng(4), (W / 2, H / 2))
    # noiseless sensor: no jitter, no dead time, and so low a threshold that every
    # crossing gives exactly three events at the crossing time
    sensor = SensorSpec(threshold=1e-6, jitter_us=0.0, refractory_us=0.0, gap_us=0.0,
                        ba_rate_hz=0.0)
    return Scene('tiny', W, H, 20_000, level, [rotor], cam, EdgeSet.empty(), sensor)


def _crossings(scene: Scene, t0: int, t1: int) -> dict:
    ev = Simulator(scene, seed=3).all_events()
    sel = (ev.t_us >= t0) & (ev.t_us < t1)
    t, x, y, p = ev.t_us[sel], ev.x[sel], ev.y[sel], ev.p[sel]
    # each crossing is a triplet of identical events
    assert len(t) % 3 == 0
    assert np.array_equal(t[0::3], t[2::3]) and np.array_equal(x[0::3], x[1::3])
    table = defaultdict(list)
    for ti, xi, yi, pi in zip(t[0::3], x[0::3], y[0::3], p[0::3], strict=True):
        table[(int(xi), int(yi), int(pi))].append(int(ti))
    return table


def _radius(rotor: RotorSpec, t_us: float, x: int, y: int) -> float:
    h = rotor.homography(np.array([t_us]))[0]
    u = np.linalg.solve(h, [x, y, 1.0])
    return float(np.hypot(u[0] / u[2], u[1] / u[2]))


@pytest.mark.parametrize('level,direction,contrast,tol_us',
                         [(0, -1, -0.5, 2.0), (0, 1, 0.5, 2.0), (3, 1, -0.5, 6.0)])
def test_kernel_matches_naive_twin(level, direction, contrast, tol_us):
    scene = _tiny_scene(level, direction, contrast)
    rotor = scene.rotors[0]
    t0, t1 = 2_000, 5_000
    fast = _crossings(scene, t0 - 50, t1 + 50)
    naive = naive_rotor_crossings(rotor, W, H, t0, t1)
    assert naive['t_us'].size > 300
    margin = 2.0 / rotor.radius_px
    safe = (naive['r'] > rotor.hub_radius + margin) & (naive['r'] < 1.0 - margin)
    assert safe.sum() > 200
    errors = []
    for t, x, y, p in zip(naive['t_us'][safe], naive['x'][safe], naive['y'][safe],
                          naive['p'][safe], strict=True):
        cand = np.asarray(fast.get((int(x), int(y), int(p)), []), np.float64)
        assert cand.size, f'no crossing of polarity {p} at ({x}, {y}) near t={t}'
        # the naive time is the first grid microsecond after the crossing
        errors.append(np.min(np.abs(cand - (t - 0.5))))
    errors = np.asarray(errors)
    assert errors.max() <= tol_us, errors.max()
    # and the other way round: every fast crossing well inside the band is a true one
    naive_table = defaultdict(list)
    for t, x, y, p in zip(naive['t_us'], naive['x'], naive['y'], naive['p'], strict=True):
        naive_table[(int(x), int(y), int(p))].append(t - 0.5)
    extra = 0
    checked = 0
    for (x, y, p), times in fast.items():
        for t in times:
            if not t0 + 10 <= t < t1 - 10:
                continue
            r = _radius(rotor, t, x, y)
            if not rotor.hub_radius + margin < r < 1.0 - margin:
                continue
            checked += 1
            ref = np.asarray(naive_table.get((x, y, p), [np.inf]))
            extra += np.min(np.abs(ref - t)) > tol_us
    assert checked > 200 and extra == 0, (checked, extra)
