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

from dataclasses import Field, asdict, dataclass, field, fields
import math
from typing import Any


def _param(default: float, bounds: tuple[float | None, float | None], unit: str,
           description: str) -> Any:
    """Declare a :class:`TrackerParams` field once: default, range, unit and meaning.

    ``bounds`` is the valid [min, max] (None = unbounded); whether the field takes
    integers follows from its ``int`` annotation.
    """
    return field(default=default, metadata={'range': bounds, 'unit': unit,
                                            'description': description})


@dataclass(frozen=True)
class TrackerParams:
    """Every parameter of the HelixTrack tracker (immutable).

    Each field is declared once with its default, range, unit and meaning
    (:meth:`describe`, validated on construction); fields annotated ``int``
    take integers. Defaults: paper supplement S3 (lambda_*, r_in, r_out,
    gamma_t) and the released configuration (kappa, P0, sigma_ring, BTO
    bands, Huber thresholds, damping, forgetting, minimum batch, 100 ms pose
    timer). The deliberate differences from the paper and the release, and
    the additions beyond it (fast translation step, motion model, health),
    are switches listed in :data:`helixtrack_ros.core.presets.DEVIATIONS`,
    measured in docs/DEVIATIONS.md; preset ``paper`` turns them off. A
    single switch set to the paper's value does not make the tracker the
    paper's.
    """

    # phase EKF
    kappa: float = _param(22.0, (0.0, 1e4), '',
                          'von Mises concentration of the phase gate w_vm (0 = no gating)')
    q_jerk: float = _param(4e6, (0.0, 1e12), 'rad^2/s^5',
                           'white-jerk spectral density of the phase model (paper 400)')
    p0_phase_rad2: float = _param(1.0, (1e-12, 1e6), 'rad^2',
                                  'initial variance of the B-fold phase')
    p0_omega_rad2_s2: float = _param(100.0, (1e-12, 1e12), 'rad^2/s^2',
                                     'initial variance of the B-fold phase rate')
    p0_alpha_rad2_s4: float = _param(1e4, (1e-12, 1e16), 'rad^2/s^4',
                                     'initial variance of the phase acceleration')
    sigma0_rad2: float = _param(1.0 / 22.0, (1e-9, 1e3), 'rad^2',
                                'nominal phase noise sigma0^2 of R = sigma0^2 / max(w_vm '
                                'w_ring, eps); default 1/kappa')
    r_floor: float = _param(1e-3, (1e-12, 1.0), '', 'eps of R = sigma0^2 / max(w_vm w_ring, eps)')
    ekf_r_vm: int = _param(1, (0, 1), '',
                           '1: R = sigma0^2 / max(w_vm w_ring, eps), as Sec. 3.4; 0: R = sigma0^2 '
                           '/ max(w_ring, eps), as the release (off-phase events pull with full '
                           'weight)')
    ekf_fold: int = _param(1, (0, 1), '',
                           '1: the events of one timestamp are folded into one EKF update '
                           '(gates at the predicted phase); 0: one update per event with its '
                           'gates re-evaluated, as Sec. 3.4')
    sigma_ring: float = _param(0.15, (1e-3, 10.0), 'tip radii',
                               'width of the tip ring gate w_ring around r = 1')
    # annulus
    r_in: float = _param(0.2, (0.0, 10.0), 'tip radii', 'inner radius of the informative annulus')
    r_out: float = _param(1.5, (0.01, 10.0), 'tip radii',
                          'outer radius of the informative annulus')
    # loss weights
    lambda_phi: float = _param(1.0, (0.0, 1e6), '', 'weight of the phase residual')
    lambda_r: float = _param(1.0, (0.0, 1e6), '', 'weight of the radial residual')
    lambda_pol: float = _param(0.25, (0.0, 1e6), '', 'weight of the polarity residual')
    lambda_band: float = _param(5.0, (0.0, 1e6), '', 'weight of the soft annulus barriers')
    lambda_bto: float = _param(1.0, (0.0, 1e6), '',
                               'weight of the balanced tip occupancy penalty (per batch event)')
    lambda_reg: float = _param(0.01, (0.0, 1e9), '',
                               'weight of the perspective regulariser (p31^2 + p32^2, per '
                               'batch event)')
    pol_c_on_rad: float = _param(0.25, (-math.pi, math.pi), 'rad',
                                 'expected phase residual c+ of ON events')
    pol_c_off_rad: float = _param(-0.25, (-math.pi, math.pi), 'rad',
                                  'expected phase residual c- of OFF events')
    pol_adapt: int = _param(1, (0, 1), '',
                            '1: c+ / c- follow the circular mean of the ON / OFF phase '
                            'residuals; 0: fixed, as Sec. 3.5')
    ekf_polarity: int = _param(1, (0, 1), '',
                               '1: phase residuals centred by polarity, eps -+ (c+ - c-) / 2 '
                               'for ON / OFF events (both blade edges agree); 0: as Eq. 3')
    pol_scale: float = _param(1.0, (0.0, 1e3), '', 'c_pol of the polarity residual')
    band_scale: float = _param(1.0, (0.0, 1e3), '', 'c_b of the soft annulus barriers')
    band_tau: float = _param(0.05, (1e-4, 10.0), 'tip radii',
                             'softplus temperature of the annulus barriers')
    # balanced tip occupancy
    bto_sigma_core: float = _param(0.04, (1e-4, 1.0), 'tip radii',
                                   'width of the core occupancy band at r = 1')
    bto_delta: float = _param(0.1, (0.0, 1.0), 'tip radii',
                              'offset of the inside / outside bands from r = 1')
    bto_sigma_band: float = _param(0.04, (1e-4, 1.0), 'tip radii',
                                   'width of the inside / outside occupancy bands')
    bto_min_px: float = _param(1.0, (0.0, 100.0), 'px',
                               'lower bound of every band width and offset')
    bto_sectors: int = _param(8, (1, 16), '',
                              'angular sectors with their own BTO occupancies (1 = Sec. 3.5)')
    bto_tau: float = _param(0.02, (1e-4, 10.0), '',
                            'softplus temperature of the occupancy penalties')
    bto_p_in_min: float = _param(0.62, (-1.0, 100.0), '',
                                 'lower bound of p_in = C_in / (C_in + C_core) per sector '
                                 '(negative = off)')
    bto_p_in_max: float = _param(0.68, (-1.0, 100.0), '', 'upper bound of p_in (negative = off)')
    bto_p_out_min: float = _param(-1.0, (-1.0, 100.0), '',
                                  'lower bound of p_out = C_out / (C_out + C_core) (negative = '
                                  'off)')
    bto_p_out_max: float = _param(0.09, (-1.0, 100.0), '', 'upper bound of p_out (negative = off)')
    bto_ratio: int = _param(1, (0, 1), '',
                            '1: p = C_band / (C_band + C_core); 0: p = C_band / (C_core + eps), '
                            'as Sec. 3.5 (unbounded when the core band empties)')
    bto_hinge: int = _param(1, (0, 1), '',
                            '1: each bound costs 0.5 softplus_tau(s)^2 (Gauss-Newton form); 0: '
                            "softplus_tau(s) with A += phi''(s) J J^T, as Sec. 3.5 / S1")
    bto_weight_n: int = _param(1, (0, 1), '',
                               '1: lambda_bto and lambda_reg weigh per batch event (times N); '
                               '0: once per batch, as Eq. (loss)')
    # robust weights
    huber_phi_rad: float = _param(0.6, (1e-6, 10.0), 'rad',
                                  'Huber threshold of the phase residual')
    huber_r: float = _param(0.3, (1e-6, 10.0), 'tip radii',
                            'Huber threshold of the radial residual')
    # Gauss-Newton
    gn_damping: float = _param(1e-3, (0.0, 1e6), '',
                               'diagonal damping mu: A_ii <- A_ii (1 + mu) + mu')
    gamma_scale: float = _param(1.0, (0.0, 100.0), '', 'step gain of log-scale')
    gamma_rot: float = _param(1.0, (0.0, 100.0), '', 'step gain of the in-plane rotation psi')
    gamma_t: float = _param(6.0, (0.0, 100.0), '', 'step gain of the translation tx, ty')
    gamma_persp: float = _param(0.1, (0.0, 100.0), '',
                                'step gain of the perspective terms p31, p32 (paper 1.0)')
    gn_forget: float = _param(0.5, (0.0, 1.0), '',
                              'forgetting factor rho of the normal equations after a solve')
    gn_min_events: int = _param(2000, (0, 1e9), '',
                                'a pose batch with fewer in-annulus events is not solved '
                                '(deferred)')
    gn_target_events: int = _param(3000, (0, 1e9), '',
                                   'GN accumulates every k-th in-annulus event, k chosen so a '
                                   'pose batch holds about this many (0 = every event, as Sec. '
                                   '3.5)')
    gn_max_step: float = _param(0.02, (1e-6, 10.0), 'tip radii',
                                'trust region: a solve moves the tip circle by at most this '
                                'many tip radii')
    gn_psi_stiff: int = _param(1, (0, 1), '',
                               '1: the solve gives psi the curvature of log-scale (psi is '
                               'unobservable to first order); 0: plain damped GN, as Sec. 3.5')
    gn_log_scale: int = _param(1, (0, 1), '',
                               '1: the solve steps log s (as the release; gamma_scale acts on '
                               'log s); 0: it steps s, as Eq. (1)')
    pose_timer_us: int = _param(100_000, (0, 1e12), 'us',
                                'pose solve also when this much stream time passed (0 = off)')
    pose_max_events: int = _param(0, (0, 1e12), '',
                                  'pose solve also after this many in-annulus events (0 = off)')
    # fast translation step and motion model
    pose_fast_us: int = _param(1000, (0, 1e9), 'us',
                               'translation-only pose step from the phase term on this grid of '
                               'stream time (0 = off, as Sec. 3.5)')
    pose_fast_rpm: float = _param(1e6, (0.0, 1e6), 'RPM',
                                  'the fast step runs while the shaft RPM is below this '
                                  '(default 1e6: always; 3000 restricts it to low RPM, where a '
                                  "half turn, the paper's pose trigger, takes longer than 10 "
                                  'ms for B = 2)')
    pose_fast_gain: float = _param(1.0, (0.0, 2.0), '',
                                   'gain of the fast Newton step (motion_model 0)')
    pose_fast_max_step: float = _param(0.05, (1e-6, 10.0), 'tip radii',
                                       'trust region of the fast translation step')
    pose_fast_damping: float = _param(0.05, (0.0, 1e6), '',
                                      'relative diagonal damping of the fast Newton step '
                                      '(motion_model 0)')
    pose_fast_min_weight: float = _param(20.0, (0.0, 1e12), '',
                                         'a fast step needs at least this sum of phase gates')
    pose_fast_forget: float = _param(0.5, (0.0, 1.0), '',
                                     'forgetting factor of the fast translation system after a '
                                     'step (without the motion model)')
    pose_fast_info: float = _param(30.0, (1e-6, 1e9), '1/px^2',
                                   'information per unit of the phase-term system, as a '
                                   'measurement of the motion Kalman filter')
    pose_acq_gain: float = _param(0.5, (0.0, 2.0), '',
                                  'while the phase is acquired, the fast step moves the centre '
                                  'by this times the centroid of the disc events')
    pose_fast_aniso: float = _param(0.2, (0.0, 1.0), '',
                                    'the fast step ignores a direction whose information is '
                                    'below this fraction of the other one (eigenvalue ratio; 0 '
                                    '= keep both)')
    motion_model: int = _param(1, (0, 1), '',
                               '1: while the fast step runs, a Kalman filter on the centre and '
                               'its image velocity propagates the pose between steps (constant '
                               'velocity); 0: damped Newton steps, the pose constant between '
                               'them')
    motion_step_us: int = _param(500, (50, 1e6), 'us',
                                 'the motion model moves the centre on this grid of stream '
                                 'time')
    motion_hold_us: int = _param(30_000, (1000, 1e8), 'us',
                                 'the velocity is dropped when no fast step applied for this '
                                 'long')
    motion_max_rs: float = _param(40.0, (0.0, 1e4), 'tip radii/s',
                                  'largest image speed of the motion model')
    motion_accel: float = _param(3e4, (0.0, 1e12), 'tip radii^2/s^3',
                                 'white-acceleration density of the motion Kalman filter')
    motion_gate: float = _param(4.0, (0.0, 1e6), '',
                                'innovation gate of the motion Kalman filter: a fast step '
                                'whose squared Mahalanobis distance exceeds this has its '
                                'information scaled down (0 = off)')
    motion_p0_pos: float = _param(0.1, (1e-6, 10.0), 'tip radii',
                                  'initial position standard deviation of the motion Kalman '
                                  'filter')
    motion_p0_vel: float = _param(0.5, (1e-6, 1e4), 'tip radii/s',
                                  'initial velocity standard deviation of the motion Kalman '
                                  'filter')
    # health
    health_window_us: int = _param(5000, (500, 1e6), 'us',
                                   'health statistics are evaluated on windows of this length')
    health_min_tip_events: int = _param(30, (1, 1e9), '',
                                        'fewest tip-band events for a window to judge phase '
                                        'coherence and tip spill')
    health_coherence_min: float = _param(0.1, (-1.0, 1.0), '',
                                         'phase coherence (mean cos of the tip-band phase '
                                         'residuals) below this is bad')
    health_coherence_rel: float = _param(0.35, (0.0, 1.0), '',
                                         'coherence below this fraction of its slow reference '
                                         'is bad')
    health_spill_max: float = _param(0.6, (0.0, 1.0), '',
                                     'tip spill (events just outside the tip / both bands) '
                                     'above this is bad')
    health_spill_rel: float = _param(0.25, (0.0, 1.0), '',
                                     'tip spill above its slow reference plus this is bad')
    health_starve_rel: float = _param(0.25, (0.0, 1.0), '',
                                      'in-annulus event rate below this fraction of its slow '
                                      'reference is starvation')
    health_scale_tol: float = _param(0.15, (0.0, 10.0), '',
                                     '|log-scale - slow reference| above this is scale drift')
    health_persp_tol: float = _param(0.15, (0.0, 10.0), '',
                                     'change of the foreshortening |p| |t| / s from its slow '
                                     'reference above this is perspective drift')
    health_rpm_std_rel: float = _param(0.05, (0.0, 10.0), '',
                                       'RPM standard deviation above this fraction of the RPM '
                                       'is uncertain')
    health_lost_us: int = _param(20_000, (0, 1e9), 'us',
                                 'bad windows for this long make a DEGRADED rotor LOST')
    health_recover_us: int = _param(10_000, (0, 1e9), 'us',
                                    'good windows for this long make a rotor TRACKING again')
    health_ref_tau_us: int = _param(200_000, (1000, 1e9), 'us',
                                    'time constant of the slow references of rate, coherence '
                                    'and spill')
    health_pose_tau_us: int = _param(1_000_000, (1000, 1e9), 'us',
                                     'time constant of the slow references of scale and '
                                     'perspective')
    # plausibility gates
    gate_rpm_min: float = _param(100.0, (0.0, 1e7), 'RPM',
                                 'shaft RPM below this is implausible (per rotor: rpm_range)')
    gate_rpm_max: float = _param(60_000.0, (1.0, 1e7), 'RPM',
                                 'shaft RPM above this is implausible (per rotor: rpm_range)')
    health_settle_rpm_s: float = _param(3000.0, (0.0, 1e9), 'RPM/s',
                                        'while re-validating, a health window counts as good '
                                        'only if the shaft acceleration changed less than this '
                                        'since the last window (a rate still ringing after a '
                                        'loss is not published; 0: off)')
    health_settle_spill: float = _param(0.05, (0.0, 1.0), '',
                                        'while re-validating, a health window whose tip spill '
                                        'exceeds its usual value by this or more counts as good '
                                        'only if its spill changed by less than this since the '
                                        'last window (a pose still converging biases the rate; '
                                        '0: off)')
    gate_accel_rpm_s: float = _param(500_000.0, (0.0, 1e9), 'RPM/s',
                                     'shaft RPM changing faster than this between health '
                                     'windows is implausible (0: off)')
    gate_scale_rel: float = _param(0.5, (0.0, 100.0), '',
                                   'tip radius leaving [1 / (1 + g), 1 + g] times its slow '
                                   'reference is implausible (0: off)')
    gate_center_step: float = _param(0.35, (0.0, 100.0), 'tip radii',
                                     'rotor centre moving more than this within one health '
                                     'window is implausible (0: off)')
    # rotation sign / phase acquisition
    sign_events: int = _param(5000, (16, 1e6), '',
                              'in-ring events kept (evenly thinned) for the rotation-sign and '
                              'phase acquisition')
    sign_turns: float = _param(0.5, (0.0, 100.0), '',
                               'the acquisition window spans at least this many predicted '
                               'shaft turns')
    sign_max_us: int = _param(200_000, (1000, 1e8), 'us',
                              'the acquisition window lasts at most this long (caps sign_turns '
                              'for a low initial RPM)')
    sign_margin: float = _param(0.02, (0.0, 10.0), '',
                                'relative lead the winning rotation sign needs, else +1')
    sign_rpm_span: float = _param(0.3, (0.0, 0.95), '',
                                  'relative RPM search span of the acquisition (+-)')
    sign_prefix: int = _param(0, (0, 1), '',
                              '1: decide the rotation sign on the first sign_events in-ring '
                              'events, as the release (no minimum window, no thinning); 0: a '
                              'window of at least sign_turns, thinned to sign_events')
    sign_lock_phase: int = _param(1, (0, 1), '',
                                  '1: the phase and rate of the EKF start from the sign '
                                  'statistic; 0: phi = 0 and the initial rate, as the release '
                                  '(the EKF pulls the phase in)')
    # region of interest
    bbox_margin_px: float = _param(4.0, (0.0, 1e4), 'px',
                                   'margin around the projected r_out circle of bbox_px()')

    def __post_init__(self) -> None:
        """Check types and ranges; raise ValueError naming the field."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f'tracker parameter {f.name} must be a number, got {value!r}')
            if _is_int(f):
                if float(value) != int(value):
                    raise ValueError(f'tracker parameter {f.name} must be an integer, got '
                                     f'{value!r}')
                object.__setattr__(self, f.name, int(value))
            else:
                object.__setattr__(self, f.name, float(value))
            value = getattr(self, f.name)
            if not math.isfinite(value):
                raise ValueError(f'tracker parameter {f.name} must be finite, got {value!r}')
            lo, hi = f.metadata['range']
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                raise ValueError(f'tracker parameter {f.name}={value!r} is outside '
                                 f'[{lo}, {hi}]')
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
    def describe(cls) -> dict[str, tuple[str, str, float | None, float | None]]:
        """Describe every field: name -> (description, unit, min, max)."""
        return {f.name: _description(f) for f in fields(cls)}


def _is_int(f: Field) -> bool:
    """True for a field annotated ``int``."""
    return f.type in ('int', int)


def _description(f: Field) -> tuple[str, str, float | None, float | None]:
    """(description, unit, min, max) of a field."""
    lo, hi = f.metadata['range']
    return f.metadata['description'], f.metadata['unit'], lo, hi


# derived tables: name -> (description, unit, min, max); names of the integer fields
_DESCRIBE: dict[str, tuple[str, str, float | None, float | None]] = {
    f.name: _description(f) for f in fields(TrackerParams)}
_INT_FIELDS = frozenset(f.name for f in fields(TrackerParams) if _is_int(f))


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
            raise ValueError(f'rotor {self.name}: rpm_shaft must be > 0, got {self.rpm_shaft}')
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
