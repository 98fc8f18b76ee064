# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack sweep``: every configuration of a parameter grid on every recording with
ground truth, cached per cell, ranked.

A grid file (YAML) names values per parameter; every combination is one
configuration::

    fixed:                       # optional: what every configuration shares
      preset: paper
    grid:                        # parameter -> the values to try
      tracker.r_in: [0.1, 0.2]
      tracker.r_out: [1.4, 1.5]

The names are those of a parameter file (``tracker.*``, the pipeline's own,
``preset``), nested or dotted, checked with the same table and messages as
the parameter file (:mod:`helixtrack_ros.pipeline.config`). A configuration
is the parameter file (or start-up detection), then ``--preset``, then
``fixed``, then the grid's values.

Each (recording, configuration) cell is one task; its outcome is stored in
``DIR/cache/<key>.json`` as soon as it is back, under a key of everything
that decides it (the recording's and truth's files, the whole configuration,
the skip), so that a sweep run again, or stopped and run again, computes
only the cells it does not have. A cell that failed on every try is not
stored: the next run tries it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import hashlib
import itertools
import json
import math
import os
from pathlib import Path
from typing import Any

from helixtrack_ros.cli.common import CliError, output_dir
from helixtrack_ros.fleet.task import Job, Outcome, exit_code, failed, track_task

#: ranking criteria: --rank-by name -> column of the ranking
RANK_BY = {'mean': 'mean_mare_pct', 'worst': 'worst_mare_pct', 'scale': 'worst_scale_err_pct'}
#: ranking.csv after the parameter columns
RANK_COLUMNS = ['mean_mare_pct', 'worst_mare_pct', 'worst_scale_err_pct', 'mean_tracking_pct',
                'missing', 'cells', 'failed']


@dataclass
class Grid:
    """A parameter grid: ``fixed`` values and ``axes`` (parameter -> values, file order)."""

    fixed: dict[str, Any]
    axes: dict[str, list[Any]]

    def cells(self) -> list[dict[str, Any]]:
        """Every configuration: parameter -> value, the first axis varying slowest."""
        keys = list(self.axes)
        return [dict(zip(keys, values)) for values in itertools.product(*self.axes.values())]


def load_grid(path: Path) -> Grid:
    """Read and check a grid file; every problem as a one-line CliError naming the file."""
    import yaml

    from helixtrack_ros.io.params_file import flatten, load_yaml_text, yaml_problem
    try:
        doc = load_yaml_text(path.read_text())
    except FileNotFoundError:
        raise CliError(f'grid file not found: {path}') from None
    except yaml.YAMLError as exc:
        raise CliError(f'{path}: not a YAML file ({yaml_problem(exc)})') from None
    except OSError as exc:
        raise CliError(f'{path}: not a YAML file ({str(exc).splitlines()[0]})') from None
    if not isinstance(doc, dict) or not isinstance(doc.get('grid'), dict) or not doc['grid']:
        raise CliError(f'{path}: expected a mapping with grid: (parameter -> list of values) '
                       'and optionally fixed: (parameter -> value)')
    extra = set(doc) - {'grid', 'fixed'}
    if extra:
        raise CliError(f'{path}: unknown sections {", ".join(sorted(map(str, extra)))} '
                       '(a grid file has grid: and fixed:)')
    fixed = flatten(doc.get('fixed') or {})
    # a list is a leaf: flatten() only descends into mappings
    axes = flatten(doc['grid'])
    _check_names(path, [*fixed, *axes])
    both = sorted(set(fixed) & set(axes))
    if both:
        raise CliError(f'{path}: {", ".join(both)} both fixed and in the grid')
    for key, value in fixed.items():
        _check(path, key, value)
    for key, values in axes.items():
        if not isinstance(values, list) or not values:
            raise CliError(f'{path}: grid {key}: expected a list of values, got {values!r}')
        if len({json.dumps(v) for v in values}) < len(values):
            raise CliError(f'{path}: grid {key}: a value is repeated in {values!r}')
        for value in values:
            _check(path, key, value)
    return Grid(fixed, axes)


def _check_names(path: Path, keys: list[str]) -> None:
    """Every key a parameter of the table (or a preset), else CliError with the closest."""
    from helixtrack_ros.pipeline.config import CHOICES, parameter_table, unknown_text
    known = [*parameter_table(), *CHOICES]
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise CliError(f'{path}: unknown parameters: {unknown_text(unknown, known)}')


def _check(path: Path, key: str, value: Any) -> None:
    """A value the parameter takes, else CliError (the parameter file's message)."""
    from helixtrack_ros.pipeline.config import CHOICES, check_choice, check_value, parameter_table
    reason = check_choice(key, value) if key in CHOICES else check_value(
        parameter_table()[key], value)
    if reason:
        raise CliError(f'{path}: parameter {key}: {reason}')


# ---------------------------------------------------------------------------- cache keys
def _fingerprint(path: str) -> list[Any]:
    """What identifies a file's or a bag directory's contents cheaply: names, sizes, times."""
    p = Path(path)
    files = sorted(q for q in p.rglob('*') if q.is_file()) if p.is_dir() else [p]
    out: list[Any] = [os.path.realpath(path)]
    for q in files:
        try:
            st = q.stat()
        except OSError:
            continue
        out.append([q.name, st.st_size, st.st_mtime_ns])
    return out


def cell_key(job: Job, config: Any) -> str:
    """The cache key of a cell: the recording's and truth's files, the configuration (all of
    it, rotor threads aside: they do not change the result) and the skip."""
    text = json.dumps([_fingerprint(job.recording),
                       _fingerprint(job.truth) if job.truth else None, job.topic,
                       repr(replace(config, threads=0)), job.skip_s])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _read_cached(path: Path) -> Outcome | None:
    """The outcome stored at ``path``, or None (missing, or unreadable: computed again)."""
    try:
        data = json.loads(path.read_text())
        return Outcome(**data['outcome'])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cached(path: Path, outcome: Outcome, cell: dict[str, Any]) -> None:
    """Store a cell's outcome atomically (a kill never leaves half a file)."""
    tmp = path.with_name(path.name + f'.{os.getpid()}.tmp')
    tmp.write_text(json.dumps({'config': cell, 'outcome': outcome.__dict__}, default=str))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- the sweep
@dataclass
class SweepResult:
    """The configurations, every cell's outcome, and how many were computed now."""

    cells: list[dict[str, Any]]
    jobs: list[Job]
    #: (config index, job index) -> outcome
    outcomes: dict[tuple[int, int], Outcome] = field(default_factory=dict)
    computed: int = 0
    cached: int = 0
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        """The sweep's exit status (:func:`~helixtrack_ros.fleet.task.exit_code`)."""
        return exit_code(list(self.outcomes.values()), self.interrupted)


def plan(grid: Grid, params: str | None, preset: str | None) -> list[tuple[dict, Any]]:
    """Every configuration of ``grid`` as (its grid values, PipelineConfig)."""
    from helixtrack_ros.cli.track import load_config
    load_config(params, preset, grid.fixed)   # the file's unknown names, said once
    return [(cell, load_config(params, preset, {**grid.fixed, **cell}, warn=False))
            for cell in grid.cells()]


def run_sweep(configs: list[tuple[dict, Any]], jobs: list[Job], out: Path,
              engine: Any) -> SweepResult:
    """Every configuration on every job: cached cells read, the others run and stored.

    ``engine`` (:class:`~helixtrack_ros.fleet.engine.Engine`) is started only
    when a cell is left to compute.
    """
    cache = output_dir(out / 'cache')
    result = SweepResult([c for c, _ in configs], jobs)
    todo = []
    for ci, (_, config) in enumerate(configs):
        for ji, job in enumerate(jobs):
            path = cache / f'{cell_key(job, config)}.json'
            cached = _read_cached(path)
            if cached is not None:   # (named as given this time)
                result.outcomes[ci, ji] = replace(cached, recording=job.recording,
                                                  name=job.name)
                result.cached += 1
            else:
                todo.append((ci, ji, path))
    if not todo:
        return result
    with engine:
        print(engine.describe(), flush=True)
        calls = [(jobs[ji], configs[ci][1], engine.rotor_threads) for ci, ji, _ in todo]
        try:
            for k, res in engine.map(track_task, calls, 'sweep', unit='cells'):
                ci, ji, path = todo[k]
                if isinstance(res, Outcome):
                    _write_cached(path, res, configs[ci][0])
                else:
                    res = failed(jobs[ji], res.error)
                result.outcomes[ci, ji] = res
                result.computed += 1
        except KeyboardInterrupt:
            result.interrupted = True
    return result


# ---------------------------------------------------------------------------- ranking
def true_rotors(jobs: list[Job]) -> list[list[str]]:
    """The true rotor names of each job's ground truth."""
    from helixtrack_ros.cli.truth import read_ground_truth
    return [sorted(read_ground_truth(Path(job.truth)).rpm) if job.truth else [] for job in jobs]


def cell_rows(result: SweepResult) -> list[dict[str, Any]]:
    """cells.csv: per configuration, recording and rotor the figures (one row per failure)."""
    from helixtrack_ros.fleet.summary import summary_rows
    rows = []
    for (ci, _), outcome in sorted(result.outcomes.items()):
        for row in summary_rows([outcome]):
            rows.append({'config': config_id(ci), **result.cells[ci], **row})
    return rows


def config_id(index: int) -> str:
    """A configuration's name in the tables: c01, c02, ... in grid order."""
    return f'c{index + 1:02d}'


def ranking(result: SweepResult, truths: list[list[str]], rank_by: str = 'mean'
            ) -> list[dict[str, Any]]:
    """One row per configuration, best first by ``rank_by`` (:data:`RANK_BY`).

    Over every (recording, true rotor): mean and worst MArE, worst scale
    error, mean time TRACKING. A true rotor with no MArE (not tracked, not
    matched, its recording failed) is ``missing``; configurations missing
    fewer rank first, whatever their errors.
    """
    rows = []
    for ci, cell in enumerate(result.cells):
        mare, scale, share = [], [], []
        missing = failures = cells = 0
        for ji, names in enumerate(truths):
            outcome = result.outcomes.get((ci, ji))
            if outcome is None:
                continue
            cells += 1
            failures += outcome.status == 'failed'
            by_truth = {r['true_rotor']: r for r in outcome.rotors if r['true_rotor']}
            for name in names:
                r = by_truth.get(name)
                if r is None or not math.isfinite(r['mare_pct']):
                    missing += 1
                    continue
                mare.append(r['mare_pct'])
                share.append(r['tracking_pct'])
                if math.isfinite(r['scale_err_pct']):
                    scale.append(r['scale_err_pct'])
        rows.append({'config': config_id(ci), **cell,
                     'mean_mare_pct': sum(mare) / len(mare) if mare else math.nan,
                     'worst_mare_pct': max(mare, default=math.nan),
                     'worst_scale_err_pct': max(scale, default=math.nan),
                     'mean_tracking_pct': sum(share) / len(share) if share else math.nan,
                     'missing': missing, 'cells': cells, 'failed': failures})
    keys = [RANK_BY[rank_by], *(c for c in RANK_BY.values() if c != RANK_BY[rank_by])]
    rows.sort(key=lambda r: (r['missing'], *(_inf(r[k]) for k in keys)))
    for rank, row in enumerate(rows, 1):
        row['rank'] = rank
    return rows


def _inf(value: float) -> float:
    """NaN sorts last."""
    return math.inf if math.isnan(value) else value
