# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Sensor side of the simulator kernels: a threshold crossing becomes 0-3 events.

The first event of a crossing is jittered, the next ones follow after the
refractory time plus a random gap; :func:`sort_emit` orders the merged stream and
applies the per-pixel refractory filter.
"""

import math

import numpy as np

from helixtrack_ros.core.jit import kernel_inline, numpy_errors, numpy_errors_inline

from ._kernel_cache import guard_kernel_cache
from .kernels_random import _M32, _S32, _gauss_word, _hash_at

guard_kernel_cache()

# indices into the sensor parameter vector
SEN_JITTER, SEN_REFR, SEN_GAP, SEN_JNEG, SEN_JPOS, SEN_INV_THR = 0, 1, 2, 3, 4, 5
# extra latency of OFF events of the blades [us] (simulator variants)
SEN_OFF_DELAY = 6
N_SEN = 7


@kernel_inline
def _put3(out_t, out_x, out_y, out_p, n, t1, t2, t3, x, y, pol):
    """Write the three event slots n..n+2 of one crossing (times floored to us)."""
    out_t[n] = int(math.floor(t1))
    out_t[n + 1] = int(math.floor(t2))
    out_t[n + 2] = int(math.floor(t3))
    for k in range(3):
        out_x[n + k] = x
        out_y[n + k] = y
        out_p[n + k] = pol


@numpy_errors_inline
def _emit_counter(key, c, tc, n_ev, pol, x, y, sen, out_t, out_x, out_y, out_p, n):
    """Append ``n_ev`` (0..3) events of one threshold crossing near time ``tc``.

    Jitter and gaps as in :func:`_emit_records`, from the counter-based draws
    ``c + 1`` and ``c + 2`` of ``key``; three slots are always written (branch-free),
    the caller guarantees the room.
    """
    t1 = tc + sen[SEN_JITTER] * _gauss_word(_hash_at(key, c + 1))
    z = _hash_at(key, c + 2)
    gap2 = 2.0 * sen[SEN_GAP] / 4294967296.0
    t2 = t1 + sen[SEN_REFR] + gap2 * float(z & _M32)
    t3 = t2 + sen[SEN_REFR] + gap2 * float(z >> _S32)
    _put3(out_t, out_x, out_y, out_p, n, t1, t2, t3, x, y, pol)
    return n + n_ev


@numpy_errors
def _emit_records(px, py, rec_i, rec_c, nrec, rec_t, rec_n, key, ctr, sen, out_t, out_x,
                  out_y, out_p, n):
    """Write the events of all records (0-3 each); the caller checked the room.

    The first event of a crossing is jittered (approximately normal, sd
    ``jitter_us``), the next ones follow after the refractory time plus a uniform
    extra gap (mean ``gap_us``); OFF events come ``SEN_OFF_DELAY`` later. Branch-free:
    three slots are always written and the fill level advances by the record's event
    count.
    """
    jit = sen[SEN_JITTER]
    refr = sen[SEN_REFR]
    gap2 = 2.0 * sen[SEN_GAP] / 4294967296.0
    off_delay = sen[SEN_OFF_DELAY]
    for r in range(nrec):
        c = 8 * (ctr + r)
        t1 = rec_t[r] + jit * _gauss_word(_hash_at(key, c + 1)) + off_delay * (1 - (rec_c[r] & 1))
        z = _hash_at(key, c + 2)
        t2 = t1 + refr + gap2 * float(z & _M32)
        t3 = t2 + refr + gap2 * float(z >> _S32)
        i = rec_i[r]
        x = px[i]
        y = py[i]
        pol = np.uint8(rec_c[r] & 1)
        _put3(out_t, out_x, out_y, out_p, n, t1, t2, t3, x, y, pol)
        n += rec_n[r]
    return n


@numpy_errors
def sort_emit(t, x, y, p, t_emit, t_end, last_t, width, refr_us):
    """Stable counting sort by time, then the per-pixel refractory filter.

    Events with ``t < t_emit`` are emitted (after the refractory filter, which keeps
    its per-pixel state in ``last_t``); the rest are returned as the sorted carry.
    Events outside ``[0, t_end)`` are dropped.

    Returns
    -------
    tuple
        (t, x, y, p) emitted, (t, x, y, p) carry.
    """
    n = t.shape[0]
    if n == 0:
        e64 = np.empty(0, np.int64)
        e16 = np.empty(0, np.uint16)
        e8 = np.empty(0, np.uint8)
        return e64, e16, e16, e8, e64.copy(), e16.copy(), e16.copy(), e8.copy()
    t_lo = t[0]
    t_hi = t[0]
    for i in range(n):
        ti = t[i]
        if ti < t_lo:
            t_lo = ti
        if ti > t_hi:
            t_hi = ti
    span = t_hi - t_lo + 1
    start = np.zeros(span + 1, np.int64)
    for i in range(n):
        start[t[i] - t_lo + 1] += 1
    for k in range(span):
        start[k + 1] += start[k]
    pos = start[:-1].copy()
    # payload: x << 24 | y << 8 | p, time implied by the bucket
    pay = np.empty(n, np.uint64)
    for i in range(n):
        k = t[i] - t_lo
        pay[pos[k]] = (np.uint64(x[i]) << np.uint64(24)) | (np.uint64(y[i]) << np.uint64(8)) \
            | np.uint64(p[i])
        pos[k] += 1
    k_emit = min(max(t_emit - t_lo, 0), span)
    n_emit = start[k_emit]
    et = np.empty(n_emit, np.int64)
    ex = np.empty(n_emit, np.uint16)
    ey = np.empty(n_emit, np.uint16)
    ep = np.empty(n_emit, np.uint8)
    ne = 0
    for k in range(k_emit):
        tk = t_lo + k
        if tk < 0 or tk >= t_end:
            continue
        for i in range(start[k], start[k + 1]):
            v = pay[i]
            xi = np.uint16(v >> np.uint64(24))
            yi = np.uint16((v >> np.uint64(8)) & np.uint64(0xFFFF))
            pix = np.int64(yi) * width + np.int64(xi)
            if tk - last_t[pix] < refr_us:
                continue
            last_t[pix] = tk
            et[ne] = tk
            ex[ne] = xi
            ey[ne] = yi
            ep[ne] = np.uint8(v & np.uint64(0xFF))
            ne += 1
    nc = n - n_emit
    ct = np.empty(nc, np.int64)
    cx = np.empty(nc, np.uint16)
    cy = np.empty(nc, np.uint16)
    cp = np.empty(nc, np.uint8)
    c = 0
    for k in range(k_emit, span):
        tk = t_lo + k
        for i in range(start[k], start[k + 1]):
            v = pay[i]
            ct[c] = tk
            cx[c] = np.uint16(v >> np.uint64(24))
            cy[c] = np.uint16((v >> np.uint64(8)) & np.uint64(0xFFFF))
            cp[c] = np.uint8(v & np.uint64(0xFF))
            c += 1
    return et[:ne], ex[:ne], ey[:ne], ep[:ne], ct, cx, cy, cp
