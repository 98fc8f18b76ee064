# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Several rotors' trackers run through the same packets in one kernel call.

A live packet of ~1 ms gives each rotor a few dozen events: tracking them
takes microseconds, calling a kernel from Python about as long again (its
arguments are type-checked one by one). :class:`TrackerStack` keeps the
state arrays of a group of :class:`~helixtrack_ros.core.tracker.HelixTracker`
as the rows of shared 2-D arrays (each tracker's arrays become views of its
rows, so every other method of the tracker sees the same numbers) and runs
:func:`~helixtrack_ros.core.routing._process_packets` for each rotor in turn
from one kernel, :func:`_process_stack`. The rows it gives per rotor are
those of :meth:`HelixTracker.run_packets`, plus each row's homography.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.jit import kernel, packet_kernel
from helixtrack_ros.core.routing import _BBOX_COS, _BBOX_SIN, _process_packets
from helixtrack_ros.core.tracker_layout import OUT_Q, PK_LEN
from helixtrack_ros.core.tracker_records import PacketRun

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.core.tracker import HelixTracker

#: The state arrays of a tracker that the packet kernel reads and writes, in its order.
STATE_FIELDS = ('tp', 'gp', 'fs', 'ist', 'q', 'pose', 'acc', 'acq_t', 'acq_a', 'hp', 'hs',
                'hi')


@kernel
def _homography_row(v, h):
    """h = H of Eq. (1) from the paper q (s, psi, tx, ty, p31, p32) of output row v."""
    s = v[OUT_Q]
    c = math.cos(v[OUT_Q + 1])
    sn = math.sin(v[OUT_Q + 1])
    h[0, 0] = s * c
    h[0, 1] = -s * sn
    h[0, 2] = v[OUT_Q + 2]
    h[1, 0] = s * sn
    h[1, 1] = s * c
    h[1, 2] = v[OUT_Q + 3]
    h[2, 0] = v[OUT_Q + 4]
    h[2, 1] = v[OUT_Q + 5]
    h[2, 2] = 1.0


@packet_kernel
def _process_stack(t_us, xs, ys, ps, pkt_end, pkt_t_last, stride, deadlines, tp, gp, fs, ist,
                   q, pose, acc, acq_t, acq_a, hp, hs, hi, geom, cos_a, sin_a, bi, bt, bx, by,
                   bp, out_v, out_hi, out_hs, out_h, done):
    """:func:`_process_packets` for every rotor r with ``deadlines[r] >= -1`` (-2: skip).

    State arrays are (rotors, ...) stacks; ``geom[r]`` is (r_out, bbox margin);
    the scratch ``bi .. bp`` is shared (each call writes before it reads);
    rotor r's rows go to ``out_v[r]``, ``out_hi[r]``, ``out_hs[r]``, their
    homographies to ``out_h[r]`` and the packets done to ``done[r]`` (-1: skipped).
    """
    for r in range(tp.shape[0]):
        if deadlines[r] < -1:
            done[r] = -1
            continue
        d = _process_packets(t_us, xs, ys, ps, pkt_end, pkt_t_last, stride, deadlines[r],
                             tp[r], gp[r], fs[r], ist[r], q[r], pose[r], acc[r], acq_t[r],
                             acq_a[r], hp[r], hs[r], hi[r], geom[r, 0], geom[r, 1], cos_a,
                             sin_a, bi, bt, bx, by, bp, out_v[r], out_hi[r], out_hs[r])
        done[r] = d
        for k in range(d):
            _homography_row(out_v[r, k], out_h[r, k])


class TrackerStack:
    """The state of a group of trackers as rows of shared arrays (module docstring).

    The trackers keep working on their own as before: a tracker that replaces
    its arrays (:meth:`HelixTracker.reset`, new parameters) is stacked again
    before the next :meth:`run`. Trackers whose arrays differ in shape cannot
    be stacked (:meth:`run` returns None).
    """

    def __init__(self) -> None:
        self._key: list = []
        self._arrays: tuple[np.ndarray, ...] = ()
        self._geom = np.empty((0, 2))
        self._deadlines = np.empty(0, np.int64)
        self._scratch: tuple[np.ndarray, ...] = ()
        #: the output rows of the last :meth:`run`, every tracker's (trackers, packets, ...):
        #: (values, health_int); a caller may read them in one conversion instead of one per
        #: tracker (rows past a tracker's ``done`` are not written)
        self.last_rows: tuple[np.ndarray, np.ndarray] | None = None

    def _bind(self, trackers: list[HelixTracker]) -> bool:
        """Stack the trackers' arrays unless they are already; False when they cannot be."""
        key = [(t, t.layout_version) for t in trackers]
        if key == self._key:
            return True
        self._key = []
        arrays = []
        for name in STATE_FIELDS:
            parts = [getattr(t, name) for t in trackers]
            if any(a.shape != parts[0].shape or a.dtype != parts[0].dtype for a in parts):
                return False
            arrays.append(np.stack(parts))
        for r, t in enumerate(trackers):
            for name, stacked in zip(STATE_FIELDS, arrays):
                setattr(t, name, stacked[r])
        self._arrays = tuple(arrays)
        self._geom = np.array([(float(t.params.r_out), float(t.params.bbox_margin_px))
                               for t in trackers])
        self._deadlines = np.empty(len(trackers), np.int64)
        self._key = key
        return True

    def run(self, trackers: list[HelixTracker], deadlines: list[int | None],
            t_us: np.ndarray, xs: np.ndarray, ys: np.ndarray, ps: np.ndarray,
            ends: np.ndarray, t_last: np.ndarray, longest: int,
            stride: int) -> tuple[list[PacketRun | None], np.ndarray] | None:
        """:meth:`HelixTracker.run_packets` of every tracker whose deadline is not None.

        Takes the arrays that :meth:`HelixTracker.run_packets` takes (checked
        by the caller) and gives each tracker's :class:`PacketRun` (None where
        skipped) and the homographies of their rows, (trackers, packets, 3, 3);
        None when the trackers cannot be stacked.
        """
        if not trackers or not self._bind(trackers):
            return None
        n_rot, n_pk = len(trackers), ends.shape[0]
        dl = self._deadlines
        for r, d in enumerate(deadlines):
            dl[r] = -2 if d is None else d
        longest += 1                 # the routing loop writes one index past the kept events
        buf = self._scratch
        if not buf or buf[0].shape[0] < longest:
            cap = max(longest, 4096)
            buf = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.uint16),
                   np.empty(cap, np.uint16), np.empty(cap, np.uint8))
            self._scratch = buf
        st = self._arrays
        out_v = np.empty((n_rot, n_pk, PK_LEN))
        out_hi = np.empty((n_rot, n_pk, st[11].shape[1]), np.int64)
        out_hs = np.empty((n_rot, n_pk, st[10].shape[1]))
        out_h = np.empty((n_rot, n_pk, 3, 3))
        done = np.empty(n_rot, np.int64)
        _process_stack(t_us, xs, ys, ps, ends, t_last, stride, dl, *st, self._geom, _BBOX_COS,
                       _BBOX_SIN, *buf, out_v, out_hi, out_hs, out_h, done)
        self.last_rows = (out_v, out_hi)
        runs: list[PacketRun | None] = []
        for r, d in enumerate(done.tolist()):
            if d == n_pk:
                runs.append(PacketRun(d, out_v[r], out_hi[r], out_hs[r]))
            else:
                runs.append(None if d < 0 else PacketRun(d, out_v[r, :d], out_hi[r, :d],
                                                         out_hs[r, :d]))
        return runs, out_h
