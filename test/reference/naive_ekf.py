# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive numpy twin of the phase EKF (Sec. 3.3-3.4) and two independent Q_d references."""

import numpy as np

A_CONT = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
L_CONT = np.array([[0.0], [0.0], [1.0]])


def expm_series(M, terms=30):
    """Matrix exponential by its Taylor series (exact here: the matrices are nilpotent)."""
    out = np.eye(M.shape[0])
    term = np.eye(M.shape[0])
    for k in range(1, terms):
        term = term @ M / k
        out = out + term
    return out


def transition(dt):
    """F = expm(A dt)."""
    return expm_series(A_CONT * dt)


def qd_van_loan(dt, q_jerk):
    """Q_d by Van Loan's method: expm([[-A, L q L^T], [0, A^T]] dt)."""
    n = 3
    M = np.zeros((2 * n, 2 * n))
    M[:n, :n] = -A_CONT
    M[:n, n:] = q_jerk * (L_CONT @ L_CONT.T)
    M[n:, n:] = A_CONT.T
    E = expm_series(M * dt)
    F = E[n:, n:].T
    return F @ E[:n, n:]


def qd_integrate(dt, q_jerk, steps=20000):
    """Q_d = int_0^dt F(tau) L q L^T F(tau)^T dtau by the midpoint rule."""
    h = dt / steps
    Q = np.zeros((3, 3))
    for k in range(steps):
        tau = (k + 0.5) * h
        g = transition(tau) @ L_CONT
        Q += q_jerk * (g @ g.T) * h
    return Q


def predict(x, P, dt, q_jerk):
    """x <- F x, P <- F P F^T + Q_d."""
    F = transition(dt)
    return F @ x, F @ P @ F.T + qd_van_loan(dt, q_jerk)


def gate(eps, r, kappa, sigma_ring):
    """w_vm(eps) w_ring(r)."""
    return np.exp(kappa * (np.cos(eps) - 1.0)) * np.exp(-0.5 * ((r - 1.0) / sigma_ring) ** 2)


def update(x, P, eps, R):
    """K = P C^T (C P C^T + R)^-1, x <- x - K eps, P <- (I - K C) P."""
    C = np.array([[1.0, 0.0, 0.0]])
    S = C @ P @ C.T + R
    K = P @ C.T / S
    return x - (K * eps).ravel(), (np.eye(3) - K @ C) @ P
