# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Ground truth for ``helixtrack track --ground-truth``: reading it, the error table."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from helixtrack_ros.cli.common import CliError


def read_ground_truth(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Read ``t_us,rotor,rpm`` rows into per-rotor arrays."""
    if not path.is_file():
        raise CliError(f'ground truth file not found: {path}')
    per: dict[str, tuple[list[int], list[float]]] = {}
    with path.open() as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {'t_us', 'rotor', 'rpm'} <= set(reader.fieldnames):
            raise CliError(f'{path}: expected columns t_us,rotor,rpm')
        for row in reader:
            ts, rs = per.setdefault(row['rotor'], ([], []))
            ts.append(int(row['t_us']))
            rs.append(float(row['rpm']))
    return {k: (np.asarray(v[0], np.int64), np.asarray(v[1], np.float64))
            for k, v in per.items()}


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
