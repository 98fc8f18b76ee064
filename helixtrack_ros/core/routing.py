# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Event routing: which of the camera's events reach one rotor's tracker.

A rotor sees only the events inside the image box of its projected r_out
circle plus a margin (:func:`_bbox_kernel`); :func:`_route` copies them out
of a packet of decoded events, branch free, keeping every stride-th (the
real-time policy). Kept apart from the tracker's large kernel so that the
copy loop keeps its pointers in registers. :func:`_process_packets` routes
and tracks a run of packets in one call (the pipeline's per-rotor loop).
"""

import math

import numpy as np

from helixtrack_ros.core.fastmath import TWO_PI, shaft_rpm_k
from helixtrack_ros.core.health import HI_LEVEL, HI_T0, HS_W
from helixtrack_ros.core.health_machine import (
    _health_advance,
    _health_drift,
    _health_packet_support,
    _health_range,
    _health_support,
)
from helixtrack_ros.core.jit import kernel, packet_kernel
from helixtrack_ros.core.tracker_kernel import _process
from helixtrack_ros.core.tracker_layout import (
    FS_OM,
    FS_P11,
    IS_ACCEPT,
    IS_ACQ,
    IS_TMAX,
    IS_ZETA,
    MODE_TIMES,
    OUT_LEN,
    PK_BOX,
    PK_N,
    PK_QCORE,
    PK_RPM_EKF,
    PK_ZETA,
    TP_B,
)


@kernel
def _route(t_us, xs, ys, ps, e0, e1, x0, y0, x1, y1, stride, bi, bt, bx, by, bp):
    """Copy every stride-th event of e0:e1 inside [x0, x1] x [y0, y1] to bt, bx, by, bp.

    Returns the number copied. Branch free: u - x0 <= x1 - x0 as unsigned is
    x0 <= u <= x1. A function of its own (not inlined into the tracker's
    large kernel), so that the loop keeps its pointers in registers.
    """
    w = np.uint32(x1 - x0)
    h = np.uint32(y1 - y0)
    m = 0
    if stride == 1:
        # one sequential pass: every event is written at slot m, which advances only for
        # an event inside the box (unsigned indices: no wraparound code)
        for i in range(np.uint64(e0), np.uint64(e1)):
            xi = xs[i]
            yi = ys[i]
            bt[m] = t_us[i]
            bx[m] = xi
            by[m] = yi
            bp[m] = ps[i]
            dx = np.uint32(np.int64(xi) - x0)
            dy = np.uint32(np.int64(yi) - y0)
            m += np.int64((dx <= w) & (dy <= h))
        return m
    n_in = 0
    for i in range(e0, e1):
        dx = np.uint32(np.int64(xs[i]) - x0)
        dy = np.uint32(np.int64(ys[i]) - y0)
        bi[n_in] = i
        n_in += np.int64((dx <= w) & (dy <= h))
    for j in range(0, n_in, stride):
        i = bi[j]
        bt[m] = t_us[i]
        bx[m] = xs[i]
        by[m] = ys[i]
        bp[m] = ps[i]
        m += 1
    return m


_BBOX_COS = np.cos(np.linspace(0.0, TWO_PI, 73))
_BBOX_SIN = np.sin(np.linspace(0.0, TWO_PI, 73))


@kernel
def _bbox_kernel(q, r_out, margin_px, cos_a, sin_a, out):
    """Bounds of the projected r_out circle z = pi(H(q) [r_out cos a, r_out sin a, 1])."""
    s = math.exp(q[0])
    c = math.cos(q[1])
    sn = math.sin(q[1])
    xmin = 1e300
    ymin = 1e300
    xmax = -1e300
    ymax = -1e300
    for k in range(cos_a.shape[0]):
        ux = r_out * cos_a[k]
        uy = r_out * sin_a[k]
        # z~ = H(q) [u; 1] (Eq. 1), then the perspective division
        w = q[4] * ux + q[5] * uy + 1.0
        if w <= 1e-6:
            out[0] = 0
            out[1] = 0
            out[2] = 65535
            out[3] = 65535
            return
        zx = (s * c * ux - s * sn * uy + q[2]) / w
        zy = (s * sn * ux + s * c * uy + q[3]) / w
        xmin = min(xmin, zx)
        xmax = max(xmax, zx)
        ymin = min(ymin, zy)
        ymax = max(ymax, zy)
    out[0] = max(0, int(math.floor(xmin - margin_px)))
    out[1] = max(0, int(math.floor(ymin - margin_px)))
    out[2] = max(out[0], min(65535, int(math.ceil(xmax + margin_px))))
    out[3] = max(out[1], min(65535, int(math.ceil(ymax + margin_px))))


def _bbox(q: np.ndarray, r_out: float, margin_px: float) -> tuple[int, int, int, int]:
    """Image region (x0, y0, x1, y1, inclusive) of the projected r_out circle plus a margin."""
    out = np.empty(4, np.int64)
    _bbox_kernel(np.ascontiguousarray(q, dtype=np.float64), float(r_out), float(margin_px),
                 _BBOX_COS, _BBOX_SIN, out)
    return (int(out[0]), int(out[1]), int(out[2]), int(out[3]))


@kernel
def _process_packets(t_us, xs, ys, ps, pkt_end, pkt_t_last, stride, reset_deadline_us,
                     tp, gp, fs, ist, q, pose, acc, acq_t, acq_a, hp, hs, hi,
                     r_out, margin_px, cos_a, sin_a, bi, bt, bx, by, bp, out_v, out_hi, out_hs):
    """Track one rotor through consecutive packets; returns the packets done.

    Per packet k (events pkt_end[k-1]:pkt_end[k] of the shared decoded
    arrays): route the events inside the rotor's box (every stride-th),
    run :func:`_process` with one sample at the packet's last event time,
    close the health windows up to it (:meth:`HelixTracker.advance`), check
    the pending window for a lagging rate (:func:`_health_drift`) or a coasting
    phase filter, and the packet for one (:func:`_health_packet_support`), and
    write the sample, q_core, box and health into row k. Stops after a
    packet that leaves the rotor LOST, or not TRACKING past
    ``reset_deadline_us`` (>= 0: a re-initialised rotor; cleared once
    TRACKING), so that the caller can run recovery there.
    """
    n_pk = pkt_end.shape[0]
    box = np.empty(4, np.int64)
    samp = np.empty(1, np.int64)
    out_t1 = np.empty(1, np.int64)
    out_v1 = np.empty((1, OUT_LEN))
    e0 = 0
    deadline = reset_deadline_us
    for k in range(n_pk):
        e1 = pkt_end[k]
        _bbox_kernel(q, r_out, margin_px, cos_a, sin_a, box)
        x0 = box[0]
        y0 = box[1]
        x1 = box[2]
        y1 = box[3]
        # the events inside the box, by branch-free index compaction (u - x0 <= w as
        # unsigned is x0 <= u <= x1), then gathered; every stride-th of them
        m = _route(t_us, xs, ys, ps, e0, e1, x0, y0, x1, y1, stride, bi, bt, bx, by, bp)
        t_last = pkt_t_last[k]
        samp[0] = t_last
        # (the packet's own support is judged from here)
        w_from = hs[HS_W]
        win_from = hi[HI_T0]
        t_from = pkt_t_last[k - 1] if k > 0 else ist[IS_TMAX]
        _process(bt[:m], bx[:m], by[:m], bp[:m], tp, gp, fs, ist, q, pose, acc, acq_t, acq_a,
                 hp, hs, hi, MODE_TIMES, samp, out_t1, out_v1)
        # health windows close even for a rotor that received no event
        if hi[HI_T0] >= 0 and t_last > ist[IS_TMAX]:
            _health_advance(hp, hs, hi, q, ist[IS_ACQ] == 0, fs[FS_OM], fs[FS_P11],
                            ist[IS_ACCEPT], t_last)
        # a rate lagging a sudden acceleration is not published (not only at window close)
        _health_drift(hp, hs, hi, t_last, fs[FS_OM])
        # (nor a rate the phase filter only extrapolates)
        _health_support(hp, hs, hi, t_last, fs[FS_OM])
        _health_packet_support(hp, hs, hi, t_last, fs[FS_OM], w_from, win_from, t_from)
        # (and an RPM outside its plausible range is LOST before it is published)
        _health_range(hp, hs, hi, fs[FS_OM])
        for j in range(OUT_LEN):
            out_v[k, j] = out_v1[0, j]
        for j in range(6):
            out_v[k, PK_QCORE + j] = q[j]
        out_v[k, PK_RPM_EKF] = shaft_rpm_k(fs[FS_OM], tp[TP_B])
        out_v[k, PK_ZETA] = ist[IS_ZETA]
        out_v[k, PK_N] = m
        for j in range(4):
            out_v[k, PK_BOX + j] = box[j]
        for j in range(hi.shape[0]):
            out_hi[k, j] = hi[j]
        for j in range(hs.shape[0]):
            out_hs[k, j] = hs[j]
        e0 = e1
        level = hi[HI_LEVEL]
        if level == 0:
            deadline = -1
        if level == 2 or (deadline >= 0 and t_last > deadline):
            return k + 1
    return n_pk


@packet_kernel
def _search_region(t_us, xs, ys, ps, stride, x0, y0, x1, y1, discs, bt, bx, by, bp, own):
    """Copy every stride-th event inside [x0, x1] x [y0, y1] to bt, bx, by, bp; returns how
    many.

    ``own`` gets (count, sum of x, sum of y) of those outside every disc row
    (x, y, r) of ``discs`` (the rotors still tracked, grown by 1.1): the
    searched rotor's own activity. For a LOST rotor's search region after
    every packet: :func:`_route`'s branch-free copy of every stride-th event,
    then the disc test on the copied events only.
    """
    n = (t_us.shape[0] + stride - 1) // stride
    m = _route(t_us[::stride], xs[::stride], ys[::stride], ps[::stride], 0, n, x0, y0, x1, y1,
               1, np.empty(0, np.int64), bt, bx, by, bp)
    n_d = discs.shape[0]
    r2 = np.empty(n_d)
    for k in range(n_d):
        r2[k] = (1.1 * discs[k, 2]) ** 2
    n_own = 0
    sx = 0.0
    sy = 0.0
    for i in range(m):
        xi = np.float64(bx[i])
        yi = np.float64(by[i])
        k = 0
        while k < n_d:
            dx = xi - discs[k, 0]
            dy = yi - discs[k, 1]
            if dx * dx + dy * dy <= r2[k]:
                break
            k += 1
        if k == n_d:
            n_own += 1
            sx += xi
            sy += yi
    own[0] = n_own
    own[1] = sx
    own[2] = sy
    return m


def search_region_events(t_us: np.ndarray, xs: np.ndarray, ys: np.ndarray, ps: np.ndarray,
                         box: tuple[int, int, int, int], discs: list[tuple[float, float, float]],
                         stride: int = 1) -> tuple[tuple[np.ndarray, ...], int, float, float]:
    """Every ``stride``-th event inside ``box`` (x0, y0, x1, y1, inclusive) as (t_us, x, y, p)
    copies, and how many of them lie outside every disc (x, y, tip radius) of ``discs``
    grown by 1.1 with their mean x and y (nan: none). ``stride`` is the real-time
    policy's (the trackers' events are thinned alike)."""
    t = np.ascontiguousarray(t_us, dtype=np.int64)
    x = np.ascontiguousarray(xs, dtype=np.uint16)
    y = np.ascontiguousarray(ys, dtype=np.uint16)
    p = np.ascontiguousarray(ps, dtype=np.uint8)
    n = t.shape[0]
    if x.shape != (n,) or y.shape != (n,) or p.shape != (n,):
        raise ValueError('events: t_us, x, y, p must be 1-D arrays of equal length')
    if stride < 1:
        raise ValueError('stride must be >= 1')
    d = np.array(discs, dtype=np.float64).reshape(-1, 3)
    # (+ 1: the branch-free loop writes one slot past the kept events)
    bt, bx, by, bp = (np.empty(n + 1, np.int64), np.empty(n + 1, np.uint16),
                      np.empty(n + 1, np.uint16), np.empty(n + 1, np.uint8))
    own = np.zeros(3)
    x0, y0, x1, y1 = (int(v) for v in box)
    m = _search_region(t, x, y, p, int(stride), x0, y0, x1, y1, d, bt, bx, by, bp, own)
    n_own = int(own[0])
    mx, my = (own[1] / n_own, own[2] / n_own) if n_own else (math.nan, math.nan)
    return (bt[:m], bx[:m], by[:m], bp[:m]), n_own, mx, my
