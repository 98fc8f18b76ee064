# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack batch``: every recording tracked as ``track`` would, one task each.

Each recording gets ``track``'s outputs in a sub-directory of ``--out``
named after it (:func:`recording_names`), and a ground-truth CSV lying
beside it (:func:`truth_beside`) adds its errors. One configuration (a
parameter file, or start-up detection, and a preset) serves every
recording; it is read here, so that a bad file fails before any work. A
recording that fails is a row of the summary, never the end of the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path
from typing import Any

from helixtrack_ros.cli.common import ExitCode, output_dir
from helixtrack_ros.fleet.task import Job, Outcome, exit_code, failed, track_task


def truth_beside(recording: str) -> str | None:
    """The ground-truth CSV lying beside ``recording``, or None.

    Looked for in this order: ``ground_truth.csv`` inside a bag directory,
    ``NAME.ground_truth.csv`` beside it (``NAME``: the recording's name
    without suffix, ``flight_07.raw`` -> ``flight_07.ground_truth.csv``), and
    ``ground_truth.csv`` in its directory (as ``helixtrack simulate`` writes).
    """
    path = Path(recording)
    stem = path.name if path.is_dir() else path.stem
    candidates = [path / 'ground_truth.csv'] if path.is_dir() else []
    candidates += [path.parent / f'{stem}.ground_truth.csv', path.parent / 'ground_truth.csv']
    return next((str(c) for c in candidates if c.is_file()), None)


def unique_recordings(recordings: list[str]) -> list[str]:
    """The recordings without repeats (the same path given twice is tracked once)."""
    seen: set[str] = set()
    out = []
    for rec in recordings:
        key = os.path.realpath(rec)
        if key not in seen:
            seen.add(key)
            out.append(rec)
    return out


def recording_names(recordings: list[str]) -> list[str]:
    """Each recording's name in the outputs: its path below the deepest directory that holds
    them all (``scenes/a/events``, ``scenes/b/events`` -> ``a/events``, ``b/events``)."""
    paths = [Path(os.path.realpath(r)) for r in recordings]
    if not paths:
        return []
    top = Path(os.path.commonpath([str(p.parent) for p in paths]))
    return [p.relative_to(top).as_posix() for p in paths]


@dataclass
class BatchResult:
    """Every recording's :class:`Outcome` (in the order given) and the files written."""

    outcomes: list[Outcome]
    summary: list[Path]
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        """The batch's exit status (:func:`~helixtrack_ros.fleet.task.exit_code`)."""
        return exit_code(self.outcomes, self.interrupted)


def batch_jobs(recordings: list[str], out: Path | None, topic: str | None,
               skip_s: float) -> list[Job]:
    """One job per distinct recording: outputs in ``out/<name>`` (None: no outputs), its
    ground truth if there is one beside it."""
    recordings = unique_recordings(recordings)
    return [Job(rec, name, None if out is None else str(out / name), truth_beside(rec),
                topic, skip_s)
            for rec, name in zip(recordings, recording_names(recordings))]


def run_batch(jobs: list[Job], config: Any, out: Path, engine: Any) -> BatchResult:
    """Run every job with ``config`` on ``engine``; write the summary into ``out``.

    A Ctrl-C stops the batch: the summary then holds what finished, the rest
    as interrupted.
    """
    output_dir(out)
    outcomes: list[Outcome | None] = [None] * len(jobs)
    calls = [(job, config, engine.rotor_threads) for job in jobs]
    interrupted = False
    try:
        for i, result in engine.map(track_task, calls, 'batch'):
            outcomes[i] = result if isinstance(result, Outcome) else failed(jobs[i],
                                                                           result.error)
    except KeyboardInterrupt:
        interrupted = True
    done = [o if o is not None else
            Outcome(job.recording, job.name, 'interrupted', int(ExitCode.INTERRUPTED),
                    'not tracked: the batch was interrupted')
            for o, job in zip(outcomes, jobs)]
    from helixtrack_ros.fleet.summary import write_summary
    return BatchResult(done, write_summary(out, done), interrupted)
