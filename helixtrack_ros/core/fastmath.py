# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Small scalar helpers for the numba kernels: polynomial atan2 / cos / exp, wraps, softplus.

The polynomials are least-squares minimax fits made for this package
(odd polynomial of degree 15 for atan on [0, 1], max error 3.8e-8 rad; even
polynomial of degree 14 for cos on [-pi, pi], max error 6.7e-10; degree 6
for 2^f on [0, 1], relative error 2.6e-9). They replace the slower libm
``atan2``, ``cos`` and ``exp`` in the per-event path (timings:
docs/DESIGN.md). Helpers that inline into the hot loop take scalars only: numba's inlining
of functions with array arguments adds reference counting per call.

Importing this module also drops stale on-disk numba caches of the core
kernels (:func:`helixtrack_ros.core.jit.drop_stale_cache`).
"""

import math
import os

import numpy as np

from helixtrack_ros.core.jit import drop_stale_cache, fma, fma_inline, kernel, kernel_inline

_KERNEL_MODULES = ('fastmath', 'homography', 'phase_ekf', 'rotation_sign', 'pose_gn', 'tracker',
                   'health', 'health_checks', 'health_machine', 'routing', 'tracker_layout',
                   'tracker_kernel', 'motion_kf', 'fast_step', 'gn_layout', 'gn_accumulate',
                   'gn_solve', 'acquisition', 'slots', 'tracker_stack')


# the tracker kernel inlines code from the other core modules: its cache is stale when
# any of them changed
drop_stale_cache(os.path.dirname(os.path.abspath(__file__)), _KERNEL_MODULES,
                 'helixtrack_kernels.stamp')

PI = math.pi
TWO_PI = 2.0 * math.pi
INV_TWO_PI = 1.0 / TWO_PI
HALF_PI = 0.5 * math.pi


def shaft_rpm(omega_rad_s, blades):
    """Shaft RPM of the B-fold helical phase rate ``omega_rad_s`` of a rotor with ``blades``
    blades: the phase turns B times per shaft turn (Sec. 3), so 60 |omega| / (2 pi B).

    The one definition of the conversion; kernels call :func:`shaft_rpm_k`, this same
    function compiled for inlining.
    """
    return 60.0 * abs(omega_rad_s) / (TWO_PI * blades)


def helical_rate(rpm_shaft, blades):
    """The B-fold helical phase rate [rad/s] of a shaft turning at ``rpm_shaft`` (the
    inverse of :func:`shaft_rpm` for a positive rate)."""
    return rpm_shaft * TWO_PI / 60.0 * blades


shaft_rpm_k = kernel_inline(shaft_rpm)
helical_rate_k = kernel_inline(helical_rate)

# atan(t) ~ t * sum_k A_k t^(2k), t in [0, 1]
_A0 = 0.9999993355873414
_A1 = -0.33329860802334155
_A2 = 0.19946565761771157
_A3 = -0.1390862982873546
_A4 = 0.09642197592031475
_A5 = -0.05591232618971085
_A6 = 0.02186295540909103
_A7 = -0.004054566112843518

# cos(e) ~ sum_k C_k e^(2k), e in [-pi, pi]
_C0 = 0.9999999999849248
_C1 = -0.4999999985672162
_C2 = 0.041666662828260266
_C3 = -0.0013888856796651246
_C4 = 2.4800332187424987e-05
_C5 = -2.7531073728728755e-07
_C6 = 2.057358775256216e-09
_C7 = -9.62980296776416e-12


@fma_inline
def _atan2_poly(y: float, x: float) -> float:
    """atan2(y, x) in [-pi, pi] by octant reduction and a degree-15 polynomial.

    The octant corrections are written as selects, not branches: the
    signs of event coordinates are random, and mispredicted branches cost
    more than the polynomial.
    """
    ax = abs(x)
    ay = abs(y)
    mx = max(ax, ay)
    t = min(ax, ay) / mx if mx > 0.0 else 0.0
    t2 = t * t
    # Estrin in t^2 (three levels instead of Horner's eight: the per-event path is
    # latency bound)
    t4 = t2 * t2
    t8 = t4 * t4
    a = (((_A0 + _A1 * t2) + (_A2 + _A3 * t2) * t4)
         + ((_A4 + _A5 * t2) + (_A6 + _A7 * t2) * t4) * t8)
    a *= t
    a = HALF_PI - a if ay > ax else a
    a = PI - a if x < 0.0 else a
    return -a if y < 0.0 else a


@fma_inline
def _cos_poly(e: float) -> float:
    """cos(e) for e in [-pi, pi] (even polynomial, error < 1e-9)."""
    e2 = e * e
    # Estrin in e^2
    e4 = e2 * e2
    e8 = e4 * e4
    return (((_C0 + _C1 * e2) + (_C2 + _C3 * e2) * e4)
            + ((_C4 + _C5 * e2) + (_C6 + _C7 * e2) * e4) * e8)


@fma_inline
def _wrap_pi(a: float) -> float:
    """wrap_pi(a) = mod(a + pi, 2 pi) - pi, in [-pi, pi)."""
    # np.floor stays a float (math.floor is an int in numba: two conversions more)
    return a - TWO_PI * np.floor((a + PI) * INV_TWO_PI)


@fma_inline
def _sigmoid(x: float) -> float:
    """Logistic function, overflow-safe."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@fma_inline
def _softplus(s: float, tau: float) -> float:
    """softplus_tau(s) = tau log(1 + exp(s / tau)), overflow-safe."""
    x = s / tau
    if x > 30.0:
        return s
    return tau * math.log1p(math.exp(x))


def atan2_poly(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Vectorised polynomial atan2 (for tests and diagnostics).

    Parameters
    ----------
    y, x : numpy.ndarray
        Same shape, float64.

    Returns
    -------
    numpy.ndarray
        Angles in [-pi, pi], max error 3.8e-8 rad.
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    x = np.ascontiguousarray(x, dtype=np.float64)
    if y.shape != x.shape:
        raise ValueError('atan2_poly: y and x must have the same shape')
    out = np.empty(y.size)
    _atan2_many(y.ravel(), x.ravel(), out)
    return out.reshape(y.shape)


def cos_poly(e: np.ndarray) -> np.ndarray:
    """Vectorised polynomial cos on [-pi, pi] (for tests)."""
    e = np.ascontiguousarray(e, dtype=np.float64)
    if np.any(np.abs(e) > PI + 1e-12):
        raise ValueError('cos_poly: arguments must lie in [-pi, pi]')
    out = np.empty(e.size)
    _cos_many(e.ravel(), out)
    return out.reshape(e.shape)


@fma
def _atan2_many(y, x, out):
    for i in range(y.shape[0]):
        out[i] = _atan2_poly(y[i], x[i])


@fma
def _cos_many(e, out):
    for i in range(e.shape[0]):
        out[i] = _cos_poly(e[i])


# 2^f ~ sum_k E_k f^k on [0, 1] (relative error 2.6e-9)
_E0 = 1.0000000025868885
_E1 = 0.6931469286930293
_E2 = 0.24023050204498983
_E3 = 0.0554804263258082
_E4 = 0.009684580452266356
_E5 = 0.001238782147956684
_E6 = 0.00021877504767851385
_POW2_NEG = np.array([2.0 ** -k for k in range(64)])
LOG2E = 1.4426950408889634


@fma_inline
def _exp_neg(x: float) -> float:
    """exp(x) for x <= 0 (relative error < 3e-9; 0 below -43): 2^-(n + 1) 2^(1 - frac)."""
    y = -x * LOG2E
    if not y < 62.0:
        return 0.0
    # n stays a float for f (no int round trip on the path); the table index is
    # unsigned (>= 0: no negative-index code)
    n = np.floor(y)
    f = 1.0 - (y - n)
    # Estrin in f
    f2 = f * f
    f4 = f2 * f2
    p = ((_E0 + _E1 * f) + (_E2 + _E3 * f) * f2) + ((_E4 + _E5 * f) + _E6 * f2) * f4
    return p * _POW2_NEG[np.uint64(int(n) + 1)]


def exp_neg(x: np.ndarray) -> np.ndarray:
    """Vectorised fast exp for x <= 0 (for tests)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if np.any(x > 0):
        raise ValueError('exp_neg: arguments must be <= 0')
    out = np.empty(x.size)
    _exp_many(x.ravel(), out)
    return out.reshape(x.shape)


@kernel
def _exp_many(x, out):
    for i in range(x.shape[0]):
        out[i] = _exp_neg(x[i])


@fma_inline
def _softplus_sigmoid(s: float, tau: float):
    """(softplus_tau(s), sigmoid(s / tau)) from one fast exp (error < 1e-8 relative)."""
    x = s / tau
    if x < 0.0:
        e = _exp_neg(x)
        if e < 1e-4:
            # log1p(e) by its series, error < e^4 / 4
            lp = e * (1.0 - e * (0.5 - e * (1.0 / 3.0)))
        else:
            lp = math.log1p(e)
        return tau * lp, e / (1.0 + e)
    e = _exp_neg(-x)
    return s + tau * math.log1p(e), 1.0 / (1.0 + e)
