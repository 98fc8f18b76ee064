# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Gauss-Newton pose refinement of HelixTrack (Sec. 3.5, Eq. loss, supplement S1).

Per event the GN accumulator adds the phase, radial, polarity and soft
annulus residuals with their analytic Jacobians (S1) to the upper triangle of
the 6x6 normal matrix A and the gradient g, and sums the soft band
occupancies of the Balanced Tip Occupancy (BTO) term with their Jacobians.
At a pose trigger :func:`_solve` adds the BTO penalties and the perspective
regulariser, damps the diagonal, solves A dq = -g (Cholesky) and applies
q <- q + Gamma dq; then A and g are multiplied by the forgetting factor rho.

Parameters are q_core = [log s, psi, tx, ty, p31, p32]. Phase residuals use
phi_eff = phi - zeta B psi: for zeta = +1 this is the paper's phi - B psi;
for zeta = -1 the sign of the psi term must flip to keep the paper's
invariance d eps / d psi = 0 (a rotation by psi shifts theta_zeta by -zeta
psi).

Deviations from the paper, each needed to hold the scale on rotors whose
edge events reach down to the hub (the evidence: docs/DESIGN.md):

- BTO bands are Gaussian weights; p = C_band / (C_band + C_core), bounded
  (``bto_ratio`` 0: the main text's C_band / (C_core + eps)); the lower
  bound on p_in then pins the tip. Each bound costs a squared hinge
  (``bto_hinge`` 0: the paper's softplus, gn_solve notes).
- The BTO penalty and the perspective regulariser are multiplied by the
  batch's event count N (``bto_weight_n`` 0: once per batch, Eq. loss), so
  the BTO term can resist the radial term's outward pull.
- The solve steps log s and gives psi the curvature of log s
  (``gn_log_scale`` 0 and ``gn_psi_stiff`` 0: Eq. 1's s, plain GN).
- Polarity offsets (``pol_adapt``): c+ / c- are the ring-weighted circular
  means of the ON / OFF residuals, so the polarity term has no bias that
  drags centre and perspective.
- Polarity-centred phase residual (``ekf_polarity``): a blade has two
  edges (leading OFF, trailing ON for dark blades), so the residuals of
  Eq. (3) are bimodal; with h = (c+ - c-) / 2 the EKF and the GN phase term
  use eps - h for ON and eps + h for OFF events and both edges agree on the
  blade centre. h = 0 is the paper.

The kernels live in :mod:`gn_accumulate` (per event) and :mod:`gn_solve`
(per pose step), the vector layouts in :mod:`gn_layout`; this module holds
the array API (:func:`event_terms`, :func:`normal_equations`,
:func:`objective`, :func:`bto_occupancy`, :class:`PoseGN`).
"""

import math

import numpy as np

from helixtrack_ros.core.gn_accumulate import _accumulate, _accumulate_batch, _event_terms_kernel
from helixtrack_ros.core.gn_layout import (
    _BTO_EPS,
    ACC_A,
    ACC_FAST,
    ACC_G,
    ACC_LEN,
    ACC_LOSS,
    ACC_N,
    ACC_POL,
    ACC_SEC,
    G_B,
    G_BWN,
    G_COFF,
    G_CON,
    G_FIXT,
    G_LBTO,
    G_LEN,
    G_LREG,
    G_POLADAPT,
    G_POLH,
    G_ZETA,
    MAX_SECTORS,
    SEC_C,
    SEC_DC,
    SEC_LEN,
    _set_bands,
    pack_gn_params,
)
from helixtrack_ros.core.gn_solve import _bto_add, _solve, _system
from helixtrack_ros.core.homography import _POSE_LEN, _pack_pose
from helixtrack_ros.core.params import TrackerParams

# the public API, and the names that other modules import from here (the kernels and the
# layout moved to gn_accumulate, gn_solve and gn_layout in issue #12)
__all__ = ['PoseGN', 'bto_occupancy', 'event_terms', 'normal_equations', 'objective',
           'pack_gn_params', 'ACC_A', 'ACC_FAST', 'ACC_G', 'ACC_LEN', 'ACC_N', 'ACC_POL',
           'ACC_SEC', 'G_B', 'G_COFF', 'G_CON', 'G_FIXT', 'G_LEN', 'G_POLADAPT', 'G_POLH',
           'G_ZETA', 'MAX_SECTORS', 'SEC_LEN', '_accumulate', '_set_bands', '_solve']


def _check_batch(x, y, p, phi_eff):
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    p = np.ascontiguousarray(p, dtype=np.uint8)
    phi_eff = np.ascontiguousarray(phi_eff, dtype=np.float64)
    n = x.shape[0]
    if x.ndim != 1 or y.shape != (n,) or p.shape != (n,) or phi_eff.shape != (n,):
        raise ValueError('x, y, p and phi_eff must be 1-D arrays of equal length')
    return x, y, p, phi_eff


def _check_q(q_core):
    q = np.array(q_core, dtype=np.float64)
    if q.shape != (6,) or not np.all(np.isfinite(q)):
        raise ValueError('q_core must be a finite array of shape (6,)')
    return q


def event_terms(q_core: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray,
                phi_eff_rad: np.ndarray, gn_params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residuals and Jacobians of every per-event term of Eq. (loss) (S1).

    Parameters
    ----------
    q_core : numpy.ndarray
        [log s, psi, tx, ty, p31, p32].
    x, y, p : numpy.ndarray
        Event pixels and polarities.
    phi_eff_rad : numpy.ndarray
        Effective phase phi - zeta B psi at each event's time (psi of q_core).
    gn_params : numpy.ndarray
        From :func:`pack_gn_params`.

    Returns
    -------
    res : numpy.ndarray
        (n, 6): eps_phi, eps_r, eps_pol, eps_in, eps_out, gate w_vm w_ring.
    jac : numpy.ndarray
        (n, 5, 6): d(eps_phi, eps_r, eps_pol, eps_in, eps_out)/dq_core.
    """
    q = _check_q(q_core)
    x, y, p, phi_eff = _check_batch(x, y, p, phi_eff_rad)
    pose = np.empty(_POSE_LEN)
    _pack_pose(q, pose)
    res = np.empty((x.shape[0], 6))
    jac = np.empty((x.shape[0], 5, 6))
    _event_terms_kernel(pose, np.asarray(gn_params, dtype=np.float64), x, y, p, phi_eff,
                        res, jac)
    return res, jac


def _batch_accumulators(q_core, x, y, p, phi_eff_rad, gn_params):
    """Validate a batch and accumulate its normal-equation terms at q (S1)."""
    q = _check_q(q_core)
    x, y, p, phi_eff = _check_batch(x, y, p, phi_eff_rad)
    prm = np.array(gn_params, dtype=np.float64)
    pose = np.empty(_POSE_LEN)
    _pack_pose(q, pose)
    _set_bands(prm, math.exp(q[0]))
    acc = np.zeros(ACC_LEN)
    _accumulate_batch(acc, prm, pose, x, y, p, phi_eff)
    return q, prm, acc


def normal_equations(q_core: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray,
                     phi_eff_rad: np.ndarray,
                     gn_params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GN system of a batch at q: returns (A, g, acc) with A, g as in S1 (no damping)."""
    q, prm, acc = _batch_accumulators(q_core, x, y, p, phi_eff_rad, gn_params)
    A = np.empty((6, 6))
    g = np.empty(6)
    _system(acc, prm, q, A, g)
    return A, g, acc


def objective(q_core: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray,
              phi_eff_rad: np.ndarray, gn_params: np.ndarray) -> float:
    """Batch objective L(q) of Eq. (loss) with gates recomputed at q.

    phi_eff_rad is the effective phase for the psi of ``q_core``.
    """
    q, prm, acc = _batch_accumulators(q_core, x, y, p, phi_eff_rad, gn_params)
    A = np.zeros((6, 6))
    g = np.zeros(6)
    # BTO and regulariser per batch event (times N), or once per batch (Eq. loss)
    n = acc[ACC_N] if prm[G_BWN] != 0.0 else 1.0
    value = acc[ACC_LOSS] + _bto_add(A, g, acc, prm, prm[G_LBTO] * n)
    value += 0.5 * prm[G_LREG] * n * (q[4] ** 2 + q[5] ** 2)
    return float(value)


def bto_occupancy(q_core: np.ndarray, x: np.ndarray, y: np.ndarray,
                  gn_params: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """p_in, p_out of the BTO term over all sectors and their gradients dp/dq_core (S1)."""
    q = _check_q(q_core)
    n = np.asarray(x).shape[0]
    x, y, p, phi = _check_batch(x, y, np.zeros(n, np.uint8), np.zeros(n))
    prm = np.array(gn_params, dtype=np.float64)
    pose = np.empty(_POSE_LEN)
    _pack_pose(q, pose)
    _set_bands(prm, math.exp(q[0]))
    acc = np.zeros(ACC_LEN)
    _accumulate_batch(acc, prm, pose, x, y, p, phi)
    sec = acc[ACC_SEC:ACC_SEC + SEC_LEN * MAX_SECTORS].reshape(MAX_SECTORS, SEC_LEN)
    c = sec[:, SEC_C:SEC_C + 3].sum(axis=0)
    dc = sec[:, SEC_DC:SEC_DC + 18].sum(axis=0).reshape(3, 6)
    out = []
    for band in (1, 2):
        den = c[band] + c[0] + _BTO_EPS
        out.append((c[band] / den, (c[0] * dc[band] - c[band] * dc[0]) / den ** 2))
    return float(out[0][0]), float(out[1][0]), out[0][1], out[1][1]


class PoseGN:
    """Array-backed GN pose refiner (one rotor): accumulate batches, solve.

    Parameters
    ----------
    q_core : numpy.ndarray
        Initial [log s, psi, tx, ty, p31, p32].
    params : TrackerParams
        Weights, bands, gains, damping and forgetting.
    blades : int
        B.
    zeta : int
        Rotation sign +1 / -1.
    """

    def __init__(self, q_core: np.ndarray, params: TrackerParams, blades: int,
                 zeta: int) -> None:
        if zeta not in (-1, 1) or not 1 <= int(blades) <= 16:
            raise ValueError('PoseGN: zeta must be +-1 and blades in 1..16')
        self.q = _check_q(q_core)
        self.prm = pack_gn_params(params, int(blades), int(zeta))
        self.pose = np.empty(_POSE_LEN)
        _pack_pose(self.q, self.pose)
        _set_bands(self.prm, math.exp(self.q[0]))
        self.acc = np.zeros(ACC_LEN)

    def accumulate(self, x: np.ndarray, y: np.ndarray, p: np.ndarray,
                   phi_rad: np.ndarray) -> int:
        """Add a batch; phi_rad is the EKF phase phi at each event. Returns events used."""
        x, y, p, phi = _check_batch(x, y, p, phi_rad)
        phi_eff = phi - self.prm[G_ZETA] * self.prm[G_B] * self.q[1]
        return int(_accumulate_batch(self.acc, self.prm, self.pose, x, y, p, phi_eff))

    def solve(self, keep_gradient: bool = True) -> bool:
        """One damped GN step (q updated in place); returns True if q changed."""
        return bool(_solve(self.acc, self.prm, self.q, self.pose, bool(keep_gradient)))
