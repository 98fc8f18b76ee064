# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The process's resident memory, and freed heap memory handed back to the system.

glibc gives each thread that allocates its own heap ("arena") and keeps
what is freed there for reuse. In the node, DDS threads allocate the
payloads of queued packets and the rotor threads the arrays of large
batches, so a burst of backlog leaves tens of MB resident that nothing
uses, and resident memory looks like a leak. ``malloc_trim(0)`` returns the
free pages of every arena; the node calls it at a diagnostics period once
resident memory grew since the last trim (:class:`HeapTrimmer`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import os
import threading


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    name = ctypes.util.find_library('c')
    if name is None:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def release_free_heap() -> bool:
    """Hand the heap's free pages back to the system; False where that is not possible."""
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)
    return True


def rss_mb() -> float:
    """Resident memory of this process [MB], NaN where /proc is not available."""
    try:
        with open('/proc/self/statm') as fh:
            resident_pages = int(fh.read().split()[1])
    except (OSError, IndexError, ValueError):
        return float('nan')
    return resident_pages * os.sysconf('SC_PAGE_SIZE') / 2**20


class HeapTrimmer:
    """:func:`release_free_heap` off the caller's thread, one trim at a time, and only
    once resident memory grew ``GROWTH_MB`` past what the last trim left.

    A trim takes the allocator's locks while it walks the heaps: at every
    diagnostics period it cost the node's packet thread ~0.4 ms each time, with
    nothing to give back in a steady stream. A backlog's burst still gets trimmed.
    """

    GROWTH_MB = 8.0

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._left_mb = math.nan       # resident memory after the last trim

    def trigger(self, resident_mb: float = math.nan) -> None:
        """Start a trim unless one is running or ``resident_mb`` (NaN: unknown, trim) is
        less than GROWTH_MB above what the last trim left."""
        if self._thread is not None and self._thread.is_alive():
            return
        if resident_mb - self._left_mb < self.GROWTH_MB:
            return
        self._thread = threading.Thread(target=self._trim, daemon=True,
                                        name='helixtrack-heap-trim')
        self._thread.start()

    def _trim(self) -> None:
        release_free_heap()
        self._left_mb = rss_mb()
