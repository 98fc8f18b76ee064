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
MAX_KNOT_ERR_PX = 0.15


def _camera_accel_bound(scene: Scene) -> float:
    """Upper bound of the image acceleration [px/s^2] anywhere on the sensor."""
    cam = scene.camera
    if cam.static:
        return 0.0
    reach = math.hypot(scene.width, scene.height) * 0.5
    acc = float(np.sum(np.abs(cam.tr_amp_px) * (2 * math.pi * cam.tr_freq_hz) ** 2))
    acc += reach * float(np.sum(np.abs(cam.rot_amp_rad) * (2 * math.pi * cam.rot_freq_hz) ** 2))
    acc += reach * float(np.sum(np.abs(cam.zoom_amp) * (2 * math.pi * cam.zoom_freq_hz) ** 2))
    if cam.jolt_t_us.size:
        size = np.hypot(cam.jolt_dx_px, cam.jolt_dy_px)
        acc += float(np.max(6.0 * size / (cam.jolt_rise_us * 1e-6) ** 2))
    return acc


def knot_blocks_for(scene: Scene) -> int:
    """Blocks between geometry knots: linear interpolation error bound <= 0.15 px."""
    acc = _camera_accel_bound(scene)
    if acc == 0.0:
        return SEG_BLOCKS
    for kb in (16, 8, 4, 2):
        t = kb * BLOCK_US * 1e-6
        if acc * t * t / 8.0 <= MAX_KNOT_ERR_PX:
            return kb
    return 1


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
        self._sen = np.array([sen.jitter_us, sen.refractory_us, sen.gap_us, self._jneg,
                              JPOS_US, 1.0 / sen.threshold], np.float64)
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
        self._static_geo: dict = {}

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

    def _static_geometry(self, i: int) -> 'tuple[np.ndarray, ...]':
        """Pixel list and edge-phase coefficients of rotor ``i`` under a static camera."""
        if i not in self._static_geo:
            h = self.scene.rotors[i].homography0()[None]
            g = np.ascontiguousarray(np.linalg.inv(np.concatenate([h, h])))
            box = self._rotor_box(h)
            self._static_geo[i] = kn.rotor_geometry(g, True, box, self._geo[i], 0.0)
        return self._static_geo[i]

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
        for i, rotor in enumerate(sc.rotors):
            th_b = rotor.shaft_angle(t_b)
            th_m = rotor.shaft_angle(t_mid)
            keys = (self.seed, 1, i, seg)
            if static:
                px, py, coef = self._static_geometry(i)
                args = (px, py, coef, SEG_BLOCKS, th_b, th_m, t_b, self._geo[i], self._sen)
                n = self._run(kn.rotor_events, args, keys, n)
                continue
            h_knots = m_b[::kb] @ rotor.homography0()
            g_knots = np.ascontiguousarray(np.linalg.inv(h_knots))
            box = self._rotor_box(h_knots)
            if box[1] <= box[0] or box[3] <= box[2]:
                continue
            # how far the rotor centre moves over the segment, in tip radii
            c = h_knots[:, :2, 2] / h_knots[:, 2:, 2]
            margin_r = float(np.max(np.hypot(*(c - c[0]).T))) / rotor.radius_px * 1.5 + 0.02
            args = (g_knots, kb, th_b, th_m, t_b, box, self._geo[i], margin_r, self._sen)
            n = self._run(kn.rotor_segment, args, keys, n)
        if not static and len(self._ew):
            # straight-line motion between geometry knots, as for the rotors
            corners = np.array([[0, 0, 1], [sc.width, 0, 1], [0, sc.height, 1],
                                [sc.width, sc.height, 1]], np.float64).T
            z = m_b @ corners
            z = z[:, :2] / z[:, 2:]
            reach = float(np.max(np.abs(z - z[0]))) + 4.0
            args = (self._exy, self._enrm, self._econ, self._ew,
                    np.ascontiguousarray(m_b[::kb]), np.ascontiguousarray(t_b[::kb]),
                    sc.width, sc.height, reach, self._sen)
            n = self._run(kn.edges_segment, args, (self.seed, 2, seg), n)
        args = (int(t_b[0]), int(t_b[-1]), sc.width, sc.height, float(sc.sensor.ba_rate_hz),
                self._hot_xy, self._hot_rate)
        return self._run(kn.noise_segment, args, (self.seed, 3, seg), n)

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
            rate += crossings * per * 0.8
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
