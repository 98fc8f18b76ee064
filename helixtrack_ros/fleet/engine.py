# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The Dask engine of ``helixtrack batch`` and ``helixtrack sweep``.

:class:`Engine` is a Dask client on an embedded local cluster (the default)
or on an existing scheduler (``--scheduler ADDRESS``), and runs independent
tasks on it (:meth:`Engine.map`) with a progress bar, retries and failures
as values.

How the cores are shared: the local cluster has one worker process per core
(``--workers`` fewer), each with one thread, so one recording runs per
worker at a time: the numba kernels release the GIL but the pipeline's
Python work between them does not, so processes, not threads, scale. A
recording's rotors then run on the worker's share of the cores
(:attr:`Engine.rotor_threads`: 1 at one worker per core, more when there
are fewer workers than cores). On an existing cluster each task gets one
rotor thread: start its workers as one process per core with one thread
(``dask worker ADDRESS --nworkers $(nproc) --nthreads 1``).

Kernels are compiled once per machine, not per task: before the local
cluster starts, this process compiles them into numba's on-disk cache, and
every worker loads them from there once when it starts (:class:`WarmUp`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
import logging
import os
import sys
from typing import Any
import uuid

from helixtrack_ros.cli.common import CliError
from helixtrack_ros.cli.progress import Progress, progress_enabled

try:
    from distributed import Client, LocalCluster, WorkerPlugin, as_completed
except ImportError:   # the fleet extra is not installed: Engine says so when used
    Client = LocalCluster = as_completed = None   # type: ignore[assignment,misc]
    WorkerPlugin = object   # type: ignore[assignment,misc]

#: a task that raised is tried again this many times before it becomes a failure
DEFAULT_RETRIES = 2
#: seconds to wait for an existing scheduler
CONNECT_TIMEOUT_S = 20


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


class WarmUp(WorkerPlugin):
    """Loads the pipeline's kernels once per worker, when it starts (not per task)."""

    name = 'helixtrack-warmup'

    def setup(self, worker: Any) -> None:
        """Compile the kernels, or load them from numba's on-disk cache."""
        from helixtrack_ros.pipeline import TrackingPipeline
        TrackingPipeline.warmup()


@dataclass
class Failure:
    """A task that raised on every try (or whose worker died): what it raised."""

    error: str


def _has_bokeh() -> bool:
    """True when Dask can serve its dashboard (bokeh installed)."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return False
    return True


class Engine:
    """A Dask client: an embedded local cluster, or the cluster of ``scheduler``.

    Use as a context manager; the local cluster stops at the end.
    ``workers``: worker processes of the local cluster (default: one per
    core); ``retries``: further tries of a task that raised; ``quiet``: no
    progress bar.
    """

    def __init__(self, scheduler: str | None = None, workers: int | None = None,
                 retries: int = DEFAULT_RETRIES, quiet: bool = False) -> None:
        if Client is None:
            raise CliError("this command needs Dask: pip install 'dask[distributed]' "
                           "(or this package's fleet extra)")
        if scheduler is not None and workers is not None:
            raise CliError('--workers sizes the embedded cluster; with --scheduler the '
                           'cluster has the workers it has')
        if workers is not None and workers < 1:
            raise CliError(f'--workers must be at least 1, got {workers}')
        if retries < 0:
            raise CliError(f'--retries must be at least 0, got {retries}')
        cores = available_cores()
        if workers is not None and workers > cores:
            # more tracking processes than cores only share them (and each loads the kernels)
            print(f'helixtrack: warning: --workers {workers} is more than the {cores} cores '
                  f'this process may use: using {cores}', file=sys.stderr)
            workers = cores
        self.scheduler = scheduler
        self.workers = workers or cores
        self.retries = retries
        self.quiet = quiet
        self.cluster: Any = None
        self.client: Any = None

    def __enter__(self) -> Engine:
        if self.scheduler is None:
            from helixtrack_ros.pipeline import TrackingPipeline
            # into numba's on-disk cache once, before the workers load it
            TrackingPipeline.warmup()
            self.cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=True,
                dashboard_address=':0',   # a free port: batches side by side do not clash
                silence_logs=logging.CRITICAL)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(self.scheduler, timeout=f'{CONNECT_TIMEOUT_S}s')
            except (OSError, TimeoutError, ValueError) as exc:
                raise CliError(f'cannot reach the Dask scheduler at {self.scheduler}: '
                               f'{exc}') from None
        try:
            self.client.register_plugin(WarmUp(), name=WarmUp.name)
        except Exception as exc:   # e.g. a remote worker without this package
            self.close()
            raise CliError(f'the Dask workers cannot load the tracker ({type(exc).__name__}: '
                           f'{exc}); install helixtrack_ros on every worker') from None
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Disconnect; stop the local cluster."""
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    @property
    def rotor_threads(self) -> int:
        """Threads one recording's rotors may use: the worker's share of the cores."""
        if self.scheduler is not None:
            return 1
        return max(1, available_cores() // self.workers)

    def describe(self) -> str:
        """One line: where the tasks run, and the dashboard if there is one."""
        threads = list(self.client.nthreads().values())
        if self.cluster is not None:
            where = (f'local Dask cluster: {len(threads)} worker processes x 1 thread, '
                     f'{self.rotor_threads} rotor thread(s) per recording')
        else:
            where = (f'Dask scheduler {self.scheduler}: {len(threads)} workers, '
                     f'{sum(threads)} threads' + ('' if threads else
                                                  ' (tasks wait for a worker)'))
        # (the local cluster's dashboard pages need bokeh; a remote one is its own affair)
        served = self.cluster is None or _has_bokeh()
        return where + (f'; dashboard {self.client.dashboard_link}' if served else '')

    def map(self, fn: Callable[..., Any], calls: list[tuple[Any, ...]], label: str,
            unit: str = 'recordings') -> Iterator[tuple[int, Any]]:
        """Run ``fn(*args)`` for every ``args`` of ``calls``; yield (index, result) as each
        finishes, a :class:`Failure` as the result of one that raised on every try.

        Draws a progress bar of the finished calls (with the seconds of sensor
        time and events of results that have ``sensor_s`` and ``events``).
        Closing the iterator early (Ctrl-C) cancels the calls not finished.
        """
        token = uuid.uuid4().hex[:8]
        futures = {self.client.submit(fn, *args, key=f'{label}-{i}-{token}',
                                      retries=self.retries, pure=False): i
                   for i, args in enumerate(calls)}
        progress = Progress(len(calls), label, unit=unit,
                            enabled=progress_enabled(self.quiet))
        done = events = 0
        sensor_s = 0.0
        try:
            for future in as_completed(list(futures)):
                i = futures.pop(future)
                result = _result(future, 1 + self.retries)
                done += 1
                sensor_s += getattr(result, 'sensor_s', 0.0)
                events += getattr(result, 'events', 0)
                progress.update(done, sensor_s, events)
                yield i, result
        finally:
            progress.close()
            if futures:
                self.client.cancel(list(futures))


def _result(future: Any, tries: int) -> Any:
    """A finished future's result, or the :class:`Failure` of one that errored."""
    if future.status == 'finished':
        result = future.result()
    elif future.cancelled():
        result = Failure('cancelled (the scheduler or its worker went away)')
    else:
        exc = future.exception()
        result = Failure(f'{type(exc).__name__}: {exc} (tried {tries} times)')
    future.release()
    return result
