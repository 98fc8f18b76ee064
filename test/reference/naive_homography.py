# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive numpy twin of helixtrack_ros.core.homography (matrix inverse, matrix calculus)."""

import numpy as np


def homography(q_core):
    """H(q) of Eq. (1) from q_core = [log s, psi, tx, ty, p31, p32]."""
    s = np.exp(q_core[0])
    c, sn = np.cos(q_core[1]), np.sin(q_core[1])
    return np.array([[s * c, -s * sn, q_core[2]], [s * sn, s * c, q_core[3]],
                     [q_core[4], q_core[5], 1.0]])


def dh_dq(q_core):
    """The six matrices dH/dq_k."""
    s = np.exp(q_core[0])
    c, sn = np.cos(q_core[1]), np.sin(q_core[1])
    d = np.zeros((6, 3, 3))
    d[0, :2, :2] = [[s * c, -s * sn], [s * sn, s * c]]
    d[1, :2, :2] = [[-s * sn, -s * c], [s * c, -s * sn]]
    d[2, 0, 2] = 1.0
    d[3, 1, 2] = 1.0
    d[4, 2, 0] = 1.0
    d[5, 2, 1] = 1.0
    return d


def backwarp(q_core, x, y):
    """u = pi(H^-1 [z; 1]) with numpy's matrix inverse; returns (n, 2)."""
    Hi = np.linalg.inv(homography(q_core))
    zt = Hi @ np.stack([np.asarray(x, float), np.asarray(y, float), np.ones(len(x))])
    return (zt[:2] / zt[2]).T


def backwarp_jacobian(q_core, x, y):
    """du/dq via d(H^-1) = -H^-1 dH H^-1 and the quotient rule; returns u, (n, 2, 6)."""
    H = homography(q_core)
    Hi = np.linalg.inv(H)
    dH = dh_dq(q_core)
    u = backwarp(q_core, x, y)
    J = np.zeros((len(x), 2, 6))
    for i in range(len(x)):
        zt = np.array([x[i], y[i], 1.0])
        ut = Hi @ zt
        for k in range(6):
            dut = -Hi @ dH[k] @ Hi @ zt
            J[i, :, k] = (dut[:2] * ut[2] - ut[:2] * dut[2]) / ut[2] ** 2
    return u, J
