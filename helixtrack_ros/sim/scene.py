# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Scene description: rotors, camera egomotion, textured background, sensor model.

Everything here is plain data plus closed-form ground truth; the event
generation itself lives in :mod:`helixtrack_ros.sim.simulator`.

Geometry follows docs/ARCHITECTURE.md: the rotor plane is in tip-radius units,
``H0`` is the paper's q-parameterised homography of the rotor at t = 0 without
camera motion and the ground truth is ``H(t) = M_cam(t) @ H0``. Blade ``k`` of a
rotor sits at rotor-plane angle ``direction * theta_shaft(t) + 2 pi k / B``
(its centre line at the hub; a swept blade trails by ``sweep_rad * rho**2``).
"""

from dataclasses import dataclass, field
import math

import numpy as np

from .camera import CameraMotion
from .schedules import RpmSchedule


def q_homography(radius_px: float, psi_rad: float, tx: float, ty: float, p31: float,
                 p32: float) -> np.ndarray:
    """The 3x3 homography of the paper's Eq. (1) for ``q = [s, psi, tx, ty, p31, p32]``."""
    c, s = math.cos(psi_rad), math.sin(psi_rad)
    return np.array([[radius_px * c, -radius_px * s, tx],
                     [radius_px * s, radius_px * c, ty],
                     [p31, p32, 1.0]])


def q_from_homography(h: np.ndarray) -> dict:
    """Closest q-parameters of a general homography (normalised to ``H[2,2] = 1``).

    Translation and perspective are read off directly, scale and rotation come from
    the similarity part of the upper-left 2x2 block.
    """
    h = np.asarray(h, np.float64) / h[2, 2]
    a = 0.5 * (h[0, 0] + h[1, 1])
    b = 0.5 * (h[1, 0] - h[0, 1])
    return {'s': float(math.hypot(a, b)), 'psi': float(math.atan2(b, a)),
            'tx': float(h[0, 2]), 'ty': float(h[1, 2]), 'p31': float(h[2, 0]),
            'p32': float(h[2, 1])}


@dataclass
class RotorSpec:
    """One propeller with its exact ground truth.

    Attributes
    ----------
    name : str
        Rotor name (``front_left`` ...).
    blades : int
        Blade count B.
    direction : int
        +1 when the rotor-plane blade angle increases with time, -1 otherwise.
    radius_px : float
        Scale s of the homography (tip radius in pixels near the centre).
    center_px : tuple of float
        Rotor centre (tx, ty) in the reference image.
    schedule : RpmSchedule
        Shaft speed; ``shaft_angle`` is its exact integral.
    psi_rad : float
        In-plane rotation psi of ``H0``.
    perspective : tuple of float
        (p31, p32) of ``H0``.
    hub_radius : float
        Hub (motor bell) radius in tip-radius units; blades start there.
    chord_root, chord_peak, chord_tip : float
        Blade chord (tip-radius units) at the hub, at ``r = 0.4`` and at the tip; the
        angular width at radius r is ``2 asin(chord / 2 r)``.
    sweep_rad : float
        Angular lag of the blade centre line at the tip (curved / swept blades).
    contrast : float
        Log-intensity change when a blade covers the background (< 0: dark blade on a
        brighter background, so the leading edge gives OFF events).
    tip_round : float
        Rounded blade tip: corner radius in half tip chords (0 = square tip, 1 = a
        semicircular tip); the blade then narrows to ``chord_tip * (1 - tip_round)`` at r = 1.
    aspect : float
        Optional squash of the rotor plane along its y axis before ``H0`` (1 = the
        pure q-model; < 1 mimics a foreshortened disc that q cannot express).
    hidden_us : tuple
        Induced losses: ``((t0_us, t1_us), ...)`` intervals in which the rotor emits
        no event (occluded); the ground truth is unchanged.
    jump_us : float
        Induced loss: from this time on the rotor's image is shifted by ``jump_px``
        (an instant jump, e.g. a frame drop or a bump); ``inf`` = never.
    jump_px : tuple
        (dx, dy) of the jump in reference-image pixels.
    camera : CameraMotion or None
        Set by :class:`Scene`: the shared camera motion (None = static).
    """

    name: str
    blades: int
    direction: int
    radius_px: float
    center_px: tuple
    schedule: RpmSchedule
    psi_rad: float = 0.0
    perspective: tuple = (0.0, 0.0)
    hub_radius: float = 0.16
    chord_root: float = 0.13
    chord_peak: float = 0.16
    chord_tip: float = 0.07
    sweep_rad: float = 0.0
    contrast: float = -0.5
    tip_round: float = 0.0
    aspect: float = 1.0
    hidden_us: tuple = ()
    jump_us: float = math.inf
    jump_px: tuple = (0.0, 0.0)
    camera: CameraMotion | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if int(self.blades) < 1:
            raise ValueError(f'{self.name}: blades must be >= 1')
        if int(self.direction) not in (-1, 1):
            raise ValueError(f'{self.name}: direction must be +1 or -1')
        if not self.radius_px > 1.0:
            raise ValueError(f'{self.name}: radius_px must be > 1')
        if not 0.0 < self.hub_radius < 0.9:
            raise ValueError(f'{self.name}: hub_radius must be in (0, 0.9)')
        if not 0.0 <= self.tip_round <= 1.0:
            raise ValueError(f'{self.name}: tip_round must be in [0, 1]')
        self.blades = int(self.blades)
        self.direction = int(self.direction)

    # ---------------------------------------------------------------- ground truth
    def rpm_shaft(self, t_us: np.ndarray) -> np.ndarray:
        """True shaft RPM at ``t_us``."""
        return self.schedule.rpm(t_us)

    def shaft_angle(self, t_us: np.ndarray) -> np.ndarray:
        """True unwrapped shaft angle [rad] at ``t_us`` (increasing for either direction)."""
        return self.schedule.shaft_angle(t_us)

    def homography0(self, variant: int = 0) -> np.ndarray:
        """Rotor plane -> reference image without camera motion (variant 1: after the jump)."""
        h = q_homography(self.radius_px, self.psi_rad, self.center_px[0], self.center_px[1],
                         self.perspective[0], self.perspective[1])
        if self.aspect != 1.0:
            h = h @ np.diag([1.0, self.aspect, 1.0])
        if variant:
            shift = np.eye(3)
            shift[0, 2], shift[1, 2] = self.jump_px
            h = shift @ h
        return h

    def homography(self, t_us: np.ndarray) -> np.ndarray:
        """(n, 3, 3) true homographies rotor plane -> image at ``t_us`` (normalised H33=1)."""
        t = np.atleast_1d(np.asarray(t_us, np.float64))
        h0 = np.broadcast_to(self.homography0(), (t.size, 3, 3)).copy()
        if math.isfinite(self.jump_us):
            h0[t >= self.jump_us] = self.homography0(1)
        if self.camera is None or self.camera.static:
            return h0
        h = self.camera.matrix(t) @ h0
        return h / h[:, 2:3, 2:3]

    def blade_width_rad(self, r: np.ndarray) -> np.ndarray:
        """Full angular blade width at rotor-plane radius ``r`` (tip-radius units)."""
        r = np.asarray(r, np.float64)
        chord = np.interp(r, [self.hub_radius, 0.4, 1.0],
                          [self.chord_root, self.chord_peak, self.chord_tip])
        if self.tip_round > 0.0:
            rc = 0.5 * self.tip_round * self.chord_tip
            d = np.maximum(np.minimum(r, 1.0) - (1.0 - rc), 0.0)
            chord = np.maximum(chord - 2.0 * (rc - np.sqrt(np.maximum(rc * rc - d * d, 0.0))),
                               0.0)
        return 2.0 * np.arcsin(np.clip(chord / (2.0 * np.maximum(r, 1e-6)), 0.0, 1.0))

    def blade_center_offset_rad(self, r: np.ndarray) -> np.ndarray:
        """Angular offset of the blade centre line (negative = lagging) at radius ``r``."""
        rho = np.clip((np.asarray(r, np.float64) - self.hub_radius)
                      / (1.0 - self.hub_radius), 0.0, 1.0)
        return -self.sweep_rad * rho * rho

    def edge_angles(self, t_us: float, r: float) -> 'tuple[np.ndarray, np.ndarray]':
        """Rotor-plane angles of all leading and trailing blade edges at radius ``r``.

        Returns two arrays of B angles (rad, wrapped to (-pi, pi]).
        """
        th = float(self.shaft_angle(np.array([t_us], np.float64))[0])
        k = np.arange(self.blades)
        c = float(self.blade_center_offset_rad(r))
        half = 0.5 * float(self.blade_width_rad(r))
        d = self.direction
        base = d * th + 2.0 * math.pi * k / self.blades
        lead = base + d * (c + half)
        trail = base + d * (c - half)
        wrap = np.vectorize(lambda a: math.atan2(math.sin(a), math.cos(a)))
        return wrap(lead), wrap(trail)


@dataclass
class EdgeSet:
    """Static intensity edges of the scene (texture, drone body, hubs) as point samples.

    Attributes
    ----------
    xy : numpy.ndarray
        (n, 2) sample positions in the reference image [px].
    normal : numpy.ndarray
        (n, 2) unit normals.
    contrast : numpy.ndarray
        (n,) log-intensity on the +normal side minus the -normal side.
    weight : numpy.ndarray
        (n,) edge length represented by each sample [px] (<= 1).
    """

    xy: np.ndarray
    normal: np.ndarray
    contrast: np.ndarray
    weight: np.ndarray

    @staticmethod
    def empty() -> 'EdgeSet':
        """No edges."""
        return EdgeSet(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0), np.zeros(0))

    @staticmethod
    def concatenate(parts: 'list[EdgeSet]') -> 'EdgeSet':
        """Join edge sets."""
        parts = [p for p in parts if p.xy.shape[0]]
        if not parts:
            return EdgeSet.empty()
        return EdgeSet(np.vstack([p.xy for p in parts]), np.vstack([p.normal for p in parts]),
                       np.concatenate([p.contrast for p in parts]),
                       np.concatenate([p.weight for p in parts]))

    def __len__(self) -> int:  # noqa: D105
        return int(self.xy.shape[0])


@dataclass
class SensorSpec:
    """Event-sensor non-idealities.

    Attributes
    ----------
    threshold : float
        Contrast threshold C (log intensity per event).
    jitter_us : float
        Standard deviation of the timing jitter of the first event of a crossing.
    refractory_us : float
        Per-pixel dead time after an event.
    gap_us : float
        Mean extra delay between successive events of one crossing.
    photoreceptor_tau_us : float
        Photoreceptor time constant: a blade that passes a pixel in less time than
        this is seen with reduced contrast (fewer events near fast blade tips).
    ba_rate_hz : float
        Background-activity noise rate per pixel [Hz].
    hot_xy : numpy.ndarray
        (k, 2) hot-pixel coordinates.
    hot_rate_hz : numpy.ndarray
        (k,) hot-pixel event rates.
    pixel_spread : float
        Threshold mismatch: standard deviation of the log of a fixed per-pixel gain of the
        mean number of blade events per edge crossing (0 = every pixel alike).
    on_gain, off_gain : float
        Gains of the mean number of ON / OFF blade events per edge crossing (unequal ON
        and OFF thresholds).
    off_delay_us : float
        Extra latency of OFF blade events [us] (ON and OFF pixel circuits differ).
    """

    threshold: float = 0.25
    jitter_us: float = 15.0
    refractory_us: float = 20.0
    gap_us: float = 12.0
    photoreceptor_tau_us: float = 60.0
    ba_rate_hz: float = 0.3
    hot_xy: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    hot_rate_hz: np.ndarray = field(default_factory=lambda: np.zeros(0))
    pixel_spread: float = 0.0
    on_gain: float = 1.0
    off_gain: float = 1.0
    off_delay_us: float = 0.0


@dataclass
class Scene:
    """A complete simulated recording.

    Attributes
    ----------
    name : str
        Scenario name.
    width, height : int
        Sensor size.
    duration_us : int
        Length of the recording.
    ego_level : int
        Egomotion level 0..7.
    rotors : list of RotorSpec
        The propellers (may be empty).
    camera : CameraMotion
        Camera egomotion shared by rotors and background.
    edges : EdgeSet
        Static scene edges that fire when the camera moves.
    sensor : SensorSpec
        Sensor model.
    seed : int
        Seed the scene was drawn with.
    """

    name: str
    width: int
    height: int
    duration_us: int
    ego_level: int
    rotors: list
    camera: CameraMotion
    edges: EdgeSet
    sensor: SensorSpec
    seed: int = 0
    description: str = ''

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0 or self.width > 65535 or self.height > 65535:
            raise ValueError('width/height must be in 1..65535')
        if int(self.duration_us) <= 0:
            raise ValueError('duration_us must be positive')
        self.duration_us = int(self.duration_us)
        for r in self.rotors:
            r.camera = self.camera

    def rotor(self, name: str) -> RotorSpec:
        """The rotor called ``name``."""
        for r in self.rotors:
            if r.name == name:
                return r
        raise KeyError(name)

    def initial_rotor_params(self, t_us: int = 0) -> list:
        """True per-rotor state at ``t_us`` in the parameter-file layout.

        Returns
        -------
        list of dict
            ``{'name', 'center_px', 'radius_px', 'rpm', 'blades', 'direction', 'psi_rad',
            'perspective'}`` per rotor; pose from the closest q-parameters of ``H(t)``.
        """
        out = []
        t = np.array([t_us], np.float64)
        for r in self.rotors:
            q = q_from_homography(r.homography(t)[0])
            out.append({'name': r.name, 'center_px': [q['tx'], q['ty']], 'radius_px': q['s'],
                        'rpm': float(r.rpm_shaft(t)[0]), 'blades': r.blades,
                        'direction': r.direction, 'psi_rad': q['psi'],
                        'perspective': [q['p31'], q['p32']]})
        return out

    def ground_truth(self, t_us: np.ndarray) -> dict:
        """Ground truth of every rotor at ``t_us``.

        Returns
        -------
        dict
            name -> {'t_us', 'rpm', 'shaft_angle_rad', 'H' (n,3,3), 'direction', 'blades'}.
        """
        t = np.atleast_1d(np.asarray(t_us, np.float64))
        return {r.name: {'t_us': t, 'rpm': r.rpm_shaft(t), 'shaft_angle_rad': r.shaft_angle(t),
                         'H': r.homography(t), 'direction': r.direction, 'blades': r.blades}
                for r in self.rotors}
