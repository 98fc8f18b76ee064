# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Rotor-plane homography H(q) of the paper (Sec. 3.1, Eq. 1-2): warp and Jacobian.

The paper parameterises H by q = [s, psi, tx, ty, p31, p32]; the core works
with q_core = [log s, psi, tx, ty, p31, p32] so that Gauss-Newton steps keep
s > 0. Image points z relate to rotor-plane points u (tip radius 1) by
z ~ H [u; 1]; events are back-warped with the closed-form inverse
u ~ adj(H) [z; 1] (the determinant cancels in the projective division).

The numba kernels work on a packed pose vector (``_POSE_LEN`` floats):
[a, b, tx, ty, p31, p32, adj00 .. adj22] with a = s cos psi, b = s sin psi.
"""

import math

import numpy as np

from helixtrack_ros.core.jit import fma, fma_inline

_POSE_LEN = 15
# 1 / w used for a point on the horizon (w = 0) of the projective division
_INV_W0 = 1e300


@fma
def _pack_pose(q, pose):
    """Fill the packed pose from q_core (Eq. 1 and its adjugate)."""
    s = math.exp(q[0])
    a = s * math.cos(q[1])
    b = s * math.sin(q[1])
    tx = q[2]
    ty = q[3]
    p = q[4]
    r = q[5]
    pose[0] = a
    pose[1] = b
    pose[2] = tx
    pose[3] = ty
    pose[4] = p
    pose[5] = r
    # adj(H) = cofactor matrix transposed
    pose[6] = a - ty * r
    pose[7] = b + tx * r
    pose[8] = -b * ty - a * tx
    pose[9] = -b + ty * p
    pose[10] = a - tx * p
    pose[11] = b * tx - a * ty
    pose[12] = b * r - a * p
    pose[13] = -(a * r + b * p)
    pose[14] = a * a + b * b


@fma
def _backwarp1(pose, zx, zy):
    """u = pi(adj(H) [z; 1]); returns (u_x, u_y, w) with w the third component.

    On the horizon of the rotor plane (w = 0) u is at infinity: 1 / w is taken as
    1e300, so |u| is huge or inf (never nan: adj(H) [z; 1] != 0) and the event
    falls outside every annulus.
    """
    w = pose[12] * zx + pose[13] * zy + pose[14]
    inv = 1.0 / w if w != 0.0 else _INV_W0
    ux = (pose[6] * zx + pose[7] * zy + pose[8]) * inv
    uy = (pose[9] * zx + pose[10] * zy + pose[11]) * inv
    return ux, uy, w


@fma
def _image_x_angle(q):
    """Angle beta [rad] in the rotor plane of the direction the camera sees as image +x at
    the rotor's centre, from q_core.

    The local map of Eq. (1) at u = 0 is J = [[a - tx p, -b - tx r], [b - ty p, a - ty r]];
    beta is the angle of J^-1 e_x (sign-corrected when det J < 0). A blade angle taken from
    beta does not depend on psi's gauge: rotating the plane frame by delta moves both the
    blade angle and beta by -delta (a symmetric rotor's psi is unobservable, Sec. 3.1).
    """
    s = math.exp(q[0])
    a = s * math.cos(q[1])
    b = s * math.sin(q[1])
    tx = q[2]
    ty = q[3]
    j00 = a - tx * q[4]
    j01 = -b - tx * q[5]
    j10 = b - ty * q[4]
    j11 = a - ty * q[5]
    sgn = 1.0 if j00 * j11 - j01 * j10 >= 0.0 else -1.0
    return math.atan2(-sgn * j10, sgn * j11)


@fma
def _forward1(pose, ux, uy):
    """z = pi(H [u; 1]) (Eq. 2); a point u on the horizon (w = 0) goes far away (1e300)."""
    w = pose[4] * ux + pose[5] * uy + 1.0
    if w == 0.0:
        w = 1.0 / _INV_W0
    zx = (pose[0] * ux - pose[1] * uy + pose[2]) / w
    zy = (pose[1] * ux + pose[0] * uy + pose[3]) / w
    return zx, zy


@fma_inline
def _du_dq_s(a, b, p, r, zx, zy, ux, uy):
    """Analytic du/dq_core at an event z with back-warped u, as 12 scalars (row-major 2x6).

    Implicit differentiation of z = pi(H(q) [u; 1]):
    du/dq = -(dz/du)^-1 dz/dq; the common factor 1/w cancels. a = s cos psi,
    b = s sin psi, (p, r) = (p31, p32). Scalars only, so it inlines without
    reference counting. det M = det(A) (1 - p^T A^-1 z) (A: H's upper-left
    block) equals the back-warp's w: it vanishes on the horizon of the rotor
    plane, where u is at infinity; the derivative is returned as 0 there.
    """
    # M = w dz/du
    m00 = a - zx * p
    m01 = -b - zx * r
    m10 = b - zy * p
    m11 = a - zy * r
    det = m00 * m11 - m01 * m10
    if det == 0.0:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    idet = -1.0 / det
    # -(M^-1) = idet * [[m11, -m01], [-m10, m00]]
    i00 = idet * m11
    i01 = -idet * m01
    i10 = -idet * m10
    i11 = idet * m00
    # D = w dz/dq columns: log s, psi, tx, ty, p31, p32
    d0x = a * ux - b * uy
    d0y = b * ux + a * uy
    d1x = -d0y
    d1y = d0x
    d4x = -zx * ux
    d4y = -zy * ux
    d5x = -zx * uy
    d5y = -zy * uy
    return (i00 * d0x + i01 * d0y, i00 * d1x + i01 * d1y, i00, i01,
            i00 * d4x + i01 * d4y, i00 * d5x + i01 * d5y,
            i10 * d0x + i11 * d0y, i10 * d1x + i11 * d1y, i10, i11,
            i10 * d4x + i11 * d4y, i10 * d5x + i11 * d5y)


@fma
def _du_dq(pose, zx, zy, ux, uy, J):
    """Fill J (2x6) with du/dq_core (see :func:`_du_dq_s`)."""
    j = _du_dq_s(pose[0], pose[1], pose[4], pose[5], zx, zy, ux, uy)
    for k in range(6):
        J[0, k] = j[k]
        J[1, k] = j[6 + k]


@fma
def _backwarp_many(pose, x, y, u):
    for i in range(x.shape[0]):
        ux, uy, _ = _backwarp1(pose, float(x[i]), float(y[i]))
        u[i, 0] = ux
        u[i, 1] = uy


@fma
def _jacobian_many(pose, x, y, u, J):
    for i in range(x.shape[0]):
        zx = float(x[i])
        zy = float(y[i])
        ux, uy, _ = _backwarp1(pose, zx, zy)
        u[i, 0] = ux
        u[i, 1] = uy
        _du_dq(pose, zx, zy, ux, uy, J[i])


def _check_q(q: np.ndarray, name: str = 'q') -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (6,):
        raise ValueError(f'{name} must have shape (6,), got {q.shape}')
    if not np.all(np.isfinite(q)):
        raise ValueError(f'{name} must be finite')
    return q


def q_core_from_paper(q: np.ndarray) -> np.ndarray:
    """[s, psi, tx, ty, p31, p32] -> [log s, psi, tx, ty, p31, p32].

    Raises
    ------
    ValueError
        Wrong shape, non-finite entries or s <= 0.
    """
    q = _check_q(q).copy()
    if q[0] <= 0.0:
        raise ValueError(f'scale s must be > 0, got {q[0]}')
    q[0] = math.log(q[0])
    return q


def q_paper_from_core(q_core: np.ndarray) -> np.ndarray:
    """[log s, psi, tx, ty, p31, p32] -> [s, psi, tx, ty, p31, p32]."""
    q = _check_q(q_core, 'q_core').copy()
    q[0] = math.exp(q[0])
    return q


def pack_pose(q_core: np.ndarray) -> np.ndarray:
    """Return the packed pose vector used by the kernels."""
    pose = np.empty(_POSE_LEN)
    _pack_pose(_check_q(q_core, 'q_core'), pose)
    return pose


def homography_from_paper_q(s: float, psi: float, tx: float, ty: float, p31: float,
                            p32: float) -> np.ndarray:
    """H of Eq. (1) from the paper's q = [s, psi, tx, ty, p31, p32] (s itself, not log s).

    The one place outside the numba kernels that writes Eq. (1) out; values
    are taken as given (no checks), so a NaN pose gives a NaN matrix.
    """
    c, sn = math.cos(psi), math.sin(psi)
    return np.array([[s * c, -s * sn, tx], [s * sn, s * c, ty], [p31, p32, 1.0]])


def disc_from_paper_q(s: float, psi: float, tx: float, ty: float) -> tuple[float, float, float]:
    """Centre and tip radius [px] of :func:`homography_from_paper_q`'s H (its h02 / h22,
    h12 / h22, hypot(h00, h10) / |h22|), the same numbers without making the matrix (a
    per-row check of every batch would pay a small numpy array per row)."""
    return tx / 1.0, ty / 1.0, math.hypot(s * math.cos(psi), s * math.sin(psi)) / 1.0


def disc_from_core_q(q_core) -> tuple[float, float, float]:
    """Centre and tip radius [px] of the pose ``q_core`` = [log s, psi, tx, ty, ...] (any
    sequence): :func:`disc_from_paper_q` of its paper q."""
    return float(q_core[2]), float(q_core[3]), math.exp(float(q_core[0]))


def homography(q_core: np.ndarray) -> np.ndarray:
    """H(q) of Eq. (1): 3x3 matrix mapping rotor plane to image.

    Parameters
    ----------
    q_core : numpy.ndarray
        [log s, psi, tx, ty, p31, p32].
    """
    q = _check_q(q_core, 'q_core')
    return homography_from_paper_q(math.exp(q[0]), q[1], q[2], q[3], q[4], q[5])


def homography_inverse(q_core: np.ndarray) -> np.ndarray:
    """Closed-form H(q)^-1 = adj(H) / det(H)."""
    pose = pack_pose(q_core)
    adj = pose[6:15].reshape(3, 3)
    a, b, tx, ty, p, r = pose[:6]
    det = a * adj[0, 0] - b * adj[1, 0] + tx * adj[2, 0]
    return adj / det


def forward(q_core: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Project rotor-plane points u (n, 2) into the image: z = pi(H [u; 1])."""
    u = np.asarray(u, dtype=np.float64)
    if u.ndim != 2 or u.shape[1] != 2:
        raise ValueError(f'u must have shape (n, 2), got {u.shape}')
    H = homography(q_core)
    zt = u @ H[:, :2].T + H[:, 2]
    return zt[:, :2] / zt[:, 2:3]


def backwarp(q_core: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Back-warp image points to the rotor plane, u = pi(H^-1 [z; 1]).

    Parameters
    ----------
    q_core : numpy.ndarray
        [log s, psi, tx, ty, p31, p32].
    x, y : numpy.ndarray
        Pixel coordinates (any real dtype), same length.

    Returns
    -------
    numpy.ndarray
        (n, 2) rotor-plane points in tip radii.
    """
    pose = pack_pose(q_core)
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError('x and y must be 1-D arrays of the same length')
    u = np.empty((x.shape[0], 2))
    _backwarp_many(pose, x, y, u)
    return u


def backwarp_jacobian(q_core: np.ndarray, x: np.ndarray,
                      y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Back-warp and its analytic Jacobian du/dq_core.

    Returns
    -------
    u : numpy.ndarray
        (n, 2) rotor-plane points.
    J : numpy.ndarray
        (n, 2, 6) derivatives of u with respect to
        [log s, psi, tx, ty, p31, p32].

    Notes
    -----
    Paper Sec. 3.1 requires du/dq in R^{2x6}; it is obtained by implicit
    differentiation of z = pi(H(q) [u; 1]) (see ``_du_dq``).
    """
    pose = pack_pose(q_core)
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError('x and y must be 1-D arrays of the same length')
    u = np.empty((x.shape[0], 2))
    J = np.empty((x.shape[0], 2, 6))
    _jacobian_many(pose, x, y, u, J)
    return u, J
