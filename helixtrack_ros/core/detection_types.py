# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Settings and result of the rotor detector (:mod:`helixtrack_ros.core.detection`)."""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from helixtrack_ros.core.homography import homography_from_paper_q


@dataclass(frozen=True)
class DetectionParams:
    """Settings of :func:`detect_rotors` (defaults suit the TQE-like simulator scenes).

    Attributes
    ----------
    window_us : int
        Longest analysed span from the first event [us].
    min_window_us : int
        Shortest usable span [us]; shorter input gives no detection.
    motion_step_us : int
        Sub-window length of the egomotion registration [us].
    motion_cell_px : int
        Cell size of the registration count images [px].
    motion_min_corr : float
        Minimum normalised correlation of a sub-window with the reference.
    motion_max_px_per_ms : float
        Largest plausible image speed of the scene [px/ms] (simulator level 5:
        <= 1.3, level 7: <= 5); faster registered jumps are rejected.
    block_px : int
        Block size of the periodicity map [px].
    bin_us : int
        Time bin of the block series [us].
    min_rate_hz_px : float
        Minimum mean event rate of a block [events per pixel per second].
    periodicity_min : float
        Minimum ratio of a block's in-band spectral peak to its in-band median.
    rpm_min, rpm_max : float
        Shaft RPM search range.
    blades_min, blades_max : int
        Blade count search range.
    radius_min_px, radius_max_px : float
        Tip radius search range [px].
    angle_bin_us : int
        Time bin of the angular harmonics [us]; B * omega * bin must stay below pi.
    ring_inner, ring_outer : float
        Annulus (tip radii) whose events enter the angular analysis.
    coherence_min : float
        Minimum coherence (0..1) of the rotating B-fold angular harmonic (rotors
        score 0.5-0.96 in the simulator, background clutter < 0.35).
    consistency_min : float
        Minimum fraction (0..1) of the B-fold harmonic explained by one smoothly
        advancing phase (rotors ~1, clutter mostly < 0.6).
    rate_tolerance : float
        Allowed relative mismatch between the block-spectrum blade-pass frequency
        and B times the phase-slope shaft rate.
    squash_min : float
        Below this relative axis difference the perspective is left at zero.
    vortex_votes_min : float
        Minimum (3 x 3 summed) vote count of a blade-phase vortex centre (a 14 px
        rotor gets ~50, a 50 px one ~200).
    max_candidates : int
        Largest number of disc candidates examined.
    """

    window_us: int = 100_000
    min_window_us: int = 20_000
    motion_step_us: int = 5_000
    motion_cell_px: int = 4
    motion_min_corr: float = 0.15
    motion_max_px_per_ms: float = 4.0
    block_px: int = 8
    bin_us: int = 200
    min_rate_hz_px: float = 20.0
    periodicity_min: float = 40.0
    rpm_min: float = 800.0
    rpm_max: float = 20_000.0
    blades_min: int = 1
    blades_max: int = 6
    radius_min_px: float = 12.0
    radius_max_px: float = 320.0
    angle_bin_us: int = 100
    ring_inner: float = 0.3
    ring_outer: float = 0.92
    coherence_min: float = 0.25
    consistency_min: float = 0.8
    rate_tolerance: float = 0.12
    squash_min: float = 0.02
    vortex_votes_min: float = 20.0
    max_candidates: int = 24

    def __post_init__(self) -> None:
        """Validate; raise ValueError naming the field."""
        ints = ('window_us', 'min_window_us', 'motion_step_us', 'motion_cell_px', 'block_px',
                'bin_us', 'blades_min', 'blades_max', 'angle_bin_us', 'max_candidates')
        for key in ints:
            v = getattr(self, key)
            if isinstance(v, bool) or int(v) != v or int(v) <= 0:
                raise ValueError(f'{key} must be a positive integer, got {v!r}')
            object.__setattr__(self, key, int(v))
        for key in ('motion_min_corr', 'motion_max_px_per_ms', 'min_rate_hz_px',
                    'periodicity_min', 'rpm_min', 'rpm_max', 'radius_min_px',
                    'radius_max_px', 'ring_inner', 'ring_outer', 'coherence_min',
                    'consistency_min', 'rate_tolerance', 'squash_min', 'vortex_votes_min'):
            v = float(getattr(self, key))
            if not math.isfinite(v) or v < 0.0:
                raise ValueError(f'{key} must be finite and >= 0, got {v!r}')
            object.__setattr__(self, key, v)
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
