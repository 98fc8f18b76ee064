# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Tracker parameters and rotor initialisation.

:class:`TrackerParams` holds every tunable number of the HelixTrack tracker.
Defaults are the paper's settings (supplement S3) completed with the values of
the authors' released configuration (see ``shared/notes/helixtrack-facts.md``);
where this package deliberately differs the field description says so.
:class:`RotorInit` is the coarse initial state of one rotor (the detector
output the paper assumes). Named configurations (``paper``, ``release``,
``default``) and the list of deviations from the paper are in
:mod:`helixtrack_ros.core.presets`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
import math
from typing import Any

from helixtrack_ros.core.declared import Description, check_fields, declared, describe


@declared('tracker_params.json')
class TrackerParams:
    """Every parameter of the HelixTrack tracker (immutable).

    Each field is declared once, with its default, range, unit and meaning,
    in ``tracker_params.json`` (:mod:`helixtrack_ros.core.declared`;
    :meth:`describe`, validated on construction); an integer default makes
    an integer field. Defaults: paper supplement S3 (lambda_*, r_in, r_out,
    gamma_t) and the released configuration (kappa, P0, sigma_ring, BTO
    bands, Huber thresholds, damping, forgetting, minimum batch, 100 ms pose
    timer). The deliberate differences from the paper and the release, and
    the additions beyond it (fast translation step, motion model, health),
    are switches listed in :data:`helixtrack_ros.core.presets.DEVIATIONS`,
    measured in docs/DEVIATIONS.md; preset ``paper`` turns them off. A
    single switch set to the paper's value does not make the tracker the
    paper's.
    """

    def __post_init__(self) -> None:
        """Check types and ranges; raise ValueError naming the field."""
        check_fields(self, 'tracker parameter')
        if self.r_out <= self.r_in:
            raise ValueError(f'tracker parameter r_out={self.r_out} must exceed '
                             f'r_in={self.r_in}')
        if self.gate_rpm_max <= self.gate_rpm_min:
            raise ValueError(f'tracker parameter gate_rpm_max={self.gate_rpm_max} must exceed '
                             f'gate_rpm_min={self.gate_rpm_min}')

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrackerParams:
        """Build parameters from a mapping; missing keys keep their default.

        Raises
        ------
        ValueError
            A key is unknown or a value is not a number / out of range.
        """
        known = {f.name for f in fields(cls)}
        for key in d:
            if key not in known:
                raise ValueError(f'unknown tracker parameter {key!r}')
        return cls(**dict(d))

    def to_dict(self) -> dict[str, float | int]:
        """Return all fields as a plain dict."""
        return asdict(self)

    @classmethod
    def describe(cls) -> dict[str, Description]:
        """Describe every field: name -> (description, unit, min, max)."""
        return describe(cls)


@dataclass(frozen=True)
class RotorInit:
    """Coarse initial state of one rotor (detector output).

    Attributes
    ----------
    name : str
        Rotor name (non-empty).
    center_px : tuple of float
        Rotor centre in the image (x, y) [px] = (tx, ty).
    radius_px : float
        Blade tip radius [px] = homography scale s (> 0).
    rpm_shaft : float
        Initial shaft RPM (> 0).
    blades : int
        Blade count B (1..16).
    direction : int
        +1 / -1 (see docs/ARCHITECTURE.md) or 0 = estimate.
    psi_rad : float
        In-plane rotation psi [rad].
    perspective : tuple of float
        (p31, p32) of the homography.
    rpm_range : tuple of float
        Plausible shaft RPM (min, max) of this rotor; (0, 0): the tracker's
        ``gate_rpm_min`` / ``gate_rpm_max``.
    """

    name: str
    center_px: tuple[float, float]
    radius_px: float
    rpm_shaft: float
    blades: int
    direction: int = 0
    psi_rad: float = 0.0
    perspective: tuple[float, float] = (0.0, 0.0)
    rpm_range: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        """Validate; raise ValueError naming the field."""
        if not isinstance(self.name, str) or not self.name:
            raise ValueError('rotor name must be a non-empty string')
        try:
            cx, cy = (float(v) for v in self.center_px)
        except (TypeError, ValueError):
            raise ValueError(f'rotor {self.name}: center_px must be two numbers') from None
        object.__setattr__(self, 'center_px', (cx, cy))
        try:
            px, py = (float(v) for v in self.perspective)
        except (TypeError, ValueError):
            raise ValueError(f'rotor {self.name}: perspective must be two numbers') from None
        object.__setattr__(self, 'perspective', (px, py))
        for key in ('radius_px', 'rpm_shaft', 'psi_rad'):
            object.__setattr__(self, key, float(getattr(self, key)))
        if not all(math.isfinite(v) for v in (cx, cy, px, py, self.psi_rad)):
            raise ValueError(f'rotor {self.name}: center_px, perspective and psi_rad must be '
                             'finite')
        if not (math.isfinite(self.radius_px) and self.radius_px > 0.5):
            raise ValueError(f'rotor {self.name}: radius_px must be > 0.5, got '
                             f'{self.radius_px}')
        if not (math.isfinite(self.rpm_shaft) and self.rpm_shaft > 0.0):
            raise ValueError(f'rotor {self.name}: rpm (the shaft RPM) must be > 0, got '
                             f'{self.rpm_shaft}')
        if isinstance(self.blades, bool) or int(self.blades) != self.blades \
                or not 1 <= int(self.blades) <= 16:
            raise ValueError(f'rotor {self.name}: blades must be an integer in 1..16, got '
                             f'{self.blades}')
        object.__setattr__(self, 'blades', int(self.blades))
        if self.direction not in (-1, 0, 1):
            raise ValueError(f'rotor {self.name}: direction must be -1, 0 or +1, got '
                             f'{self.direction}')
        object.__setattr__(self, 'direction', int(self.direction))
        if max(abs(px), abs(py)) >= 0.9:
            raise ValueError(f'rotor {self.name}: |perspective| must be < 0.9')
        try:
            lo, hi = (float(v) for v in self.rpm_range)
        except (TypeError, ValueError):
            raise ValueError(f'rotor {self.name}: rpm_range must be two numbers') from None
        if (lo, hi) != (0.0, 0.0) and not (math.isfinite(hi) and 0.0 <= lo < hi):
            raise ValueError(f'rotor {self.name}: rpm_range must be [min, max] with '
                             f'0 <= min < max, got [{lo}, {hi}]')
        object.__setattr__(self, 'rpm_range', (lo, hi))
