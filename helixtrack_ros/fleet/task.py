# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""One tracking job of a batch or sweep, and what the worker sends back.

:func:`track_task` runs on a Dask worker: it is ``helixtrack track`` on one
recording (:func:`helixtrack_ros.cli.track.track_recording`) with a given
configuration, and returns an :class:`Outcome`, small and picklable: the
status, the one line ``track`` would print, and per rotor the figures of
:func:`helixtrack_ros.fleet.summary.rotor_stats`. An input that ``track``
refuses (exit status 2: unreadable, corrupt, not a recording) is an outcome
with status ``failed``, not an exception: it would fail the same way again.
Any other exception leaves the task, so that the engine retries it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
import time
from typing import Any

from helixtrack_ros.cli.common import CliError, ExitCode

#: exit code of ``track`` -> status of a recording in a batch or sweep
STATUS = {ExitCode.OK: 'ok', ExitCode.PARTIAL_INPUT: 'partial',
          ExitCode.NOTHING_FOUND: 'nothing', ExitCode.USAGE: 'failed',
          ExitCode.INTERRUPTED: 'interrupted'}
#: statuses whose rotors were tracked (a recording cut short counts: what precedes the
#: damage was tracked)
TRACKED = ('ok', 'partial')


@dataclass(frozen=True)
class Job:
    """One recording to track: where it is, its name in the outputs, truth, where to write."""

    #: the recording as given on the command line
    recording: str
    #: its name in the summary and its output sub-directory
    name: str
    #: output directory (None: nothing written, as in a sweep)
    out: str | None = None
    #: ground-truth CSV beside the recording, or None
    truth: str | None = None
    topic: str | None = None
    skip_s: float = 0.2


@dataclass
class Outcome:
    """What a worker sends back for one job."""

    recording: str
    name: str
    #: ok, partial (cut short), nothing (no rotor tracked), failed, interrupted
    status: str
    exit_code: int
    #: the one line ``track`` prints for it ('' when done and tracked)
    message: str = ''
    #: one dict per tracked rotor (:func:`helixtrack_ros.fleet.summary.rotor_stats`)
    rotors: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    sensor_s: float = 0.0
    #: seconds the job took on the worker, tracking and outputs
    wall_s: float = 0.0

    @property
    def tracked(self) -> bool:
        """True when rotors were tracked (done, or up to the damage of a cut file)."""
        return self.status in TRACKED


def exit_code(outcomes: list[Outcome], interrupted: bool = False) -> int:
    """The exit status of many jobs: 0 when any tracked rotors (the others are rows of the
    summary); else 1 when one was read but had none, 2 when none could be read; 130 when
    interrupted."""
    if interrupted:
        return ExitCode.INTERRUPTED
    statuses = {o.status for o in outcomes}
    if statuses & set(TRACKED):
        return ExitCode.OK
    return ExitCode.NOTHING_FOUND if 'nothing' in statuses else ExitCode.USAGE


def failed(job: Job, message: str, wall_s: float = 0.0) -> Outcome:
    """The outcome of a job that produced nothing: status failed, exit 2, and why."""
    return Outcome(job.recording, job.name, 'failed', int(ExitCode.USAGE), message,
                   wall_s=wall_s)


def track_task(job: Job, config: Any, rotor_threads: int = 1) -> Outcome:
    """Track ``job``'s recording with ``config`` (a PipelineConfig) on this worker.

    ``rotor_threads`` replaces ``threads: 0`` (one per core) of the
    configuration: the worker's share of the cores, not the machine's.
    """
    from helixtrack_ros.cli.track import track_recording
    from helixtrack_ros.cli.track_report import track_status
    from helixtrack_ros.cli.truth import read_ground_truth
    from helixtrack_ros.fleet.summary import rotor_stats
    t0 = time.perf_counter()
    if config.threads == 0:
        config = replace(config, threads=max(1, int(rotor_threads)))
    try:
        truth = read_ground_truth(Path(job.truth)) if job.truth else None
        info = track_recording(job.recording, config, Path(job.out) if job.out else None,
                               truth, job.topic, job.skip_s, quiet=True)
    except CliError as exc:
        return failed(job, str(exc), time.perf_counter() - t0)
    code, line = track_status(info)
    return Outcome(job.recording, job.name, STATUS[code], int(code), line or '',
                   rotor_stats(info, job.skip_s), int(info['events']), float(info['sensor_s']),
                   time.perf_counter() - t0)
