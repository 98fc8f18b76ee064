# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Resident memory and the release of freed heap memory (helixtrack_ros.process_memory)."""

from __future__ import annotations

from pathlib import Path
import sys
import threading

from fresh_process import assert_runs_fresh
import numpy as np
import pytest

from helixtrack_ros.process_memory import HeapTrimmer, release_free_heap, rss_mb


def _churn_in_threads(n_threads: int = 3) -> None:
    """Threads allocate ~100 MB each in chunks below glibc's mmap threshold, free it all."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(1_000, 60_000, (n_threads, 3_000))

    def work(row: np.ndarray) -> None:
        keep = [np.ones(int(n), np.uint8) for n in row]
        del keep[::2]
        keep.clear()

    threads = [threading.Thread(target=work, args=(sizes[k],)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_rss_is_the_resident_memory_of_this_process():
    # (freed heap pages that are still resident would take the block without a change)
    release_free_heap()
    before = rss_mb()
    block = np.ones(64 * 2**20, np.uint8)      # 64 MB, touched
    assert rss_mb() - before > 50.0
    del block


_CHURN = """
import sys
sys.path.insert(0, {test_dir!r})
from test_process_memory import _churn_in_threads
from helixtrack_ros.process_memory import release_free_heap, rss_mb
release_free_heap()
base = rss_mb()
_churn_in_threads()
kept = rss_mb()
trimmed = release_free_heap()
print(base, kept, rss_mb(), trimmed)
"""


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='glibc malloc_trim')
def test_freed_thread_heaps_are_handed_back():
    # in a process of its own: in the test run's, what earlier tests left on the heap
    # decides how much of the churn glibc can give back
    script = _CHURN.format(test_dir=str(Path(__file__).parent))
    out = assert_runs_fresh(script, 120.0)
    base, kept, after, trimmed = out.split()
    assert float(kept) - float(base) > 40.0   # glibc keeps the freed chunks in the threads' arenas
    assert trimmed == 'True'
    assert float(after) < float(kept) - 40.0


def test_the_trimmer_runs_one_trim_at_a_time_off_the_caller(monkeypatch):
    import helixtrack_ros.process_memory as pm
    release, calls = threading.Event(), []

    def slow_trim() -> bool:
        calls.append(threading.current_thread().name)
        release.wait(10)
        return True

    monkeypatch.setattr(pm, 'release_free_heap', slow_trim)
    trimmer = HeapTrimmer()
    trimmer.trigger()
    trimmer.trigger()                     # the first is still running: no second one
    release.set()
    trimmer._thread.join(10)
    assert calls == ['helixtrack-heap-trim']
    trimmer.trigger()                     # done: the next period trims again
    trimmer._thread.join(10)
    assert len(calls) == 2


def test_the_trimmer_waits_for_resident_memory_to_grow(monkeypatch):
    """A trim at every diagnostics period held the packet thread ~0.4 ms for nothing in a
    steady stream: it runs again only once resident memory grew GROWTH_MB."""
    import helixtrack_ros.process_memory as pm
    calls = []
    monkeypatch.setattr(pm, 'release_free_heap', lambda: calls.append(1) or True)
    monkeypatch.setattr(pm, 'rss_mb', lambda: 300.0)       # what a trim leaves
    trimmer = HeapTrimmer()
    trimmer.trigger(350.0)                                   # the first one trims
    trimmer._thread.join(10)
    assert len(calls) == 1
    trimmer.trigger(300.0 + HeapTrimmer.GROWTH_MB - 0.5)     # steady: nothing to give back
    assert len(calls) == 1
    trimmer.trigger(300.0 + HeapTrimmer.GROWTH_MB + 0.5)     # a backlog's burst
    trimmer._thread.join(10)
    assert len(calls) == 2
