# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Hand-held camera egomotion: smooth random image-plane motion by level (0-7).

The camera transform ``M_cam(t)`` maps reference image coordinates (the view at
t = 0 without motion) to the current image: a translation, a small rotation and
a little zoom about the image centre. Every component is a closed-form function
of time (sums of sinusoids plus smooth-step jolts), so it can be evaluated at any
instant, streamed without state, and handed out exactly as ground truth.
"""

from dataclasses import dataclass
import math

import numpy as np

# level -> (trans_rms_px, f_hi_hz, rot_rms_deg, zoom_rms, vib_px, vib_hz, jolt_rate_hz,
#           jolt_px)
# Level 1 is a slow hover-like drift; level 7 is racing-drone shake with jolts.
EGO_LEVELS: dict[int, tuple[float, ...]] = {
    0: (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    1: (3.0, 0.6, 0.05, 0.001, 0.0, 0.0, 0.0, 0.0),
    2: (5.0, 1.2, 0.10, 0.002, 0.15, 18.0, 0.0, 0.0),
    3: (8.0, 2.0, 0.15, 0.003, 0.3, 22.0, 0.3, 5.0),
    4: (11.0, 3.5, 0.25, 0.004, 0.6, 28.0, 0.6, 8.0),
    5: (18.0, 7.0, 0.45, 0.007, 1.5, 33.0, 1.2, 14.0),
    6: (24.0, 10.0, 0.65, 0.009, 2.5, 40.0, 2.0, 20.0),
    7: (32.0, 14.0, 0.90, 0.012, 4.0, 48.0, 3.0, 28.0),
}


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


@dataclass(frozen=True)
class CameraMotion:
    """Closed-form camera egomotion about the image centre.

    Attributes
    ----------
    level : int
        Egomotion level 0 (static) .. 7.
    center_px : tuple of float
        Centre of rotation and zoom (image centre).
    tr_amp_px, tr_freq_hz, tr_phase_rad : numpy.ndarray
        (n, 2) sinusoid amplitudes / frequencies / phases of the x and y translation.
    rot_amp_rad, rot_freq_hz, rot_phase_rad : numpy.ndarray
        (m,) sinusoids of the in-plane camera roll.
    zoom_amp, zoom_freq_hz, zoom_phase_rad : numpy.ndarray
        (m,) sinusoids of the relative zoom.
    jolt_t_us, jolt_dx_px, jolt_dy_px, jolt_rise_us : numpy.ndarray
        Abrupt smooth-step displacements (start time, size, rise time).
    """

    level: int
    center_px: tuple
    tr_amp_px: np.ndarray
    tr_freq_hz: np.ndarray
    tr_phase_rad: np.ndarray
    rot_amp_rad: np.ndarray
    rot_freq_hz: np.ndarray
    rot_phase_rad: np.ndarray
    zoom_amp: np.ndarray
    zoom_freq_hz: np.ndarray
    zoom_phase_rad: np.ndarray
    jolt_t_us: np.ndarray
    jolt_dx_px: np.ndarray
    jolt_dy_px: np.ndarray
    jolt_rise_us: np.ndarray

    @property
    def static(self) -> bool:
        """True when the camera never moves."""
        return (not np.any(self.tr_amp_px) and not np.any(self.rot_amp_rad)
                and not np.any(self.zoom_amp) and self.jolt_t_us.size == 0)

    @staticmethod
    def generate(level: int, duration_us: int, rng: np.random.Generator,
                 center_px: 'tuple[float, float]' = (640.0, 360.0),
                 jolt_scale: float = 1.0) -> 'CameraMotion':
        """Draw a random camera motion of the given level.

        Parameters
        ----------
        level : int
            0 = static camera, 1 = slow drift ... 7 = racing-drone shake.
        duration_us : int
            Scene length (jolts are drawn over it).
        rng : numpy.random.Generator
            Source of randomness (the scene seed).
        center_px : tuple of float
            Image centre.
        jolt_scale : float
            Multiplies the jolt rate and size (abrupt-motion scenes use > 1).
        """
        if level not in EGO_LEVELS:
            raise ValueError(f'ego level must be in 0..7, got {level}')
        (tr_rms, f_hi, rot_deg, zoom_rms, vib_px, vib_hz, jolt_rate,
         jolt_px) = EGO_LEVELS[level]
        n_tr, n_rz = 6, 4
        if level == 0:
            z2 = np.zeros((0, 2))
            z1 = np.zeros(0)
            return CameraMotion(0, tuple(center_px), z2, z2, z2, z1, z1, z1, z1, z1, z1,
                                z1, z1, z1, z1)
        f_lo = 0.08
        # log-uniform frequencies over the band, equal power per component
        tr_f = np.exp(rng.uniform(math.log(f_lo), math.log(f_hi), (n_tr, 2)))
        tr_a = np.full((n_tr, 2), tr_rms * math.sqrt(2.0 / n_tr)) * rng.uniform(0.6, 1.4,
                                                                               (n_tr, 2))
        tr_p = rng.uniform(0, 2 * math.pi, (n_tr, 2))
        if vib_px > 0:
            vf = rng.uniform(0.8, 1.2, (2, 2)) * vib_hz
            va = np.full((2, 2), vib_px * 0.5 * math.sqrt(2.0)) * rng.uniform(0.7, 1.3, (2, 2))
            tr_f = np.vstack([tr_f, vf])
            tr_a = np.vstack([tr_a, va])
            tr_p = np.vstack([tr_p, rng.uniform(0, 2 * math.pi, (2, 2))])
        rot_f = np.exp(rng.uniform(math.log(f_lo), math.log(f_hi), n_rz))
        rot_a = math.radians(rot_deg) * math.sqrt(2.0 / n_rz) * rng.uniform(0.6, 1.4, n_rz)
        rot_p = rng.uniform(0, 2 * math.pi, n_rz)
        zoom_f = np.exp(rng.uniform(math.log(f_lo), math.log(max(f_hi * 0.5, 0.3)), n_rz))
        zoom_a = zoom_rms * math.sqrt(2.0 / n_rz) * rng.uniform(0.6, 1.4, n_rz)
        zoom_p = rng.uniform(0, 2 * math.pi, n_rz)
        # jolts: Poisson times, each pulls the jolt offset to a new random target
        rate = jolt_rate * jolt_scale
        size = jolt_px * max(jolt_scale, 1.0) ** 0.5
        n_j = int(rng.poisson(rate * duration_us * 1e-6)) if rate > 0 else 0
        jt = np.sort(rng.uniform(0, duration_us, n_j))
        jx = np.zeros(n_j)
        jy = np.zeros(n_j)
        cur = np.zeros(2)
        for i in range(n_j):
            tgt = rng.uniform(-size, size, 2)
            jx[i], jy[i] = tgt - cur
            cur = tgt
        jr = rng.uniform(25e3, 60e3, n_j)
        return CameraMotion(int(level), tuple(float(c) for c in center_px), tr_a, tr_f, tr_p,
                            rot_a, rot_f, rot_p, zoom_a, zoom_f, zoom_p, jt, jx, jy, jr)

    def params(self, t_us: np.ndarray) -> 'tuple[np.ndarray, ...]':
        """Translation x, y [px], roll [rad] and relative zoom at ``t_us`` (1-D)."""
        t = np.atleast_1d(np.asarray(t_us, np.float64))
        ts = t[:, None] * 1e-6
        dx = np.zeros(t.shape)
        dy = np.zeros(t.shape)
        if self.tr_amp_px.size:
            arg = 2 * math.pi * self.tr_freq_hz[None, :, :] * ts[:, :, None] \
                + self.tr_phase_rad[None]
            # subtract the value at t=0 so that M(0) = identity
            off = np.sin(self.tr_phase_rad)
            d = (self.tr_amp_px[None] * (np.sin(arg) - off[None])).sum(axis=1)
            dx, dy = d[:, 0], d[:, 1]
        if self.jolt_t_us.size:
            s = _smoothstep((t[:, None] - self.jolt_t_us[None]) / self.jolt_rise_us[None])
            dx = dx + s @ self.jolt_dx_px
            dy = dy + s @ self.jolt_dy_px
        rot = np.zeros(t.shape)
        zoom = np.zeros(t.shape)
        if self.rot_amp_rad.size:
            rot = (self.rot_amp_rad * (np.sin(2 * math.pi * self.rot_freq_hz * ts
                                              + self.rot_phase_rad)
                                       - np.sin(self.rot_phase_rad))).sum(axis=1)
            zoom = (self.zoom_amp * (np.sin(2 * math.pi * self.zoom_freq_hz * ts
                                            + self.zoom_phase_rad)
                                     - np.sin(self.zoom_phase_rad))).sum(axis=1)
        return dx, dy, rot, zoom

    def matrix(self, t_us: np.ndarray) -> np.ndarray:
        """(n, 3, 3) transforms reference image -> current image at ``t_us``."""
        t = np.atleast_1d(np.asarray(t_us, np.float64))
        dx, dy, rot, zoom = self.params(t)
        s = 1.0 + zoom
        c, sn = s * np.cos(rot), s * np.sin(rot)
        cx, cy = self.center_px
        m = np.zeros((t.size, 3, 3))
        m[:, 0, 0] = c
        m[:, 0, 1] = -sn
        m[:, 1, 0] = sn
        m[:, 1, 1] = c
        m[:, 0, 2] = cx + dx - (c * cx - sn * cy)
        m[:, 1, 2] = cy + dy - (sn * cx + c * cy)
        m[:, 2, 2] = 1.0
        return m

    def max_shift_px(self, radius_px: float = 800.0) -> float:
        """Upper bound of how far any point within ``radius_px`` of the centre moves."""
        tr = float(np.abs(self.tr_amp_px).sum(axis=0).max() * 2) if self.tr_amp_px.size else 0.0
        if self.jolt_t_us.size:
            tr += float(np.abs(np.cumsum(self.jolt_dx_px)).max()
                        + np.abs(np.cumsum(self.jolt_dy_px)).max())
        rot = float(np.abs(self.rot_amp_rad).sum() * 2) if self.rot_amp_rad.size else 0.0
        zoom = float(np.abs(self.zoom_amp).sum() * 2) if self.zoom_amp.size else 0.0
        return tr + radius_px * (rot + zoom) * 1.05
