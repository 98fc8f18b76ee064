# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Named scenarios imitating the TQE recordings (paper Sec. 4.1 and supplement).

``make_scenario(name, duration_s, ego_level, seed)`` draws every free quantity
(rotor placement, RPM sweeps, blade shape, camera motion, background texture,
hot pixels) from ``seed``; the same arguments always give the same scene.
"""

import math

import numpy as np

from .camera import CameraMotion
from .scene import EdgeSet, RotorSpec, Scene, SensorSpec
from .schedules import RpmSchedule
from .texture import drone_body_edges, random_background
from .variants import SimVariant, variant_of

WIDTH, HEIGHT = 1280, 720

SCENARIOS: dict[str, str] = {
    'lone_constant': 'one 2-blade rotor at 10,000 RPM, tip radius 100 px, static camera',
    'lone_1blade': 'one single-blade rotor (a lone blade, no counterweight) at 10,000 RPM, '
                   'tip radius 100 px, static camera',
    'lone_ramp': 'one 2-blade rotor on linear ramps 3,000 <-> 15,000 RPM, static camera',
    'lone_sweep': "one 2-blade rotor on the paper's slow 30-80 % 'spiral path' sweep, "
                  'slow camera drift (level 1)',
    'lone_3blade': 'one swept 3-blade rotor turning clockwise-negative, tilted, ~8,000 RPM '
                   'sweep, level 2',
    'low_rpm': 'one rotor near 1,350 shaft RPM with slight speed wander, level 1',
    'low_rpm_shake': 'one rotor near 1,350 shaft RPM under abrupt hand-held camera jolts '
                     '(level 6)',
    'quadcopter_2m': 'four rotors in an X at 2 m (tip radius ~90-110 px), own 30-80 % sweeps, '
                     'level 1',
    'quadcopter_3m': 'four rotors in an X at 3 m (tip radius ~60-72 px), own 30-80 % sweeps, '
                     'level 1',
    'quadcopter_4m': 'four rotors in an X at 4 m (tip radius ~45-55 px), own 30-80 % sweeps, '
                     'level 1',
    'background_only': 'textured background and drone-free clutter under egomotion (level 4), '
                       'no rotor',
    'quadcopter': 'demo default: quadcopter_4m at egomotion level 2',
}

DEFAULT_EGO = {'lone_constant': 0, 'lone_1blade': 0, 'lone_ramp': 0, 'lone_sweep': 1,
               'lone_3blade': 2,
               'low_rpm': 1, 'low_rpm_shake': 6, 'quadcopter_2m': 1, 'quadcopter_3m': 1,
               'quadcopter_4m': 1,
               'background_only': 4, 'quadcopter': 2}


def _sensor(rng: np.random.Generator, width: int, height: int, n_hot: int = 12) -> SensorSpec:
    hot_xy = np.column_stack([rng.integers(0, width, n_hot), rng.integers(0, height, n_hot)])
    hot_rate = np.exp(rng.uniform(math.log(200.0), math.log(6000.0), n_hot))
    return SensorSpec(threshold=0.25, jitter_us=float(rng.uniform(12.0, 22.0)),
                      refractory_us=float(rng.uniform(15.0, 30.0)), gap_us=12.0,
                      photoreceptor_tau_us=float(rng.uniform(45.0, 80.0)),
                      ba_rate_hz=float(rng.uniform(0.2, 0.5)), hot_xy=hot_xy.astype(np.int64),
                      hot_rate_hz=hot_rate)


def tilt_perspective(center_px: 'tuple[float, float]', radius_px: float, psi_rad: float,
                     squash: float) -> 'tuple[float, float]':
    """(p31, p32) that foreshorten the rotor disc by ``squash`` (0.1 = 10 %) at its centre.

    In the q-parameterisation the image Jacobian at the rotor centre is
    ``s R(psi) - t p^T``: the perspective terms act through the translation t (image
    pixels from the top-left corner), so a given foreshortening needs p of about
    ``squash * s / |t|``; the disc is then compressed along the direction of t.
    """
    t = np.asarray(center_px, np.float64)
    norm = float(np.hypot(*t))
    c, s = math.cos(psi_rad), math.sin(psi_rad)
    rot = np.array([[c, -s], [s, c]])
    p = squash * radius_px * (rot.T @ (t / norm)) / norm
    return float(p[0]), float(p[1])


def _blade_shape(rng: np.random.Generator, blades: int) -> dict:
    k = 2.0 / blades  # more blades, narrower chords
    return {'hub_radius': float(rng.uniform(0.13, 0.19)),
            'chord_root': float(rng.uniform(0.10, 0.14) * k ** 0.5),
            'chord_peak': float(rng.uniform(0.14, 0.19) * k ** 0.5),
            'chord_tip': float(rng.uniform(0.05, 0.08) * k ** 0.5),
            'sweep_rad': float(rng.uniform(0.0, 0.12)),
            'contrast': -float(rng.uniform(0.30, 0.45))}


def _lone(name: str, rng: np.random.Generator, duration_us: int, size: tuple) -> list:
    """One rotor near the image centre; ``size`` is (width, height, scale to 1280 x 720)."""
    blades = {'lone_3blade': 3, 'lone_1blade': 1}.get(name, 2)
    direction = -1 if name == 'lone_3blade' else 1
    shape = _blade_shape(rng, blades)
    width, height, k = size
    center = (width / 2 + k * rng.uniform(-30, 30), height / 2 + k * rng.uniform(-20, 20))
    radius = 100.0 * k
    th0 = float(rng.uniform(0, 2 * math.pi))
    if name in ('lone_constant', 'lone_1blade'):
        sched = RpmSchedule.constant(10_000.0, th0)
        shape['sweep_rad'] = 0.0
    elif name == 'lone_ramp':
        # triangle ramps at 8,000 RPM/s between 3,000 and 15,000 RPM, first going up
        t_up = (15_000.0 - 3_000.0) / 8_000.0 * 1e6
        knots_t, knots_r = [0.0], [3_000.0]
        t, up = 0.0, True
        while t < duration_us + t_up:
            t += t_up
            knots_t.append(t)
            knots_r.append(15_000.0 if up else 3_000.0)
            up = not up
        sched = RpmSchedule.piecewise(knots_t, knots_r, th0)
    elif name == 'lone_sweep':
        sched = RpmSchedule.spiral_sweep(float(rng.uniform(12_000, 16_000)), rng,
                                         period_s=float(rng.uniform(4.0, 8.0)), theta0_rad=th0)
    elif name == 'lone_3blade':
        radius = float(rng.uniform(85, 105)) * k
        sched = RpmSchedule.spiral_sweep(float(rng.uniform(10_000, 12_000)), rng,
                                         period_s=float(rng.uniform(3.0, 6.0)), lo=0.55,
                                         hi=0.85, theta0_rad=th0)
    else:  # low_rpm, low_rpm_shake
        base = float(rng.uniform(1_300, 1_400))
        sched = RpmSchedule((0.0,), (base,), (0.03 * base, 0.01 * base),
                            (float(rng.uniform(0.3, 0.8)), float(rng.uniform(2.0, 5.0))),
                            (float(rng.uniform(0, 6.3)), float(rng.uniform(0, 6.3))), th0)
    psi = float(rng.uniform(-math.pi, math.pi))
    squash = float(rng.uniform(0.15, 0.25)) if name == 'lone_3blade' else 0.0
    persp = tilt_perspective(center, radius, psi, squash)
    return [RotorSpec(name='rotor', blades=blades, direction=direction, radius_px=radius,
                      center_px=center, schedule=sched, psi_rad=psi, perspective=persp, **shape)]


def _quad(rng: np.random.Generator, scale_px: float, size: tuple) -> list:
    """Four rotors in an X, seen slightly from above, front rotors at the bottom.

    ``size`` is (width, height, scale to 1280 x 720): the drone is centred and scaled.
    """
    width, height, k = size
    rpm_max = float(rng.uniform(12_000, 16_000))
    base_r = k * scale_px * rng.uniform(0.92, 1.08)
    gap = rng.uniform(0.15, 0.4) * base_r          # tip-to-tip gap, fraction of a radius
    dx = base_r + 0.5 * gap                         # half centre distance left-right
    dy = base_r + 0.5 * rng.uniform(0.2, 0.5) * base_r
    c = np.array([width / 2 + k * rng.uniform(-40, 40), height / 2 + k * rng.uniform(-25, 25)])
    spin = 1 if rng.random() < 0.5 else -1          # props-in or props-out
    shape = _blade_shape(rng, 2)
    contrast = shape.pop('contrast')
    layout = {'front_left': (-1, 1, spin), 'front_right': (1, 1, -spin),
              'rear_left': (-1, -1, -spin), 'rear_right': (1, -1, spin)}
    rotors = []
    for name, (sx, sy, direction) in layout.items():
        # front (bottom of the image) rotors are closer, hence slightly larger
        radius = base_r * (1.0 + 0.025 * sy) * rng.uniform(0.985, 1.015)
        center = (float(c[0] + sx * dx * (1.0 + 0.02 * sy)), float(c[1] + sy * dy))
        psi = float(rng.uniform(-math.pi, math.pi))
        persp = tilt_perspective(center, radius, psi, float(rng.uniform(0.05, 0.14)))
        sched = RpmSchedule.spiral_sweep(rpm_max, rng, period_s=float(rng.uniform(5.0, 12.0)),
                                         theta0_rad=float(rng.uniform(0, 2 * math.pi)))
        rotors.append(RotorSpec(name=name, blades=2, direction=direction, radius_px=radius,
                                center_px=center, schedule=sched,
                                psi_rad=psi, perspective=persp,
                                contrast=contrast * rng.uniform(0.9, 1.1),
                                **shape))
    return rotors


def _losses(spec, size: int, what: str) -> list:
    """Normalise an induced-loss option to a list of tuples of ``size`` items."""
    if spec is None:
        return []
    items = [spec] if isinstance(spec[0], str) else list(spec)
    for item in items:
        if len(item) != size or not isinstance(item[0], str):
            raise ValueError(f'{what} must be (rotor name, {size - 1} numbers), got {item!r}')
    return [tuple(item) for item in items]


def _induce_losses(name: str, rotors: list, hide_rotor, jump) -> None:
    """Apply the induced losses of :func:`make_scenario` to its rotors (in place)."""
    by_name = {r.name: r for r in rotors}
    for rname, t0_s, t1_s in _losses(hide_rotor, 3, 'hide_rotor'):
        if rname not in by_name:
            raise ValueError(f'hide_rotor: no rotor {rname!r} in {name} ({sorted(by_name)})')
        if not t1_s > t0_s:
            raise ValueError('hide_rotor: need t0_s < t1_s')
        r = by_name[rname]
        r.hidden_us = r.hidden_us + ((float(t0_s) * 1e6, float(t1_s) * 1e6),)
    for rname, t_s, dx_frac, dy_frac in _losses(jump, 4, 'jump'):
        if rname not in by_name:
            raise ValueError(f'jump: no rotor {rname!r} in {name} ({sorted(by_name)})')
        r = by_name[rname]
        if math.isfinite(r.jump_us):
            raise ValueError(f'jump: one jump per rotor ({rname})')
        r.jump_us = float(t_s) * 1e6
        r.jump_px = (float(dx_frac) * r.radius_px, float(dy_frac) * r.radius_px)


#: the scenarios without a rotor (nothing to track or score)
ROTORLESS = ('background_only',)


def _rotors(base_name: str, seed: int, duration_us: int,
            size: tuple[int, int, float]) -> list[RotorSpec]:
    """The rotors of a scenario on a sensor of ``size`` (width, height, scale)."""
    rng = np.random.default_rng([int(seed), sum(map(ord, base_name))])
    if base_name.startswith('quadcopter'):
        return _quad(rng, {'quadcopter_2m': 100.0, 'quadcopter_3m': 66.0}.get(base_name, 50.0),
                     size)
    if base_name in ROTORLESS:
        return []
    return _lone(base_name, rng, duration_us, size)


def _too_small(name: str, base_name: str, seed: int, duration_us: int, width: int,
               height: int) -> str:
    """The line for a sensor on which a rotor's tip radius would be 1 px or less, with the
    least size of the same aspect as the full one (the radii scale with the sensor)."""
    smallest = min(r.radius_px for r in _rotors(base_name, seed, duration_us,
                                                (WIDTH, HEIGHT, 1.0)))
    k = 1.001 / smallest
    least = (math.ceil(WIDTH * k), math.ceil(HEIGHT * k))
    return (f'a {width}x{height} sensor is too small for scenario {name} (a rotor tip radius '
            f'would be 1 px or less): at least {least[0]}x{least[1]}')


def make_scenario(name: str, duration_s: float = 1.0, ego_level: int | None = None,
                  seed: int = 0, hide_rotor=None, jump=None,
                  sensor_size: 'tuple[int, int]' = (WIDTH, HEIGHT),
                  variant: 'SimVariant | str | None' = None) -> Scene:
    """Build a named scene.

    Parameters
    ----------
    name : str
        One of :data:`SCENARIOS`.
    duration_s : float
        Length of the recording [s] (> 0).
    ego_level : int or None
        Camera egomotion level 0 (static) .. 7; None = the scenario's default.
    seed : int
        Seed of every random choice of the scene.
    hide_rotor : tuple or list of tuple, optional
        Induced loss ``(rotor_name, t0_s, t1_s)``: the rotor emits no event in
        [t0_s, t1_s) (occlusion). Several as a list.
    jump : tuple or list of tuple, optional
        Induced loss ``(rotor_name, t_s, dx_frac, dy_frac)``: from t_s on the rotor's
        image is shifted by (dx_frac, dy_frac) times its tip radius. One per rotor.
    sensor_size : tuple of int
        (width, height) of the sensor, up to 2048 x 2048. The scene is that of
        1280 x 720 centred and scaled by min(width / 1280, height / 720) (rotor
        radii and placement, background edge length by area); the camera shake
        keeps its pixel amplitude. The default gives the scenes as before.
    variant : SimVariant or str, optional
        Another blade shape, contrast, sensor or noise model (a
        :class:`~helixtrack_ros.sim.variants.SimVariant` or a name of ``VARIANTS``),
        applied after every random draw: same rotors, speeds and camera motion.

    Returns
    -------
    Scene
        Without ``hide_rotor``, ``jump`` and ``variant`` the scene (and its events) is
        exactly the plain scenario; the ground truth includes the jump.
    """
    variant = variant_of(variant)
    if name not in SCENARIOS:
        raise ValueError(f'unknown scenario {name!r}; choose from {sorted(SCENARIOS)}')
    if not duration_s > 0:
        raise ValueError(f'duration_s must be positive, got {duration_s}')
    level = DEFAULT_EGO[name] if ego_level is None else int(ego_level)
    if not 0 <= level <= 7:
        raise ValueError(f'ego_level must be in 0..7, got {ego_level}')
    duration_us = int(round(duration_s * 1e6))
    width, height = (int(v) for v in sensor_size)
    if not (0 < width <= 2048 and 0 < height <= 2048):
        raise ValueError(f'sensor_size must be within 1..2048 x 1..2048, got {sensor_size}')
    k = min(width / WIDTH, height / HEIGHT)
    size = (width, height, k)
    base_name = 'quadcopter_4m' if name == 'quadcopter' else name
    jolt = 3.0 if name == 'low_rpm_shake' else 1.0
    cam_rng = np.random.default_rng([int(seed), 7, sum(map(ord, base_name))])
    camera = CameraMotion.generate(level, duration_us, cam_rng, (width / 2, height / 2),
                                   jolt_scale=jolt)
    try:
        rotors = _rotors(base_name, seed, duration_us, size)
    except ValueError as exc:
        if 'radius_px' not in str(exc):
            raise
        raise ValueError(_too_small(name, base_name, seed, duration_us, width, height)) from None
    lone = not base_name.startswith('quadcopter') and base_name not in ROTORLESS
    edge_len = 26_000.0 if lone else 30_000.0
    margin = camera.max_shift_px() + 10.0
    bg_rng = np.random.default_rng([int(seed), 11])
    edges = EdgeSet.concatenate([random_background(bg_rng, width, height, min(margin, 400.0),
                                                   edge_len * (width * height) / (WIDTH * HEIGHT)),
                                 drone_body_edges(bg_rng, rotors)])
    sensor = _sensor(np.random.default_rng([int(seed), 13]), width, height)
    _induce_losses(name, rotors, hide_rotor, jump)
    if variant is not None:
        variant.apply(rotors, sensor)
    return Scene(name=name, width=width, height=height, duration_us=duration_us,
                 ego_level=level, rotors=rotors, camera=camera, edges=edges, sensor=sensor,
                 seed=int(seed), description=SCENARIOS[name])
