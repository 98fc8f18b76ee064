# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Counter-based random streams of the simulator kernels (splitmix64).

Every draw is a pure function of a per-(source, segment) key and a counter, so the
event stream depends on the seed only, never on how the caller chunks it.
"""

import math

import numpy as np

from helixtrack_ros.core.jit import numpy_errors, numpy_errors_inline

from ._kernel_cache import guard_kernel_cache

guard_kernel_cache()

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0


def seed_state(*keys: int) -> np.ndarray:
    """A splitmix64 state (uint64[1]) derived from integer keys."""
    h = 0x243F6A8885A308D3
    mask = (1 << 64) - 1
    for k in keys:
        h = (h ^ (int(k) & mask)) & mask
        h = (h * 0x100000001B3 + 0x9E3779B97F4A7C15) & mask
        h ^= h >> 29
        h = (h * 0xBF58476D1CE4E5B9) & mask
        h ^= h >> 32
    return np.array([h], np.uint64)


@numpy_errors_inline
def _next(st):
    s = st[0] + _GOLD
    st[0] = s
    z = (s ^ (s >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@numpy_errors_inline
def _rand(st):
    """Uniform in [0, 1)."""
    return float(_next(st) >> _S11) * _INV53


@numpy_errors_inline
def _rand_at(key, idx):
    """Uniform in [0, 1): the idx-th draw of the counter-based stream ``key``."""
    z = key + np.uint64(idx) * _GOLD
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return float(z >> _S11) * _INV53


@numpy_errors_inline
def _hash_at(key, idx):
    """The idx-th 64-bit word of the counter-based stream ``key``."""
    z = key + np.uint64(idx) * _GOLD
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


_M16 = np.uint64(0xFFFF)
_M32 = np.uint64(0xFFFFFFFF)
_S16 = np.uint64(16)
_S32 = np.uint64(32)
_S48 = np.uint64(48)


@numpy_errors_inline
def _gauss_word(z):
    """Approximately standard normal (Irwin-Hall of four 16-bit uniforms), within +-3.46."""
    a = float(z & _M16) + float((z >> _S16) & _M16) + float((z >> _S32) & _M16) \
        + float(z >> _S48)
    return (a * (1.0 / 65536.0) - 2.0) * 1.7320508075688772


@numpy_errors_inline
def _gauss4(st):
    """Approximately standard normal (Irwin-Hall of 4), bounded to +-3.46."""
    return (_rand(st) + _rand(st) + _rand(st) + _rand(st) - 2.0) * 1.7320508075688772


@numpy_errors
def _poisson(st, lam):
    if lam <= 0.0:
        return 0
    if lam > 40.0:
        v = lam + math.sqrt(lam) * _gauss4(st) + 0.5
        return max(0, int(v))
    lim = math.exp(-lam)
    k = 0
    prod = _rand(st)
    while prod > lim:
        k += 1
        prod *= _rand(st)
    return k
