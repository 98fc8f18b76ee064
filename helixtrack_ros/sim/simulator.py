# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Streaming event generation for a :class:`~helixtrack_ros.sim.scene.Scene`.

Time is cut into fixed 16 ms segments of 1 ms blocks (independent of the chunk
size the caller asks for). Each segment's raw events (all rotors, static edges
under camera motion, noise) come from numba kernels with their own seeded
generators, are merged by a stable counting sort with the spill-over of the
previous segment, pass the per-pixel refractory filter and are emitted once no
later segment can produce an earlier event. Same seed, same events, whatever
the chunking.
"""

from collections.abc import Iterator
import math

import numpy as np

from ..core.events import EventArrays
from . import kernels as kn
from .scene import Scene

BLOCK_US = 1000
SEG_BLOCKS = 16
SEG_US = BLOCK_US * SEG_BLOCKS
JPOS_US = 250.0
MAX_KNOT_ERR_PX = 0.4
MAX_KNOT_ERR_RAD = 0.01


def _camera_motion_bounds(scene: Scene) -> 'tuple[float, float]':
    """Largest image speed [px/s] and acceleration [px/s^2] of the view corners and centre.

    Sampled every 0.5 ms over the scene (beyond 4 s the acceleration falls back on the
    amplitude bound), with a 25 % safety factor.
    """
    cam = scene.camera
    if cam.static:
        return 0.0, 0.0
    w, h = scene.width, scene.height
    pts = np.array([[0, 0, 1], [w, 0, 1], [0, h, 1], [w, h, 1], [w / 2, h / 2, 1]],
                   np.float64).T
    dt = 500e-6
    vel = 0.0
    acc = 0.0
    for start in range(0, min(scene.duration_us, 4_000_000), 1_000_000):
        t = start + np.arange(-1, 2001) * dt * 1e6
        z = cam.matrix(t) @ pts
        xy = z[:, :2] / z[:, 2:]
        vel = max(vel, float(np.abs(np.diff(xy, axis=0)).max()) / dt)
        acc = max(acc, float(np.abs(xy[2:] - 2 * xy[1:-1] + xy[:-2]).max()) / dt ** 2)
    if scene.duration_us > 4_000_000:
        acc = max(acc, _amplitude_accel_bound(scene))
        vel *= 1.5
    return 1.25 * vel, 1.25 * acc


def _amplitude_accel_bound(scene: Scene) -> float:
    """Upper bound of the image acceleration from the motion amplitudes [px/s^2]."""
    cam = scene.camera
    reach = math.hypot(scene.width, scene.height) * 0.5
    acc = float(np.sum(np.abs(cam.tr_amp_px) * (2 * math.pi * cam.tr_freq_hz) ** 2))
    acc += reach * float(np.sum(np.abs(cam.rot_amp_rad) * (2 * math.pi * cam.rot_freq_hz) ** 2))
    acc += reach * float(np.sum(np.abs(cam.zoom_amp) * (2 * math.pi * cam.zoom_freq_hz) ** 2))
    if cam.jolt_t_us.size:
        size = np.hypot(cam.jolt_dx_px, cam.jolt_dy_px)
        acc += float(np.max(6.0 * size / (cam.jolt_rise_us * 1e-6) ** 2))
    return acc


def knot_blocks_for(scene: Scene) -> int:
    """Blocks between geometry knots (a power of two; 0 for a static camera).

    Two limits: linear interpolation of the image motion stays within
    ``MAX_KNOT_ERR_PX``, and interpolating a pixel's rotor-plane angle stays within
    ``MAX_KNOT_ERR_RAD`` at the hub radius of the smallest rotor.
    """
    vel, acc = _camera_motion_bounds(scene)
    if acc == 0.0 and vel == 0.0:
        return 0
    r_min = min((r.hub_radius * r.radius_px for r in scene.rotors), default=math.inf)
    for kb in (128, 64, 32, 16, 8, 4, 2):
        t = kb * BLOCK_US * 1e-6
        if acc * t * t / 8.0 <= MAX_KNOT_ERR_PX and \
                (vel * t) ** 2 / (8.0 * r_min ** 2) <= MAX_KNOT_ERR_RAD:
            return kb
    return 1


def _inv3(m: np.ndarray) -> np.ndarray:
    """Inverses of a stack of 3x3 matrices (adjugate; avoids LAPACK thread start-up)."""
    a, b, c = m[:, 0, 0], m[:, 0, 1], m[:, 0, 2]
    d, e, f = m[:, 1, 0], m[:, 1, 1], m[:, 1, 2]
    g, h, i = m[:, 2, 0], m[:, 2, 1], m[:, 2, 2]
    adj = np.stack([e * i - f * h, c * h - b * i, b * f - c * e,
                    f * g - d * i, a * i - c * g, c * d - a * f,
                    d * h - e * g, b * g - a * h, a * e - b * d], axis=1).reshape(-1, 3, 3)
    det = a * adj[:, 0, 0] + b * adj[:, 1, 0] + c * adj[:, 2, 0]
    return adj / det[:, None, None]


class Simulator:
    """Event stream of a scene.

    Parameters
    ----------
    scene : Scene
        What to simulate.
    seed : int
        Seed of the event noise (the scene itself was drawn with ``scene.seed``).
    """

    def __init__(self, scene: Scene, seed: int = 0) -> None:
        if not isinstance(scene, Scene):
            raise ValueError('scene must be a helixtrack_ros.sim.Scene')
        self.scene = scene
        self.seed = int(seed)
        sen = scene.sensor
        if sen.threshold <= 0 or sen.jitter_us < 0 or sen.refractory_us < 0 or sen.gap_us < 0:
            raise ValueError('sensor threshold must be > 0 and jitter/refractory/gap >= 0')
        self._jneg = int(math.ceil(3.47 * sen.jitter_us)) + 2
        if self._jneg >= SEG_US // 2:
            raise ValueError('jitter_us too large for the segment length')
        if sen.pixel_spread < 0 or sen.on_gain < 0 or sen.off_gain < 0 or \
                not 0 <= sen.off_delay_us <= 100:
            raise ValueError('sensor pixel_spread, on_gain, off_gain must be >= 0 and '
                             'off_delay_us in [0, 100]')
        self._sen = np.array([sen.jitter_us, sen.refractory_us, sen.gap_us, self._jneg,
                              JPOS_US, 1.0 / sen.threshold, sen.off_delay_us], np.float64)
        # the per-pixel gains are a property of the sensor: the scene's seed, not the noise's
        pix_key = float(int(kn.seed_state(scene.seed, 17)[0]) >> 12)
        self._kb = knot_blocks_for(scene)
        self._geo = []
        for r in scene.rotors:
            g = np.zeros(kn.N_GEO)
            g[kn.GEO_DIRECTION] = r.direction
            g[kn.GEO_BLADES] = r.blades
            g[kn.GEO_HUB] = r.hub_radius
            g[kn.GEO_RADIUS_PX] = r.radius_px
            g[kn.GEO_CHORD_ROOT] = r.chord_root
            g[kn.GEO_CHORD_PEAK] = r.chord_peak
            g[kn.GEO_CHORD_TIP] = r.chord_tip
            g[kn.GEO_SWEEP] = r.sweep_rad
            g[kn.GEO_M_SCALE] = abs(r.contrast) / sen.threshold
            g[kn.GEO_TAU_US] = max(sen.photoreceptor_tau_us, 1e-3)
            g[kn.GEO_POL_LEAD] = 1.0 if r.contrast > 0 else 0.0
            g[kn.GEO_TIP_ROUND] = r.tip_round
            g[kn.GEO_PIX_SPREAD] = sen.pixel_spread
            g[kn.GEO_PIX_KEY] = pix_key
            g[kn.GEO_ON_GAIN] = sen.on_gain
            g[kn.GEO_OFF_GAIN] = sen.off_gain
            self._geo.append(g)
        e = scene.edges
        self._exy = np.ascontiguousarray(e.xy, np.float64)
        self._enrm = np.ascontiguousarray(e.normal, np.float64)
        self._econ = np.ascontiguousarray(e.contrast, np.float64)
        self._ew = np.ascontiguousarray(e.weight, np.float64)
        self._hot_xy = np.ascontiguousarray(sen.hot_xy, np.int64).reshape(-1, 2)
        self._hot_rate = np.ascontiguousarray(sen.hot_rate_hz, np.float64)
        self._buf = (np.empty(1 << 16, np.int64), np.empty(1 << 16, np.uint16),
                     np.empty(1 << 16, np.uint16), np.empty(1 << 16, np.uint8))
        self.n_segments = -(-scene.duration_us // SEG_US)
        kb = self._kb
        self._span_blocks = (self.n_segments * SEG_BLOCKS if kb == 0
                             else max(kb, SEG_BLOCKS))
        self._span_geo: dict = {}

    # ------------------------------------------------------------------ internals
    def _grow(self, need: int) -> None:
        """Enlarge the segment buffer to at least ``need`` events (keeping its content)."""
        cap = max(need, 2 * self._buf[0].shape[0])
        new = (np.empty(cap, np.int64), np.empty(cap, np.uint16), np.empty(cap, np.uint16),
               np.empty(cap, np.uint8))
        for old, nb in zip(self._buf, new, strict=True):
            nb[:old.shape[0]] = old
        self._buf = new

    def _run(self, fn, args: tuple, st_keys: tuple, n0: int) -> int:
        """Append a kernel's events to the segment buffer (growing it until they fit)."""
        while True:
            n = fn(*args, kn.seed_state(*st_keys), *self._buf, n0)
            if n >= 0:
                return n
            self._grow(self._buf[0].shape[0] * 2)

    def _rotor_box(self, h_knots: np.ndarray) -> np.ndarray:
        a = np.linspace(0, 2 * math.pi, 96, endpoint=False)
        u = np.stack([np.cos(a), np.sin(a), np.ones_like(a)]) * np.array([[1.03], [1.03], [1]])
        z = h_knots @ u
        xs = z[:, 0] / z[:, 2]
        ys = z[:, 1] / z[:, 2]
        x0 = max(int(math.floor(xs.min())) - 2, 0)
        x1 = min(int(math.ceil(xs.max())) + 3, self.scene.width)
        y0 = max(int(math.floor(ys.min())) - 2, 0)
        y1 = min(int(math.ceil(ys.max())) + 3, self.scene.height)
        return np.array([x0, max(x1, x0), y0, max(y1, y0)], np.int64)

    def _knots(self, span: int) -> 'tuple[np.ndarray, int]':
        """Camera transforms at the geometry knots of ``span`` and blocks per knot."""
        kb = self._kb
        start = span * self._span_blocks
        if kb == 0:
            return np.stack([np.eye(3), np.eye(3)]), self._span_blocks
        n_iv = -(-self._span_blocks // kb)
        t = (start + np.arange(n_iv + 1) * kb) * float(BLOCK_US)
        return np.ascontiguousarray(self.scene.camera.matrix(t)), kb

    def _interval_map(self, seg: int, kb: int, n_iv: int) -> 'tuple[np.ndarray, np.ndarray]':
        """Knot interval and fraction of the block boundaries of ``seg`` in its span."""
        b = seg * SEG_BLOCKS + np.arange(SEG_BLOCKS + 1)
        local = b - (seg * SEG_BLOCKS // self._span_blocks) * self._span_blocks
        iv = np.minimum(local // kb, n_iv - 1)
        return iv.astype(np.int64), (local - iv * kb) / float(kb)

    def _span_geometry(self, i: int, span: int, variant: int = 0) -> 'tuple':
        """Pixel list and edge-phase coefficients of rotor ``i`` over a geometry span.

        ``variant`` 1 is the rotor after its image jump (``RotorSpec.jump_us``).
        """
        key = (i, span) if variant == 0 else (i, span, variant)
        if key not in self._span_geo:
            # only the current span is ever needed again
            self._span_geo = {k: v for k, v in self._span_geo.items() if k[1] == span}
            rotor = self.scene.rotors[i]
            m_knots, _ = self._knots(span)
            h_knots = m_knots @ rotor.homography0(variant)
            g_knots = np.ascontiguousarray(_inv3(h_knots))
            box = self._rotor_box(h_knots)
            c = h_knots[:, :2, 2] / h_knots[:, 2:, 2]
            margin_r = float(np.max(np.hypot(*(c - c[0]).T))) / rotor.radius_px * 1.5 + 0.02
            self._span_geo[key] = kn.rotor_geometry(g_knots, self._kb == 0, box, self._geo[i],
                                                    margin_r)
        return self._span_geo[key]

    def _fill(self, seg: int, n0: int) -> int:
        """Append the raw events of segment ``seg`` to the buffer from ``n0``; new fill."""
        sc = self.scene
        t_b = seg * SEG_US + np.arange(SEG_BLOCKS + 1, dtype=np.float64) * BLOCK_US
        static = sc.camera.static
        if static:
            m_b = np.broadcast_to(np.eye(3), (SEG_BLOCKS + 1, 3, 3))
        else:
            m_b = sc.camera.matrix(t_b)
        m_b = np.ascontiguousarray(m_b)
        kb = self._kb
        n = n0
        t_mid = t_b[:-1] + 0.5 * BLOCK_US
        span = seg * SEG_BLOCKS // self._span_blocks
        per_span = kb == 0 or kb >= SEG_BLOCKS
        if per_span:
            _, kb_span = self._knots(span)
            iv_b, fr_b = self._interval_map(seg, kb_span, 1)
        else:
            iv_b, fr_b = self._interval_map(seg, kb, SEG_BLOCKS // kb)
        for i, rotor in enumerate(sc.rotors):
            th_b = rotor.shaft_angle(t_b)
            th_m = rotor.shaft_angle(t_mid)
            # an induced image jump splits the segment into the rotor before and after it
            if rotor.jump_us <= t_b[0]:
                variants = (1,)
            elif rotor.jump_us < t_b[-1]:
                variants = (0, 1)
            else:
                variants = (0,)
            for variant in variants:
                keys = (self.seed, 1, i, seg) if variant == variants[0] else \
                    (self.seed, 1, i, seg, variant)
                n_rotor = n
                if per_span:
                    px, py, coef = self._span_geometry(i, span, variant)
                    args = (px, py, coef, iv_b, fr_b, th_b, th_m, t_b, self._geo[i], kb > 0,
                            self._sen)
                    n = self._run(kn.rotor_events, args, keys, n)
                else:
                    h_knots = m_b[::kb] @ rotor.homography0(variant)
                    g_knots = np.ascontiguousarray(_inv3(h_knots))
                    box = self._rotor_box(h_knots)
                    if box[1] <= box[0] or box[3] <= box[2]:
                        continue
                    # how far the rotor centre moves over the segment, in tip radii
                    c = h_knots[:, :2, 2] / h_knots[:, 2:, 2]
                    margin_r = float(np.max(np.hypot(*(c - c[0]).T))) / rotor.radius_px \
                        * 1.5 + 0.02
                    args = (g_knots, iv_b, fr_b, th_b, th_m, t_b, box, self._geo[i],
                            margin_r, self._sen)
                    n = self._run(kn.rotor_segment, args, keys, n)
                if len(variants) > 1 or rotor.hidden_us:
                    n = self._induced_loss(rotor, variant, len(variants) > 1, n_rotor, n)
        if not static and len(self._ew):
            # straight-line motion between geometry knots, as for the rotors
            corners = np.array([[0, 0, 1], [sc.width, 0, 1], [0, sc.height, 1],
                                [sc.width, sc.height, 1]], np.float64).T
            z = m_b @ corners
            z = z[:, :2] / z[:, 2:]
            reach = float(np.max(np.abs(z - z[0]))) + 4.0
            step = min(kb, SEG_BLOCKS)
            args = (self._exy, self._enrm, self._econ, self._ew,
                    np.ascontiguousarray(m_b[::step]), np.ascontiguousarray(t_b[::step]),
                    sc.width, sc.height, reach, self._sen)
            n = self._run(kn.edges_segment, args, (self.seed, 2, seg), n)
        args = (int(t_b[0]), int(t_b[-1]), sc.width, sc.height, float(sc.sensor.ba_rate_hz),
                self._hot_xy, self._hot_rate)
        return self._run(kn.noise_segment, args, (self.seed, 3, seg), n)

    def _induced_loss(self, rotor, variant: int, split: bool, n0: int, n1: int) -> int:
        """Drop buffered rotor events [n0, n1) outside their jump variant or hidden; new end."""
        t = self._buf[0][n0:n1]
        keep = np.ones(n1 - n0, bool)
        if split:
            keep &= (t >= rotor.jump_us) if variant else (t < rotor.jump_us)
        for h0, h1 in rotor.hidden_us:
            keep &= (t < h0) | (t >= h1)
        m = int(np.count_nonzero(keep))
        if m < n1 - n0:
            for b in self._buf:
                b[n0:n0 + m] = b[n0:n1][keep]
        return n0 + m

    def segment_raw(self, seg: int) -> EventArrays:
        """Unsorted, unfiltered events of segment ``seg`` (all sources; a copy)."""
        n = self._fill(seg, 0)
        return EventArrays(*(b[:n].copy() for b in self._buf))

    def _emitted(self) -> 'Iterator[tuple[EventArrays, int]]':
        """Sorted, filtered events per segment with the time below which all are final."""
        sc = self.scene
        last_t = np.full(sc.width * sc.height, -(1 << 40), np.int64)
        carry = EventArrays.empty()
        refr = int(round(sc.sensor.refractory_us))
        for seg in range(self.n_segments):
            nc = len(carry)
            if nc > self._buf[0].shape[0]:
                self._grow(nc)
            for b, c in zip(self._buf, carry, strict=True):
                b[:nc] = c
            n = self._fill(seg, nc)
            allev = EventArrays(*(b[:n] for b in self._buf))
            final = seg == self.n_segments - 1
            t_emit = sc.duration_us if final else (seg + 1) * SEG_US - self._jneg
            t_emit = min(t_emit, sc.duration_us)
            out = kn.sort_emit(allev.t_us, allev.x, allev.y, allev.p, t_emit, sc.duration_us,
                              last_t, sc.width, refr)
            carry = EventArrays(*out[4:])
            if final:
                carry = EventArrays.empty()
            yield EventArrays(*out[:4]), t_emit

    # ------------------------------------------------------------------ public API
    def chunks(self, chunk_us: int = 10_000) -> Iterator[EventArrays]:
        """Stream the scene as time-sorted chunks ``[k * chunk_us, (k + 1) * chunk_us)``.

        Parameters
        ----------
        chunk_us : int
            Chunk length [us] (> 0). The events do not depend on it.

        Yields
        ------
        EventArrays
            One chunk (possibly empty), all sources merged, sorted by ``t_us``.
        """
        chunk_us = int(chunk_us)
        if chunk_us <= 0:
            raise ValueError(f'chunk_us must be positive, got {chunk_us}')
        dur = self.scene.duration_us
        pending: list = []
        start = 0
        for ev, t_final in self._emitted():
            pending.append(ev)
            while start < dur and (start + chunk_us <= t_final or t_final >= dur):
                end = min(start + chunk_us, dur)
                cat = EventArrays.concatenate(pending) if len(pending) > 1 else pending[0]
                k = int(np.searchsorted(cat.t_us, end, side='left'))
                yield cat.slice(0, k)
                pending = [cat.slice(k, len(cat))]
                start = end

    def all_events(self) -> EventArrays:
        """Every event of the scene in one container (use for short scenes)."""
        return EventArrays.concatenate([ev for ev, _ in self._emitted()])

    def event_rate_hint(self) -> float:
        """Rough expected event rate [events per second of scene time]."""
        sc = self.scene
        sen = sc.sensor
        t = np.linspace(0, sc.duration_us, 33)
        rate = sen.ba_rate_hz * sc.width * sc.height + float(np.sum(sen.hot_rate_hz))
        for r in sc.rotors:
            omega = float(np.mean(r.rpm_shaft(t))) * 2 * math.pi / 60
            crossings = 2 * r.blades * omega * 0.5 * (1 - r.hub_radius ** 2) * r.radius_px ** 2
            per = min(abs(r.contrast) / sen.threshold * 0.75, 2.5)
            rate += crossings * per * 0.58
        if not sc.camera.static and len(sc.edges):
            ts = np.linspace(0, min(sc.duration_us, 2_000_000), 401)
            m = sc.camera.matrix(ts)
            # mean image speed of a few probe points across the view
            probes = np.array([[0.2, 0.2], [0.8, 0.2], [0.5, 0.5], [0.2, 0.8], [0.8, 0.8]])
            pts = np.column_stack([probes * [sc.width, sc.height], np.ones(5)])
            z = m @ pts.T
            xy = z[:, :2] / z[:, 2:3]
            v = np.hypot(*np.diff(xy, axis=0).transpose(1, 0, 2)) / np.diff(ts)[:, None] * 1e6
            speed = float(np.mean(v))
            per = np.minimum(np.abs(sc.edges.contrast) / sen.threshold, 3.0)
            xy = sc.edges.xy
            seen = (xy[:, 0] >= 0) & (xy[:, 0] < sc.width) & (xy[:, 1] >= 0) & \
                (xy[:, 1] < sc.height)
            rate += float(np.sum((sc.edges.weight * per)[seen])) * speed * 2 / math.pi
        return rate
