# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Tracker parameters and rotor initialisation.

:class:`TrackerParams` holds every tunable number of the HelixTrack tracker.
Defaults are the paper's settings (supplement S3) completed with the values of
the authors' released configuration (see ``shared/notes/helixtrack-facts.md``);
where this package deliberately differs the field description says so.
:class:`RotorInit` is the coarse initial state of one rotor (the detector
output the paper assumes).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
import math
from typing import Any

# name -> (description, unit, min, max); min/max None = unbounded
_DESCRIBE: dict[str, tuple[str, str, float | None, float | None]] = {
    # --- phase EKF (Sec. 3.3 / 3.4)
    'kappa': ('von Mises concentration of the phase gate w_vm (0 = no gating)', '', 0.0, 1e4),
    'q_jerk': ('white-jerk spectral density of the phase model (paper 400)', 'rad^2/s^5', 0.0,
               1e12),
    'p0_phase_rad2': ('initial variance of the B-fold phase', 'rad^2', 1e-12, 1e6),
    'p0_omega_rad2_s2': ('initial variance of the B-fold phase rate', 'rad^2/s^2', 1e-12, 1e12),
    'p0_alpha_rad2_s4': ('initial variance of the phase acceleration', 'rad^2/s^4', 1e-12,
                         1e16),
    'sigma0_rad2': ('nominal phase noise sigma0^2 of R = sigma0^2 / max(w_vm w_ring, eps); '
                    'default 1/kappa', 'rad^2', 1e-9, 1e3),
    'r_floor': ('eps of R = sigma0^2 / max(w_vm w_ring, eps)', '', 1e-12, 1.0),
    'sigma_ring': ('width of the tip ring gate w_ring around r = 1', 'tip radii', 1e-3, 10.0),
    # --- annulus
    'r_in': ('inner radius of the informative annulus', 'tip radii', 0.0, 10.0),
    'r_out': ('outer radius of the informative annulus', 'tip radii', 0.01, 10.0),
    # --- loss weights (Eq. loss)
    'lambda_phi': ('weight of the phase residual', '', 0.0, 1e6),
    'lambda_r': ('weight of the radial residual', '', 0.0, 1e6),
    'lambda_pol': ('weight of the polarity residual', '', 0.0, 1e6),
    'lambda_band': ('weight of the soft annulus barriers', '', 0.0, 1e6),
    'lambda_bto': ('weight of the balanced tip occupancy penalty (per batch event)', '',
                   0.0, 1e6),
    'lambda_reg': ('weight of the perspective regulariser (p31^2 + p32^2, per batch event)', '',
                   0.0, 1e9),
    'pol_c_on_rad': ('expected phase residual c+ of ON events', 'rad', -math.pi, math.pi),
    'pol_c_off_rad': ('expected phase residual c- of OFF events', 'rad', -math.pi, math.pi),
    'pol_adapt': ('1: c+ / c- follow the circular mean of the ON / OFF phase residuals; '
                  '0: fixed (paper)', '', 0, 1),
    'ekf_polarity': ('1: phase residuals centred by polarity, eps -+ (c+ - c-) / 2 for ON / '
                     'OFF events (both blade edges agree); 0: paper', '', 0, 1),
    'pol_scale': ('c_pol of the polarity residual', '', 0.0, 1e3),
    'band_scale': ('c_b of the soft annulus barriers', '', 0.0, 1e3),
    'band_tau': ('softplus temperature of the annulus barriers', 'tip radii', 1e-4, 10.0),
    # --- balanced tip occupancy (S1)
    'bto_sigma_core': ('width of the core occupancy band at r = 1', 'tip radii', 1e-4, 1.0),
    'bto_delta': ('offset of the inside / outside bands from r = 1', 'tip radii', 0.0, 1.0),
    'bto_sigma_band': ('width of the inside / outside occupancy bands', 'tip radii', 1e-4, 1.0),
    'bto_min_px': ('lower bound of every band width and offset', 'px', 0.0, 100.0),
    'bto_sectors': ('angular sectors with their own BTO occupancies (1 = paper)', '', 1,
                    16),
    'bto_tau': ('softplus temperature of the occupancy penalties', '', 1e-4, 10.0),
    'bto_p_in_min': ('lower bound of p_in = C_in / (C_in + C_core) per sector (negative = off)',
                     '', -1.0, 100.0),
    'bto_p_in_max': ('upper bound of p_in (negative = off)', '', -1.0, 100.0),
    'bto_p_out_min': ('lower bound of p_out = C_out / (C_out + C_core) (negative = off)', '',
                      -1.0, 100.0),
    'bto_p_out_max': ('upper bound of p_out (negative = off)', '', -1.0, 100.0),
    # --- robust weights
    'huber_phi_rad': ('Huber threshold of the phase residual', 'rad', 1e-6, 10.0),
    'huber_r': ('Huber threshold of the radial residual', 'tip radii', 1e-6, 10.0),
    # --- Gauss-Newton
    'gn_damping': ('diagonal damping mu: A_ii <- A_ii (1 + mu) + mu', '', 0.0, 1e6),
    'gamma_scale': ('step gain of log-scale', '', 0.0, 100.0),
    'gamma_rot': ('step gain of the in-plane rotation psi', '', 0.0, 100.0),
    'gamma_t': ('step gain of the translation tx, ty', '', 0.0, 100.0),
    'gamma_persp': ('step gain of the perspective terms p31, p32 (paper 1.0)', '', 0.0, 100.0),
    'gn_forget': ('forgetting factor rho of the normal equations after a solve', '', 0.0, 1.0),
    'gn_min_events': ('a pose batch with fewer in-annulus events is not solved (deferred)', '',
                      0, 1e9),
    'gn_target_events': ('GN accumulates every k-th in-annulus event, k chosen so a pose batch '
                         'holds about this many (0 = every event, as the paper)', '', 0, 1e9),
    'gn_max_step': ('trust region: a solve moves the tip circle by at most this many tip '
                    'radii', 'tip radii', 1e-6, 10.0),
    'pose_timer_us': ('pose solve also when this much stream time passed (0 = off)', 'us',
                      0, 1e12),
    'pose_max_events': ('pose solve also after this many in-annulus events (0 = off)', '',
                        0, 1e12),
    # --- fast translation step and motion model (beyond the paper, see tracker notes)
    'pose_fast_us': ('translation-only pose step from the phase term on this grid of stream '
                     'time (0 = off, paper)', 'us', 0, 1e9),
    'pose_fast_rpm': ('the fast step runs while the shaft RPM is below this (default 1e6: '
                      'always; 3000 restricts it to low RPM, where a half turn, the '
                      "paper's pose trigger, takes longer than 10 ms for B = 2)", 'RPM',
                      0.0, 1e6),
    'pose_fast_gain': ('gain of the fast Newton step (motion_model 0)', '', 0.0, 2.0),
    'pose_fast_max_step': ('trust region of the fast translation step', 'tip radii', 1e-6,
                           10.0),
    'pose_fast_damping': ('relative diagonal damping of the fast Newton step (motion_model 0)',
                          '', 0.0, 1e6),
    'pose_fast_min_weight': ('a fast step needs at least this sum of phase gates', '', 0.0,
                             1e12),
    'pose_fast_forget': ('forgetting factor of the fast translation system after a step '
                         '(without the motion model)', '', 0.0, 1.0),
    'pose_fast_aniso': ('the fast step ignores a direction whose information is below this '
                        'fraction of the other one (eigenvalue ratio; 0 = keep both)', '',
                        0.0, 1.0),
    'pose_acq_gain': ('while the phase is acquired, the fast step moves the centre by this '
                      'times the centroid of the disc events', '', 0.0, 2.0),
    'pose_fast_info': ('information per unit of the phase-term system, as a measurement of '
                       'the motion Kalman filter', '1/px^2', 1e-6, 1e9),
    'motion_model': ('1: while the fast step runs, a Kalman filter on the centre and its image '
                     'velocity propagates the pose between steps (constant velocity); 0: '
                     'damped Newton steps, the pose constant between them', '', 0, 1),
    'motion_step_us': ('the motion model moves the centre on this grid of stream time', 'us',
                       50, 1e6),
    'motion_hold_us': ('the velocity is dropped when no fast step applied for this long',
                       'us', 1000, 1e8),
    'motion_max_rs': ('largest image speed of the motion model', 'tip radii/s', 0.0, 1e4),
    'motion_accel': ('white-acceleration density of the motion Kalman filter',
                     'tip radii^2/s^3', 0.0, 1e12),
    'motion_gate': ('innovation gate of the motion Kalman filter: a fast step whose squared '
                    'Mahalanobis distance exceeds this has its information scaled down '
                    '(0 = off)', '', 0.0, 1e6),
    'motion_p0_pos': ('initial position standard deviation of the motion Kalman filter',
                      'tip radii', 1e-6, 10.0),
    'motion_p0_vel': ('initial velocity standard deviation of the motion Kalman filter',
                      'tip radii/s', 1e-6, 1e4),
    # --- health (beyond the paper, see core.health)
    'health_window_us': ('health statistics are evaluated on windows of this length', 'us',
                         500, 1e6),
    'health_min_tip_events': ('fewest tip-band events for a window to judge phase coherence '
                              'and tip spill', '', 1, 1e9),
    'health_coherence_min': ('phase coherence (mean cos of the tip-band phase residuals) '
                             'below this is bad', '', -1.0, 1.0),
    'health_coherence_rel': ('coherence below this fraction of its slow reference is bad', '',
                             0.0, 1.0),
    'health_spill_max': ('tip spill (events just outside the tip / both bands) above this is '
                         'bad', '', 0.0, 1.0),
    'health_spill_rel': ('tip spill above its slow reference plus this is bad', '', 0.0, 1.0),
    'health_starve_rel': ('in-annulus event rate below this fraction of its slow reference is '
                          'starvation', '', 0.0, 1.0),
    'health_scale_tol': ('|log-scale - slow reference| above this is scale drift', '', 0.0,
                         10.0),
    'health_persp_tol': ('change of the foreshortening |p| |t| / s from its slow reference '
                         'above this is perspective drift', '', 0.0, 10.0),
    'health_rpm_std_rel': ('RPM standard deviation above this fraction of the RPM is '
                           'uncertain', '', 0.0, 10.0),
    'health_lost_us': ('bad windows for this long make a DEGRADED rotor LOST', 'us', 0, 1e9),
    'health_recover_us': ('good windows for this long make a rotor TRACKING again', 'us', 0,
                          1e9),
    'health_ref_tau_us': ('time constant of the slow references of rate, coherence and spill',
                          'us', 1000, 1e9),
    'health_pose_tau_us': ('time constant of the slow references of scale and perspective',
                           'us', 1000, 1e9),
    # --- plausibility gates: crossing one makes the rotor LOST at once
    'gate_rpm_min': ('shaft RPM below this is implausible (per rotor: rpm_range)', 'RPM', 0.0,
                     1e7),
    'gate_rpm_max': ('shaft RPM above this is implausible (per rotor: rpm_range)', 'RPM', 1.0,
                     1e7),
    'gate_accel_rpm_s': ('shaft RPM changing faster than this between health windows is '
                         'implausible (0: off)', 'RPM/s', 0.0, 1e9),
    'gate_scale_rel': ('tip radius leaving [1 / (1 + g), 1 + g] times its slow reference is '
                       'implausible (0: off)', '', 0.0, 100.0),
    'gate_center_step': ('rotor centre moving more than this within one health window is '
                         'implausible (0: off)', 'tip radii', 0.0, 100.0),
    # --- rotation sign / phase acquisition
    'sign_events': ('in-ring events kept (evenly thinned) for the rotation-sign and phase '
                    'acquisition', '', 16, 1e6),
    'sign_turns': ('the acquisition window spans at least this many predicted shaft turns', '',
                   0.0, 100.0),
    'sign_max_us': ('the acquisition window lasts at most this long (caps sign_turns for a low '
                    'initial RPM)', 'us', 1000, 1e8),
    'sign_margin': ('relative lead the winning rotation sign needs, else +1', '', 0.0, 10.0),
    'sign_rpm_span': ('relative RPM search span of the acquisition (+-)', '', 0.0, 0.95),
    # --- region of interest
    'bbox_margin_px': ('margin around the projected r_out circle of bbox_px()', 'px', 0.0,
                       1e4),
}

_INT_FIELDS = {'pol_adapt', 'ekf_polarity', 'bto_sectors', 'gn_min_events', 'gn_target_events',
               'pose_timer_us', 'pose_max_events', 'sign_events', 'sign_max_us',
               'pose_fast_us', 'motion_model', 'motion_step_us', 'motion_hold_us',
               'health_window_us', 'health_min_tip_events', 'health_lost_us',
               'health_recover_us', 'health_ref_tau_us', 'health_pose_tau_us'}


@dataclass(frozen=True)
class TrackerParams:
    """Every parameter of the HelixTrack tracker (immutable).

    The field meanings, units and ranges are in :meth:`describe`. Defaults:
    paper supplement S3 (lambda_*, r_in, r_out, gamma_t)
    and the released configuration (kappa, P0, sigma_ring, BTO bands, Huber
    thresholds, damping, forgetting, minimum batch, 100 ms pose timer).

    Notes
    -----
    Deliberate differences from the paper / release (details in the modules;
    on a synthetic rotor with edge events down to the hub they take the
    shaft-RPM error from 0.3-0.5 % to about 0.001 % and hold the scale
    within 2 % where the paper's terms let it drift by up to 30 %):

    - ``q_jerk = 4e6`` (paper 400): with 400 the EKF cannot follow the 30-80 %
      RPM sweeps of the project's simulator at 3-15 M events/s and loses
      lock (up to 19 % shaft-RPM error on ``quadcopter_4m``); 4e6 tracks
      them (<= 0.04 %) and costs < 0.01 % on a constant-speed rotor. A
      drone motor's jerk (1e5 rad/s^3 over tens of ms) is of that order.
    - ``sigma0_rad2``: the paper's heteroscedastic R = sigma0^2 / max(w_vm
      w_ring, eps) is used (the release drops w_vm); sigma0^2 = 1 / kappa
      makes it equal the release's R for events on the predicted phase.
    - ``ekf_polarity`` / ``pol_adapt``: phase residuals centred by polarity
      with offsets learnt from the data (two-edge blades, pose_gn notes).
    - BTO: Gaussian bands of equal width around the tip (``bto_*``), bounded
      ratios p = C_band / (C_band + C_core), squared-hinge penalties,
      ``bto_sectors`` angular sectors, weight per batch event
      (``lambda_bto``, likewise ``lambda_reg``).
    - ``gamma_persp = 0.1`` (paper 1.0; its own sweep tried 0.1): the
      perspective terms move the image of the tip far from the rotor centre
      (z ~ t p^T u) and otherwise absorb centre errors for a while.
    - ``gn_max_step``: trust region on the tip circle; psi gets the
      stiffness of log-scale (it is unobservable by construction).
    - ``gn_target_events = 3000``: Gauss-Newton accumulates a deterministic
      subsample of in-annulus events (speed); 0 restores the paper. Measured
      on the 1 s quadcopter scenes, egomotion 1-4 (benchmarks/RESULTS.md):
      against 6000 the shaft-RPM errors are unchanged (worst MArE 0.060 vs
      0.057 %), the worst scale error grows from 2.8 to 3.1 %, and tracking
      at 4 m costs 30 % less (143 vs 204 ns per event).
    - ``sign_*``: rotation sign and initial phase / rate from a window of
      at least ``sign_turns`` shaft turns (rotation_sign notes).

    Beyond the paper (tracker and health notes):

    - ``pose_fast_*`` / ``motion_*``: below ``pose_fast_rpm`` (by default
      always) a translation step from the phase term every 1 ms feeds a
      constant-velocity Kalman filter of the rotor centre. Made for the
      paper's low-RPM failure (Sec. 4.4), it also keeps the pose on a rotor
      whose image moves fast under camera motion at any RPM: on the 1 s
      quadcopter scenes at egomotion 5 and 6 the worst rotor MArE drops
      from 32-641 % (rotors lost) to 0.07-0.22 % (benchmarks/RESULTS.md).
      With ``pose_fast_rpm = 0`` the pose updates are the paper's (plus the
      release's timer).
    - ``health_*``: TRACKING / DEGRADED / LOST from phase coherence, tip
      spill, event starvation, scale / perspective drift and RPM
      uncertainty (:mod:`helixtrack_ros.core.health`).
    """

    # phase EKF
    kappa: float = 22.0
    q_jerk: float = 4e6
    p0_phase_rad2: float = 1.0
    p0_omega_rad2_s2: float = 100.0
    p0_alpha_rad2_s4: float = 1e4
    sigma0_rad2: float = 1.0 / 22.0
    r_floor: float = 1e-3
    sigma_ring: float = 0.15
    # annulus
    r_in: float = 0.2
    r_out: float = 1.5
    # loss weights
    lambda_phi: float = 1.0
    lambda_r: float = 1.0
    lambda_pol: float = 0.25
    lambda_band: float = 5.0
    lambda_bto: float = 1.0
    lambda_reg: float = 0.01
    pol_c_on_rad: float = 0.25
    pol_c_off_rad: float = -0.25
    pol_adapt: int = 1
    ekf_polarity: int = 1
    pol_scale: float = 1.0
    band_scale: float = 1.0
    band_tau: float = 0.05
    # balanced tip occupancy
    bto_sigma_core: float = 0.04
    bto_delta: float = 0.1
    bto_sigma_band: float = 0.04
    bto_min_px: float = 1.0
    bto_sectors: int = 8
    bto_tau: float = 0.02
    bto_p_in_min: float = 0.62
    bto_p_in_max: float = 0.68
    bto_p_out_min: float = -1.0
    bto_p_out_max: float = 0.09
    # robust weights
    huber_phi_rad: float = 0.6
    huber_r: float = 0.3
    # Gauss-Newton
    gn_damping: float = 1e-3
    gamma_scale: float = 1.0
    gamma_rot: float = 1.0
    gamma_t: float = 6.0
    gamma_persp: float = 0.1
    gn_forget: float = 0.5
    gn_min_events: int = 2000
    gn_target_events: int = 3000
    gn_max_step: float = 0.02
    pose_timer_us: int = 100_000
    pose_max_events: int = 0
    # fast translation step and motion model
    pose_fast_us: int = 1000
    pose_fast_rpm: float = 1e6
    pose_fast_gain: float = 1.0
    pose_fast_max_step: float = 0.05
    pose_fast_damping: float = 0.05
    pose_fast_min_weight: float = 20.0
    pose_fast_forget: float = 0.5
    pose_fast_info: float = 30.0
    pose_acq_gain: float = 0.5
    pose_fast_aniso: float = 0.2
    motion_model: int = 1
    motion_step_us: int = 500
    motion_hold_us: int = 30_000
    motion_max_rs: float = 40.0
    motion_accel: float = 3e4
    motion_gate: float = 4.0
    motion_p0_pos: float = 0.1
    motion_p0_vel: float = 0.5
    # health
    health_window_us: int = 5000
    health_min_tip_events: int = 30
    health_coherence_min: float = 0.1
    health_coherence_rel: float = 0.35
    health_spill_max: float = 0.6
    health_spill_rel: float = 0.25
    health_starve_rel: float = 0.25
    health_scale_tol: float = 0.15
    health_persp_tol: float = 0.15
    health_rpm_std_rel: float = 0.05
    health_lost_us: int = 20_000
    health_recover_us: int = 10_000
    health_ref_tau_us: int = 200_000
    health_pose_tau_us: int = 1_000_000
    # plausibility gates
    gate_rpm_min: float = 100.0
    gate_rpm_max: float = 60_000.0
    gate_accel_rpm_s: float = 500_000.0
    gate_scale_rel: float = 0.5
    gate_center_step: float = 0.35
    # rotation sign / phase acquisition
    sign_events: int = 5000
    sign_turns: float = 0.5
    sign_max_us: int = 200_000
    sign_margin: float = 0.02
    sign_rpm_span: float = 0.3
    # region of interest
    bbox_margin_px: float = 4.0

    def __post_init__(self) -> None:
        """Check types and ranges; raise ValueError naming the field."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f'tracker parameter {f.name} must be a number, got {value!r}')
            if f.name in _INT_FIELDS:
                if float(value) != int(value):
                    raise ValueError(f'tracker parameter {f.name} must be an integer, got '
                                     f'{value!r}')
                object.__setattr__(self, f.name, int(value))
            else:
                object.__setattr__(self, f.name, float(value))
            value = getattr(self, f.name)
            if not math.isfinite(value):
                raise ValueError(f'tracker parameter {f.name} must be finite, got {value!r}')
            _, _, lo, hi = _DESCRIBE[f.name]
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
        return {f.name: _DESCRIBE[f.name] for f in fields(cls)}


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
