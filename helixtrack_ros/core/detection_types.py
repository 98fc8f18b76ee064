# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Settings and result of the rotor detector (:mod:`helixtrack_ros.core.detection`)."""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from helixtrack_ros.core.declared import check_fields, declared
from helixtrack_ros.core.homography import homography_from_paper_q


@declared('detection_params.json')
class DetectionParams:
    """Settings of :func:`detect_rotors` (defaults suit the TQE-like simulator scenes).

    Each field is declared once, with its default, range, unit and meaning, in
    ``detection_params.json`` (:mod:`helixtrack_ros.core.declared`); an
    integer default makes an integer field.
    """

    def __post_init__(self) -> None:
        """Validate; raise ValueError naming the field."""
        check_fields(self, 'detection parameter')
        if self.block_px % self.motion_cell_px:
            raise ValueError('block_px must be a multiple of motion_cell_px')
        if self.min_window_us > self.window_us:
            raise ValueError('min_window_us must not exceed window_us')
        if not 0.0 < self.rpm_min < self.rpm_max:
            raise ValueError('need 0 < rpm_min < rpm_max')
        if not 1 <= self.blades_min <= self.blades_max <= 16:
            raise ValueError('need 1 <= blades_min <= blades_max <= 16')
        if not 0.0 < self.radius_min_px < self.radius_max_px:
            raise ValueError('need 0 < radius_min_px < radius_max_px')
        if not 0.0 <= self.ring_inner < self.ring_outer <= 1.0:
            raise ValueError('need 0 <= ring_inner < ring_outer <= 1')
        if self.blades_max * self.rpm_max / 60.0 * self.bin_us * 1e-6 >= 0.5:
            raise ValueError('bin_us too long for blades_max * rpm_max (blade-pass '
                             'frequency above Nyquist)')
        if (self.blades_max * self.rpm_max / 60.0 * 2.0 * math.pi * self.angle_bin_us * 1e-6
                >= math.pi):
            raise ValueError('angle_bin_us too long for blades_max * rpm_max')


@dataclass(frozen=True)
class DetectedRotor:
    """One detected rotor: coarse initial state for the tracker.

    Attributes
    ----------
    center_px : tuple of float
        Rotor centre (tx, ty) in the image at ``t_us`` [px].
    radius_px : float
        Homography scale s, the tip radius [px].
    psi_rad : float
        In-plane rotation psi [rad]; the circle alone leaves it free, it is chosen so
        that a blade lies on the rotor-plane x axis at ``t_us``.
    perspective : tuple of float
        (p31, p32) of the homography (small-tilt solution; zero for a round disc).
    blades : int
        Blade count B.
    direction : int
        +1 when the rotor-plane blade angle increases with time, else -1.
    rpm_shaft : float
        Shaft RPM at ``t_us``.
    score : float
        Coherence (0..1) of the rotating B-fold angular pattern: the confidence.
    t_us : int
        Time the estimate refers to (end of the analysed window) [us].
    blade_pass_hz : float
        Blade-pass frequency B * RPM / 60 at ``t_us`` [Hz].
    axes_px : tuple of float
        Semi-axes (major, minor) of the fitted tip ellipse [px].
    """

    center_px: tuple[float, float]
    radius_px: float
    psi_rad: float
    perspective: tuple[float, float]
    blades: int
    direction: int
    rpm_shaft: float
    score: float
    t_us: int
    blade_pass_hz: float = 0.0
    axes_px: tuple[float, float] = (0.0, 0.0)

    def homography(self) -> np.ndarray:
        """The 3x3 rotor-plane -> image homography of the paper's Eq. (1)."""
        return homography_from_paper_q(self.radius_px, self.psi_rad, self.center_px[0],
                                       self.center_px[1], self.perspective[0],
                                       self.perspective[1])

    def to_params_dict(self, name: str) -> dict:
        """Rotor entry in the parameter-file layout (as ``Scene.initial_rotor_params``).

        Parameters
        ----------
        name : str
            Rotor name.

        Returns
        -------
        dict
            Keys name, center_px, radius_px, rpm, blades, direction, psi_rad, perspective.
        """
        return {'name': str(name), 'center_px': [float(self.center_px[0]),
                                                 float(self.center_px[1])],
                'radius_px': float(self.radius_px), 'rpm': float(self.rpm_shaft),
                'blades': int(self.blades), 'direction': int(self.direction),
                'psi_rad': float(self.psi_rad),
                'perspective': [float(self.perspective[0]), float(self.perspective[1])]}
