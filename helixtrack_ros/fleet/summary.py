# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Per-rotor figures of one run, and the summary table and picture of a batch.

:func:`rotor_stats` turns what ``track`` returns into one dict per rotor
(on the worker, so that only a few numbers travel back). The table has one
row per recording and rotor (:data:`COLUMNS`); a recording without any
tracked rotor, a failed one included, has one row with the rotor columns
empty and the reason in ``message``. It is written as ``summary.csv`` and,
where pyarrow is installed, ``summary.parquet``; ``summary.png`` shows it.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from helixtrack_ros.core.metrics import max_scale_error_pct

#: per rotor: the figures of :func:`rotor_stats`
ROTOR_COLUMNS = ['rotor', 'true_rotor', 'rpm_mean', 'rpm_min', 'rpm_max', 'tracking_pct',
                 'events_per_s', 'mae_rpm', 'mare_pct', 'rmse_rpm', 'scale_err_pct',
                 'samples']
#: summary.csv: the recording, its outcome, then the rotor
COLUMNS = ['recording', 'name', 'status', 'exit_code', *ROTOR_COLUMNS, 'sensor_s',
           'wall_s', 'message']
_NAN = float('nan')


def tracking_share(t_us: np.ndarray, state: np.ndarray, t_first_us: int | None,
                   t_last_us: int | None) -> float:
    """Share of the recording's sensor time [0, 1] the rotor was TRACKING.

    A row's state holds from the rotor's previous row to it; time before the
    rotor's first row (before its detection) counts as not tracking.
    """
    from helixtrack_ros.core.health import RotorState
    if t_first_us is None or t_last_us is None or t_last_us <= t_first_us or len(t_us) < 2:
        return 0.0
    dt = np.diff(t_us)
    tracked = float(dt[state[1:] == RotorState.TRACKING].sum())
    return min(1.0, tracked / (t_last_us - t_first_us))


def rotor_stats(info: dict[str, Any], skip_s: float) -> list[dict[str, Any]]:
    """One dict of :data:`ROTOR_COLUMNS` per rotor of a ``track`` run (``track_recording``).

    RPM figures are over the measured (TRACKING) values; errors against ground
    truth as ``track`` prints them (after ``skip_s`` from the rotor's first
    output), NaN without ground truth; ``scale_err_pct`` is the largest
    relative tip-radius error over the same span, where the truth has radii.
    """
    errors = dict(info['table'])
    pairs = info['match'].pairs if info['match'] is not None else {}
    radius = info['truth_radius'] or {}
    sensor_s = info['sensor_s']
    out = []
    for name, a in info['arrays'].items():
        rpm = a['rpm'][np.isfinite(a['rpm'])]
        e = errors.get(name)
        scale = _NAN
        if name in radius and len(a['t_us']):
            scale = max_scale_error_pct(a['t_us'], a['scale_px'], *radius[name],
                                        t_from_us=int(a['t_us'][0]) + int(skip_s * 1e6))
        out.append({
            'rotor': name, 'true_rotor': pairs.get(name, ''),
            'rpm_mean': float(rpm.mean()) if len(rpm) else _NAN,
            'rpm_min': float(rpm.min()) if len(rpm) else _NAN,
            'rpm_max': float(rpm.max()) if len(rpm) else _NAN,
            'tracking_pct': 100.0 * tracking_share(a['t_us'], a['state'], info['t_first_us'],
                                                   info['t_last_us']),
            'events_per_s': float(a['events'].sum()) / sensor_s if sensor_s > 0 else _NAN,
            'mae_rpm': e.mae_rpm if e else _NAN, 'mare_pct': e.mare_pct if e else _NAN,
            'rmse_rpm': e.rmse_rpm if e else _NAN, 'scale_err_pct': scale,
            'samples': e.n if e else 0})
    return out


def summary_rows(outcomes: list[Any]) -> list[dict[str, Any]]:
    """The table: per outcome (:class:`~helixtrack_ros.fleet.task.Outcome`) one row per
    rotor, or one row without rotor when it has none."""
    rows = []
    for o in outcomes:
        head = {'recording': o.recording, 'name': o.name, 'status': o.status,
                'exit_code': o.exit_code}
        tail = {'sensor_s': o.sensor_s, 'wall_s': o.wall_s, 'message': o.message}
        for rotor in o.rotors or [{}]:
            rows.append({**head, **{k: rotor.get(k, '') for k in ROTOR_COLUMNS}, **tail})
    return rows


def _cell(value: Any) -> str:
    """A CSV cell: floats with up to 6 significant digits, NaN as empty."""
    if isinstance(value, float):
        return '' if math.isnan(value) else f'{value:.6g}'
    return str(value)


def write_table(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """``path`` as CSV of ``columns`` (NaN as an empty cell)."""
    with path.open('w', newline='') as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for row in rows:
            w.writerow([_cell(row.get(c, '')) for c in columns])


def write_parquet(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> bool:
    """``path`` as Parquet when pyarrow is installed (empty cells as nulls); False if not."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    data = {c: [None if row.get(c, '') == '' else row.get(c) for row in rows] for c in columns}
    pq.write_table(pa.table(data), path)
    return True


def write_summary(out: Path, outcomes: list[Any]) -> list[Path]:
    """summary.csv, summary.parquet (with pyarrow) and summary.png in ``out``; their paths."""
    rows = summary_rows(outcomes)
    written = [out / 'summary.csv']
    write_table(written[0], rows, COLUMNS)
    if write_parquet(out / 'summary.parquet', rows, COLUMNS):
        written.append(out / 'summary.parquet')
    plot_summary(out / 'summary.png', rows)
    written.append(out / 'summary.png')
    return written


def plot_summary(path: Path, rows: list[dict[str, Any]]) -> None:
    """summary.png: per recording and rotor, shaft RPM (mean, min-max) and time TRACKING.

    A recording without rotor says why in red; MArE, where known, is written
    beside the time TRACKING.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory
    fig, (ax_rpm, ax_tr) = plt.subplots(
        1, 2, figsize=(12, max(2.5, 1.2 + 0.28 * len(rows))), dpi=100, sharey=True,
        gridspec_kw={'width_ratios': [3, 2]})
    left = blended_transform_factory(ax_rpm.transAxes, ax_rpm.transData)
    y = np.arange(len(rows))[::-1]
    for yi, row in zip(y, rows):
        if row['rotor'] == '':
            ax_rpm.text(0.01, yi, f'{row["status"]}: {row["message"]}'[:120], va='center',
                        fontsize=7, color='C3', transform=left)
            continue
        lo, mean, hi = (_num(row[k]) for k in ('rpm_min', 'rpm_mean', 'rpm_max'))
        if math.isfinite(mean):
            ax_rpm.plot([lo, hi], [yi, yi], color='C0', lw=2, alpha=0.5)
            ax_rpm.plot(mean, yi, 'o', color='C0', ms=4)
        share = _num(row['tracking_pct'])
        ax_tr.barh(yi, share, color='C2' if share >= 90 else 'C1', height=0.6)
        note = f'{share:.0f} %'
        if math.isfinite(_num(row['mare_pct'])):
            note += f'  MArE {_num(row["mare_pct"]):.3g} %'
        ax_tr.text(min(share, 100) + 1, yi, note, va='center', fontsize=7)
    ax_rpm.set_yticks(y, [f'{r["name"]}  {r["rotor"]}'.rstrip() for r in rows], fontsize=7)
    ax_rpm.set_ylim(-0.7, len(rows) - 0.3)
    ax_rpm.ticklabel_format(axis='x', style='plain', useOffset=False)
    ax_rpm.set_xlabel('shaft RPM (dot: mean, bar: min - max)')
    ax_tr.set_xlim(0, 130)
    ax_tr.set_xlabel('time TRACKING [%]')
    for ax in (ax_rpm, ax_tr):
        ax.grid(alpha=0.3, axis='x')
    fig.suptitle(f'helixtrack batch: {len({r["recording"] for r in rows})} recording(s)')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _num(value: Any) -> float:
    """A table cell as a float (empty: NaN)."""
    return _NAN if value in ('', None) else float(value)
