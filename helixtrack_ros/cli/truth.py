# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Ground truth for ``helixtrack track --ground-truth``: reading it, matching, errors.

The CSV has ``t_us,rotor,rpm`` (shaft RPM) and, from ``helixtrack simulate``,
``x_px,y_px`` (the rotor's image centre) and ``radius_px`` (its tip radius).
Tracked rotors are compared with the true rotor of the same name; when the
names differ (start-up detection names them ``rotor_0``, ...) they are
matched by position instead (:func:`match_rotors`).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from helixtrack_ros.cli.common import CliError

#: a tracked rotor matches a true one whose centre is less than this many of its radii away
MATCH_RADII = 0.5


class GroundTruth(NamedTuple):
    """Per true rotor: ``rpm`` name -> (t_us, rpm); ``xy`` name -> (t_us, x, y) or None;
    ``radius`` name -> (t_us, tip radius [px]) or None."""

    rpm: dict[str, tuple[np.ndarray, np.ndarray]]
    xy: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None
    radius: dict[str, tuple[np.ndarray, np.ndarray]] | None = None


def read_ground_truth(path: Path) -> GroundTruth:
    """Read ``t_us,rotor,rpm[,x_px,y_px][,radius_px]`` rows into per-rotor arrays."""
    if path.is_dir():
        raise CliError(f'{path} is a directory, not a ground-truth file')
    if not path.is_file():
        raise CliError(f'ground truth file not found: {path}')
    try:
        per, has_xy, has_radius = _truth_columns(path)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise CliError(f'{path}: not a ground-truth CSV file ({exc})') from None
    if not per:
        raise CliError(f'{path}: no ground-truth rows below the header')
    t = {k: np.asarray(v[0], np.int64) for k, v in per.items()}
    rpm = {k: (t[k], np.asarray(v[1], np.float64)) for k, v in per.items()}
    xy = ({k: (t[k], np.asarray(v[2]), np.asarray(v[3])) for k, v in per.items()}
          if has_xy else None)
    radius = {k: (t[k], np.asarray(v[4])) for k, v in per.items()} if has_radius else None
    return GroundTruth(rpm, xy, radius)


def _truth_columns(path: Path) -> tuple[dict[str, list[list[float]]], bool, bool]:
    """Per rotor the columns t, rpm, x, y, radius; whether x / y and radius are there."""
    per: dict[str, list[list[float]]] = {}
    with path.open(encoding='utf-8') as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {'t_us', 'rotor', 'rpm'} <= set(reader.fieldnames):
            raise CliError(f'{path}: expected columns t_us,rotor,rpm')
        has_xy = {'x_px', 'y_px'} <= set(reader.fieldnames)
        has_radius = 'radius_px' in reader.fieldnames
        try:
            for row in reader:
                cols = per.setdefault(row['rotor'], [[], [], [], [], []])
                cols[0].append(int(row['t_us']))
                cols[1].append(float(row['rpm']))
                if has_xy:
                    cols[2].append(float(row['x_px']))
                    cols[3].append(float(row['y_px']))
                if has_radius:
                    cols[4].append(float(row['radius_px']))
        except UnicodeDecodeError:
            raise
        except (TypeError, ValueError) as exc:
            raise CliError(f'{path}, line {reader.line_num}: {exc}') from None
    return per, has_xy, has_radius


class Match(NamedTuple):
    """How tracked rotors were paired with true ones (:func:`match_rotors`)."""

    #: tracked name -> true name
    pairs: dict[str, str]
    #: tracked name -> distance [px] between the centres (empty when matched by name)
    distance_px: dict[str, float]
    #: one line saying what could not be matched and why, or None
    problem: str | None = None


def match_rotors(tracked: dict[str, tuple[int, float, float, float]],
                 truth: GroundTruth) -> Match:
    """Pair tracked rotors with true ones: by name when every name is a true one, else by place.

    ``tracked``: name -> (t_us, x, y, radius) of where the rotor was first seen.
    A pair is the closest still free true centre at that time, within
    :data:`MATCH_RADII` of the tracked radius; the closest pairs are made first.
    """
    if all(n in truth.rpm for n in tracked):
        return Match({n: n for n in tracked}, {})
    if truth.xy is None:
        missing = [n for n in tracked if n not in truth.rpm]
        return Match({n: n for n in tracked if n in truth.rpm}, {},
                     'no true rotor named ' + ', '.join(missing) + ', and the ground truth '
                     'has no x_px,y_px columns to match by position: left out of the errors')
    cands = []
    for name, (t_us, x, y, radius) in tracked.items():
        for true_name, (tt, tx, ty) in truth.xy.items():
            d = float(np.hypot(np.interp(t_us, tt, tx) - x, np.interp(t_us, tt, ty) - y))
            if d < MATCH_RADII * radius:
                cands.append((d, name, true_name))
    pairs: dict[str, str] = {}
    dist: dict[str, float] = {}
    for d, name, true_name in sorted(cands):
        if name not in pairs and true_name not in pairs.values():
            pairs[name], dist[name] = true_name, d
    missing = [n for n in tracked if n not in pairs]
    problem = None
    if missing:
        problem = ('no true rotor centre within half a radius of ' + ', '.join(
            f'{n} ({tracked[n][1]:.0f}, {tracked[n][2]:.0f}) px' for n in missing)
            + ': left out of the errors')
    return Match({n: pairs[n] for n in tracked if n in pairs}, dist, problem)


def error_table(rows: dict[str, dict[str, np.ndarray]],
                truth: dict[str, tuple[np.ndarray, np.ndarray]],
                skip_us: int) -> list[tuple[str, Any]]:
    """Per tracked rotor with a truth of the same name: its RPM errors after ``skip_us``."""
    from helixtrack_ros.core.metrics import rpm_errors
    table = []
    for name, track in rows.items():
        if name not in truth:
            continue
        t0 = int(track['t_us'][0]) + skip_us if len(track['t_us']) else 0
        table.append((name, rpm_errors(track['t_us'], track['rpm'], *truth[name],
                                       t_from_us=t0)))
    return table


def print_error_table(table: list[tuple[str, Any]], skip_s: float) -> None:
    """Print the MAE / MArE / RMSE table of :func:`error_table`."""
    print(f'shaft-RPM error against ground truth (after the first {skip_s:g} s):')
    print(f'  {"rotor":<14}{"MAE [RPM]":>12}{"MArE [%]":>11}{"RMSE [RPM]":>13}{"samples":>9}')
    for name, e in table:
        print(f'  {name:<14}{e.mae_rpm:>12.2f}{e.mare_pct:>11.3f}{e.rmse_rpm:>13.2f}{e.n:>9d}')
