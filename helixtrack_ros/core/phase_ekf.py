# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Phase EKF of HelixTrack: white-jerk dynamics (Sec. 3.3) and gated update (Sec. 3.4).

State x = [phi, omega, alpha] (B-fold helical phase [rad], its rate
[rad/s] and acceleration [rad/s^2]); covariance P is symmetric 3x3 and the
kernels carry its six unique entries (P00, P01, P02, P11, P12, P22) as
scalars. The scalar kernels here are shared by :class:`PhaseEKF` (a small
array-backed wrapper used by tests and tools) and by the tracker kernel.

Measurement noise: the paper's heteroscedastic
R = sigma0^2 / max(w_vm w_ring, eps) is used. The release instead uses
R = 1 / max(1e-3, kappa w_ring), i.e. it drops the von Mises factor: an
event half a blade away from the predicted phase then still pulls with full
weight. Keeping w_vm in R makes such events (noise, the other blade edge)
nearly harmless; with sigma0^2 = 1 / kappa both agree on the predicted phase.
The tracker's ``ekf_r_vm`` 0 selects the release's R (preset ``release``).
"""

import math

import numpy as np

from helixtrack_ros.core.fastmath import _cos_poly
from helixtrack_ros.core.jit import fma, fma_inline


@fma_inline
def _predict_s(phi, om, al, P00, P01, P02, P11, P12, P22, dt, q):
    """x <- F x, P <- F P F^T + Q_d over dt [s] (Sec. 3.3, exact for any dt >= 0)."""
    h = 0.5 * dt * dt
    # x = F(dt) x
    phi_n = phi + dt * om + h * al
    om_n = om + dt * al
    # rows of F P: F = [[1, dt, h], [0, 1, dt], [0, 0, 1]]
    a00 = P00 + dt * P01 + h * P02
    a01 = P01 + dt * P11 + h * P12
    a02 = P02 + dt * P12 + h * P22
    a11 = P11 + dt * P12
    a12 = P12 + dt * P22
    # (F P) F^T
    dt2 = dt * dt
    dt3 = dt2 * dt
    # Q_d of the white-jerk model (multiplications: no division on the per-timestamp path)
    n00 = a00 + dt * a01 + h * a02 + q * dt3 * dt2 * (1.0 / 20.0)
    n01 = a01 + dt * a02 + q * dt2 * dt2 * 0.125
    n02 = a02 + q * dt3 * (1.0 / 6.0)
    n11 = a11 + dt * a12 + q * dt3 * (1.0 / 3.0)
    n12 = a12 + q * dt2 * 0.5
    n22 = P22 + q * dt
    return phi_n, om_n, al, n00, n01, n02, n11, n12, n22


@fma_inline
def _update_s(phi, om, al, P00, P01, P02, P11, P12, P22, eps, R):
    """EKF update with C = [1, 0, 0]: K = P C^T / (C P C^T + R), x <- x - K eps (Sec. 3.4)."""
    inv_s = 1.0 / (P00 + R)
    k0 = P00 * inv_s
    k1 = P01 * inv_s
    k2 = P02 * inv_s
    # x <- x - K eps
    phi = phi - k0 * eps
    om = om - k1 * eps
    al = al - k2 * eps
    # P <- (I - K C) P
    n00 = P00 - k0 * P00
    n01 = P01 - k0 * P01
    n02 = P02 - k0 * P02
    n11 = P11 - k1 * P01
    n12 = P12 - k1 * P02
    n22 = P22 - k2 * P02
    return phi, om, al, n00, n01, n02, n11, n12, n22


@fma_inline
def _update_fold_s(phi, om, al, P00, P01, P02, P11, P12, P22, sw, swe, sigma0):
    """Joint update with all events of one timestamp (Sec. 3.4, folded).

    Sequential scalar updates of the same state component at the same time
    with R_i = sigma0 / w_i and residuals eps_i taken at the predicted
    phase equal one update with R = sigma0 / sum w_i and the weighted mean
    residual sum w_i eps_i / sum w_i (information form of the linear KF).
    Here K = P C^T sum w / (P00 sum w + sigma0), and K eps = P C^T g sum w eps
    with g = 1 / (P00 sum w + sigma0): one division.
    """
    g = 1.0 / (P00 * sw + sigma0)
    inv = sw * g
    ge = swe * g
    k0 = P00 * inv
    k1 = P01 * inv
    k2 = P02 * inv
    # x <- x - K eps, P <- (I - K C) P
    return (phi - P00 * ge, om - P01 * ge, al - P02 * ge, P00 - k0 * P00, P01 - k0 * P01,
            P02 - k0 * P02, P11 - k1 * P01, P12 - k1 * P02, P22 - k2 * P02)


@fma_inline
def _gate_log(eps, r, kappa, inv_2sr2):
    """log(w_vm w_ring) = kappa (cos eps - 1) - (r - 1)^2 / (2 sigma_ring^2) (Sec. 3.4)."""
    d = r - 1.0
    return kappa * (_cos_poly(eps) - 1.0) - d * d * inv_2sr2


@fma_inline
def _meas_var(w, sigma0, floor):
    """R = sigma0^2 / max(w_vm w_ring, eps) (Sec. 3.4)."""
    return sigma0 / max(w, floor)


@fma
def _predict_arr(x, P, dt, q):
    r = _predict_s(x[0], x[1], x[2], P[0, 0], P[0, 1], P[0, 2], P[1, 1], P[1, 2], P[2, 2],
                   dt, q)
    _store(x, P, r)


@fma
def _update_arr(x, P, eps, R):
    r = _update_s(x[0], x[1], x[2], P[0, 0], P[0, 1], P[0, 2], P[1, 1], P[1, 2], P[2, 2],
                  eps, R)
    _store(x, P, r)


@fma
def _store(x, P, r):
    x[0] = r[0]
    x[1] = r[1]
    x[2] = r[2]
    P[0, 0] = r[3]
    P[0, 1] = r[4]
    P[1, 0] = r[4]
    P[0, 2] = r[5]
    P[2, 0] = r[5]
    P[1, 1] = r[6]
    P[1, 2] = r[7]
    P[2, 1] = r[7]
    P[2, 2] = r[8]


def transition(dt_s: float) -> np.ndarray:
    """F(dt) = exp(A dt) of the constant-acceleration model (Sec. 3.3)."""
    dt = float(dt_s)
    return np.array([[1.0, dt, 0.5 * dt * dt], [0.0, 1.0, dt], [0.0, 0.0, 1.0]])


def process_noise(dt_s: float, q_jerk: float) -> np.ndarray:
    """Q_d(dt) = q_jerk int_0^dt [t^2/2, t, 1]^T [t^2/2, t, 1] dt' (Sec. 3.3).

    Parameters
    ----------
    dt_s : float
        Time step [s], >= 0.
    q_jerk : float
        White-jerk spectral density [rad^2/s^5], >= 0.
    """
    dt = float(dt_s)
    if dt < 0.0 or q_jerk < 0.0:
        raise ValueError('process_noise: dt_s and q_jerk must be >= 0')
    return q_jerk * np.array([[dt ** 5 / 20, dt ** 4 / 8, dt ** 3 / 6],
                              [dt ** 4 / 8, dt ** 3 / 3, dt ** 2 / 2],
                              [dt ** 3 / 6, dt ** 2 / 2, dt]])


def gate_weight(eps_rad: float, r: float, kappa: float, sigma_ring: float) -> float:
    """w_vm(eps) w_ring(r) = exp(kappa (cos eps - 1)) exp(-(r - 1)^2 / (2 sigma_ring^2))."""
    if not -math.pi <= eps_rad <= math.pi:
        raise ValueError('gate_weight: eps_rad must be wrapped to [-pi, pi]')
    return math.exp(_gate_log(float(eps_rad), float(r), float(kappa),
                              0.5 / float(sigma_ring) ** 2))


class PhaseEKF:
    """Array-backed phase EKF (x = [phi, omega, alpha], P 3x3).

    Parameters
    ----------
    x0 : array_like
        Initial state [phi_rad, omega_rad_s, alpha_rad_s2].
    P0 : array_like
        Initial covariance, (3, 3) symmetric or (3,) diagonal.
    q_jerk : float
        White-jerk spectral density [rad^2/s^5].
    kappa : float
        von Mises concentration of w_vm.
    sigma_ring : float
        Ring-gate width [tip radii].
    sigma0_rad2 : float
        Nominal phase noise sigma0^2 [rad^2].
    r_floor : float
        eps of R = sigma0^2 / max(w, eps).
    """

    def __init__(self, x0, P0, q_jerk: float = 400.0, kappa: float = 22.0,
                 sigma_ring: float = 0.15, sigma0_rad2: float = 1.0 / 22.0,
                 r_floor: float = 1e-3) -> None:
        self.x = np.array(x0, dtype=np.float64).reshape(3)
        P0 = np.asarray(P0, dtype=np.float64)
        self.P = np.diag(P0) if P0.shape == (3,) else np.array(P0, dtype=np.float64)
        if self.P.shape != (3, 3) or not np.allclose(self.P, self.P.T):
            raise ValueError('P0 must be (3,) or a symmetric (3, 3) matrix')
        if min(q_jerk, kappa, sigma0_rad2) < 0 or sigma_ring <= 0 or r_floor <= 0:
            raise ValueError('PhaseEKF: q_jerk, kappa, sigma0_rad2 >= 0; sigma_ring, '
                             'r_floor > 0 required')
        self.q_jerk = float(q_jerk)
        self.kappa = float(kappa)
        self.sigma_ring = float(sigma_ring)
        self.sigma0_rad2 = float(sigma0_rad2)
        self.r_floor = float(r_floor)

    def predict(self, dt_s: float) -> None:
        """Propagate over dt_s [s] (negative dt is treated as 0)."""
        _predict_arr(self.x, self.P, max(float(dt_s), 0.0), self.q_jerk)

    def update(self, eps_rad: float, r: float = 1.0) -> float:
        """Assimilate a wrapped phase residual at radius r; return R used."""
        w = gate_weight(eps_rad, r, self.kappa, self.sigma_ring)
        R = _meas_var(w, self.sigma0_rad2, self.r_floor)
        _update_arr(self.x, self.P, float(eps_rad), R)
        return R
