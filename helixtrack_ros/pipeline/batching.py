# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Batches of packets and the threads that track their rotors.

Each rotor runs through all packets of a batch in one kernel call, the
rotors of a batch in parallel threads (the kernels release the GIL). The
results stay one per packet (``docs/ARCHITECTURE.md``, "Data flow"):
:class:`BatchQueue` holds the queued packets and the batch in flight, and
fills in each packet's result when its batch is done.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
import itertools
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from helixtrack_ros.core.events import EventArrays, EventBuffer
from helixtrack_ros.pipeline.outputs import nothing_measured
from helixtrack_ros.pipeline.records import PacketResult, RotorOutput

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.pipeline.rotors import RotorBank

#: Packets with more events than this run their rotors in parallel threads.
PARALLEL_MIN_EVENTS = 2000


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):    # not Linux
        return os.cpu_count() or 1


@dataclass
class Pending:
    """A decoded packet waiting to be tracked with the rest of its batch."""

    results: list[Any]                   # the result list of its batch ...
    index: int                           # ... and its place there
    ev: EventArrays
    t_last: int                          # -1: an empty or refused packet
    stamp_ns: int
    error: str | None = None             # why the packet was refused
    silent_ns: int = 0                   # an empty packet: header time since the last events
    quantum_us: int = 1                  # the stream's time quantum when it was admitted


class Jobs:
    """The rotors' kernel calls of one batch, each run by whichever thread is free.

    Worker threads and the waiting caller take the calls one at a time from
    a shared counter: a batch costs one hand-off per helper thread, not one
    per rotor, and no thread waits for a slow rotor while another rotor is
    left undone.
    """

    def __init__(self, calls: list[tuple[int, Callable[..., Any], tuple]]) -> None:
        self.calls = calls
        self.results: list[Any] = [None] * len(calls)
        self._next = itertools.count()      # next() is atomic under the GIL
        self.helpers: list[Future] = []

    def drain(self) -> None:
        """Run calls until none is left."""
        calls = self.calls
        while True:
            k = next(self._next)
            if k >= len(calls):
                return
            _, fn, args = calls[k]
            self.results[k] = fn(*args)

    def wait(self) -> list[tuple[int, Any]]:
        """Help until every call is done; (rotor, result) per call (a call's error is raised)."""
        self.drain()
        for f in self.helpers:
            f.result()
        return [(r, res) for (r, _, _), res in zip(self.calls, self.results)]


@dataclass
class Inflight:
    """A batch whose rotors are being tracked in the worker threads.

    ``ev`` / ``ends`` are the batch's events and the end of each packet in
    them; ``tracked`` / ``tracked_ends`` what the rotors get: the same, or
    under the real-time stride k every k-th event of the batch (one pass
    here instead of one per rotor in the routing).
    """

    pending: list[Pending]
    ev: EventArrays | None = None
    ends: np.ndarray | None = None
    t_last: np.ndarray | None = None
    stride: int = 1
    tracked: EventArrays | None = None
    tracked_ends: np.ndarray | None = None
    runs: list[Any] = field(default_factory=list)   # PacketRun or None per rotor
    #: (rotors, packets, 3, 3) homographies of the runs' rows, when one kernel ran them all
    homographies: np.ndarray | None = None
    #: the runs' (values, health_int) rows as stacked arrays, when one kernel ran them all
    stacked_rows: tuple[np.ndarray, np.ndarray] | None = None
    jobs: Jobs | None = None                        # the runs still in the threads

    def decimate(self) -> None:
        """Set what the rotors track: every ``stride``-th event of the batch."""
        k = self.stride
        if k <= 1:
            self.tracked, self.tracked_ends = self.ev, self.ends
            return
        self.tracked = self.ev.every(k)
        # events 0, k, 2k, ... are kept: ceil(end / k) of them lie before a packet's end
        self.tracked_ends = (self.ends + (k - 1)) // k

    def packet(self, k: int) -> EventArrays:
        """The events of the batch's k-th packet with events."""
        ends = self.ends
        return self.ev.slice(int(ends[k - 1]) if k else 0, int(ends[k]))

    def tracked_packet(self, k: int) -> tuple[EventArrays, int]:
        """The tracked events of the k-th packet with events, and where they start."""
        ends = self.tracked_ends
        e0 = int(ends[k - 1]) if k else 0
        return self.tracked.slice(e0, int(ends[k])), e0


class RotorThreads:
    """Worker threads for the rotors' kernel calls.

    ``threads`` threads run rotors at once (0: one per core, at most one per
    rotor and 8), the calling thread among them when it waits for the batch
    (the node). Offline the calling thread meanwhile reads, decodes and
    writes; with ``threads`` 0 one worker per rotor then starts (the
    operating system shares the cores), and the caller joins when it waits.
    A hand-off to a sleeping thread costs about as much as tracking a small
    packet, hence one hand-off per helper and batch (:class:`Jobs`).
    """

    def __init__(self) -> None:
        self.pool: ThreadPoolExecutor | None = None
        self.size = 0
        self.workers = 1

    def resize(self, threads: int, n_rotors: int) -> None:
        """Threads for ``n_rotors`` rotors (the pool is made once, when first needed)."""
        self.workers = max(1, min(threads if threads > 0 else cores(), n_rotors, 8))
        size = min(n_rotors, 8) if threads == 0 else min(threads, 8)
        if self.pool is None and self.workers > 1:
            self.pool = ThreadPoolExecutor(max_workers=size,
                                           thread_name_prefix='helixtrack-rotors')
            self.size = size

    def start(self, calls: list[tuple[int, Callable[..., Any], tuple]], n_events: int,
              caller_joins: bool) -> Jobs:
        """Hand a batch's calls to the threads (large batches), or leave them to the caller.

        ``caller_joins``: the caller waits for the results right away and takes
        calls too, so one helper fewer is woken.
        """
        jobs = Jobs(calls)
        if self.parallel(len(calls), n_events, caller_joins):
            jobs.helpers = [self.pool.submit(jobs.drain)
                            for _ in range(self._helpers(len(calls), caller_joins))]
        return jobs

    def _helpers(self, n_calls: int, caller_joins: bool) -> int:
        return min(self.workers, n_calls) - 1 if caller_joins else min(self.size, n_calls)

    def parallel(self, n_calls: int, n_events: int, caller_joins: bool) -> bool:
        """Whether :meth:`start` hands these calls to helper threads (else the caller
        runs them all)."""
        return (self.pool is not None and n_events > PARALLEL_MIN_EVENTS
                and self._helpers(n_calls, caller_joins) > 0)

    def close(self) -> None:
        """Stop the threads."""
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None


class BatchBuffers:
    """The memory that decoded batches are written into, reused once nothing refers to it.

    Reusing matters: fresh memory costs a page fault per 4 KiB on first touch
    (about as much as the decoding itself).
    """

    def __init__(self) -> None:
        self._buffers: list[EventBuffer] = []
        self._last: EventBuffer | None = None

    def take(self, capacity: int) -> EventBuffer:
        """A buffer of at least ``capacity`` events that no result or batch uses."""
        last = self._last
        if last is not None and last.capacity >= capacity and not last.in_use():
            # the usual case live: the last batch's buffer, free again
            last.reset()
            return last
        self._last = buf = self._take(capacity)
        return buf

    def _take(self, capacity: int) -> EventBuffer:
        free = [b for b in self._buffers if not b.in_use()]
        fits = [b for b in free if b.capacity >= capacity]
        if fits:
            buf = fits[0]
            buf.reset()
            # spare ones beyond two are let go (memory)
            spare = [b for b in free if b is not buf][:2]
            self._buffers = [b for b in self._buffers if b.in_use()] + spare + [buf]
            return buf
        # with headroom: the next batches are about as large; free ones too small go
        buf = EventBuffer(capacity + capacity // 4)
        self._buffers = [b for b in self._buffers if b not in free] + [buf]
        return buf


class BatchQueue:
    """Decoded packets waiting for their rotors, the batch in flight, the last outputs.

    Packets are decoded into :attr:`events` (memory reused from batch to
    batch) and queued (:meth:`add`); :meth:`flush` tracks them and waits,
    :meth:`overlap` (offline) starts them while the caller reads on. Each
    packet's :class:`PacketResult` is filled in when its batch is done.
    """

    def __init__(self, bank: RotorBank) -> None:
        self.bank = bank
        self._buffers = BatchBuffers()
        #: the decoded events of the batch being admitted, back to back
        self.events = EventBuffer(0)
        self._pending: list[Pending] = []
        self._inflight: Inflight | None = None
        #: the outputs of the last packet with events, its sensor time and header stamp
        self.last_outputs: list[RotorOutput] = []
        self.last_t_us = 0
        self.last_stamp_ns = 0

    def new_batch(self, payload_bytes: int) -> EventBuffer:
        """Memory for the events of a batch of this many payload bytes (:attr:`events`)."""
        # room for 2 events per 16-bit word (EVT3 streams carry fewer; more, and the
        # packets that do not fit get arrays of their own)
        self.events = self._buffers.take(payload_bytes)
        return self.events

    def add(self, pending: Pending) -> None:
        """Queue a decoded packet."""
        self._pending.append(pending)

    def drop_queued(self) -> None:
        """Forget the queued packets and the batch in flight (after a failure)."""
        self._pending = []
        self._inflight = None

    def flush(self, stride: int) -> None:
        """Finish the batch in flight, then track the queued packets."""
        if self._inflight is not None:
            inflight, self._inflight = self._inflight, None
            self._finish(inflight, stride)
        pending, self._pending = self._pending, []
        if pending:
            self._finish(self.bank.start(pending, stride, self.events, caller_joins=True),
                         stride)

    def overlap(self, stride: int, diagnostics_due: bool) -> None:
        """Finish the batch in flight and start the queued one, the next batch's rotors
        first when the last one's outputs cannot change what they read."""
        bank = self.bank
        inflight, self._inflight = self._inflight, None
        if inflight is not None and inflight.ev is not None:
            bank.collect(inflight)
        pending, self._pending = self._pending, []
        if (inflight is not None and inflight.ev is not None and not diagnostics_due
                and pending and bank.finished_for_good(inflight)):
            self._inflight = bank.start(pending, stride, self.events)
            self._finish(inflight, stride)
            return
        if inflight is not None:
            self._finish(inflight, stride)
        if pending:
            self._inflight = bank.start(pending, stride, self.events)

    def _unmeasured(self, pk: Pending) -> PacketResult:
        """The result of an empty or refused packet: the states before it, with their time
        and stamp (nothing new was measured), no longer TRACKING (:func:`nothing_measured`);
        STARVED when no event came for two health windows of header time."""
        # two health windows: the stamps' own jitter must not starve a rotor
        window_ns = 2 * self.bank.config.tracker.health_window_us * 1000
        # (kept as the last outputs too: /diagnostics says the same)
        outputs = self.last_outputs = nothing_measured(
            self.last_outputs, pk.error is not None, pk.silent_ns, pk.silent_ns > window_ns)
        return PacketResult(stamp_ns=self.last_stamp_ns, t_us=self.last_t_us, n_events=0,
                            rotors=outputs, error=pk.error)

    def _finish(self, inf: Inflight, stride: int) -> None:
        """Phase 2 of a batch, then one result per packet (:meth:`_unmeasured` for those
        without events)."""
        rows = self.bank.rows(inf, stride) if inf.ev is not None else []
        k = 0
        for pk in inf.pending:
            if pk.t_last < 0:
                pk.results[pk.index] = self._unmeasured(pk)
                continue
            outputs = rows[k] if rows else []
            k += 1
            self.last_outputs = outputs
            self.last_t_us = pk.t_last
            self.last_stamp_ns = pk.stamp_ns
            pk.results[pk.index] = PacketResult(pk.stamp_ns, pk.t_last, len(pk.ev.t_us),
                                                outputs, None, pk.ev)
