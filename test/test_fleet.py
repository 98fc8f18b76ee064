# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack batch`` and ``helixtrack sweep`` on a local Dask cluster (issue #17).

Three short simulated recordings: a lone rotor (rosbag2), the same rotor
hidden from 0.18 s on (a .raw file: the track is lost), and random bytes
named .raw (corrupt). The batch tests and the sweep share one local cluster
of two worker processes (``--scheduler``); the kill-and-resume test starts
the embedded one in a subprocess.
"""

import csv
import logging
import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip('distributed')

from helixtrack_ros.cli import main, simulate_to_dir  # noqa: E402
from helixtrack_ros.cli.common import CliError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GRID_2X2 = ROOT / 'config' / 'sweep_example_2x2.yaml'
SIZE = (640, 360)   # a quarter of the events of 1280 x 720: short tasks
SKIP = '0.05'


@pytest.fixture(scope='module')
def flights(tmp_path_factory):
    """ok/events (bag), lost/events.raw (rotor hidden from 0.18 s), corrupt.raw."""
    top = tmp_path_factory.mktemp('flights')
    simulate_to_dir('lone_constant', 0.3, 3, top / 'ok', quiet=True, sensor_size=SIZE)
    simulate_to_dir('lone_constant', 0.3, 3, top / 'lost', quiet=True, sensor_size=SIZE,
                    fmt='raw-evt3', scene_kw={'hide_rotor': ('rotor', 0.18, 0.3)})
    (top / 'corrupt.raw').write_bytes(np.random.default_rng(0).bytes(20_000))
    return {'ok': top / 'ok' / 'events', 'lost': top / 'lost' / 'events.raw',
            'corrupt': top / 'corrupt.raw'}


@pytest.fixture(scope='module')
def scheduler():
    """The address of a local cluster: two worker processes, one thread each."""
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=':0', silence_logs=logging.CRITICAL) as cluster:
        yield cluster.scheduler_address


def read_csv(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open()))


# ---------------------------------------------------------------------------- batch
def test_batch_summary_rows_and_a_failure_row(flights, scheduler, tmp_path, capsys):
    out = tmp_path / 'batch'
    code = main(['batch', str(flights['ok']), str(flights['lost']), str(flights['corrupt']),
                 '--out', str(out), '--skip', SKIP, '--scheduler', scheduler, '-q'])
    text = capsys.readouterr().out
    assert code == 0, text   # one recording failed, the others were tracked
    rows = {r['name']: r for r in read_csv(out / 'summary.csv')}
    assert set(rows) == {'ok/events', 'lost/events.raw', 'corrupt.raw'}
    ok, lost, bad = rows['ok/events'], rows['lost/events.raw'], rows['corrupt.raw']
    for r in (ok, lost):
        assert r['status'] == 'ok' and r['exit_code'] == '0' and r['message'] == ''
        assert r['rotor'] == 'rotor_0' and r['true_rotor'] == 'rotor'   # matched by position
        assert abs(float(r['rpm_mean']) - 10_000) < 20
        assert float(r['rpm_min']) <= float(r['rpm_mean']) <= float(r['rpm_max'])
        assert float(r['mare_pct']) < 0.1 and float(r['mae_rpm']) < 10
        assert float(r['events_per_s']) > 1e5 and int(r['samples']) > 10
        assert 0 <= float(r['scale_err_pct']) < 10
    # detected at 0.1 s, then tracked to the end / until hidden at 0.18 s
    assert 50 < float(ok['tracking_pct']) <= 67
    assert 10 < float(lost['tracking_pct']) < 30
    assert bad['status'] == 'failed' and bad['exit_code'] == '2' and bad['rotor'] == ''
    assert 'no Metavision RAW header' in bad['message']
    assert 'no Metavision RAW header' in text and 'rotor_0' in text
    # per recording what track writes, and the summary picture
    for name in ('ok/events', 'lost/events.raw'):
        for f in ('rpm.csv', 'results.mcap', 'rpm.png', 'overlay.png'):
            assert (out / name / f).is_file(), (name, f)
    assert not (out / 'corrupt.raw').exists()
    assert (out / 'summary.png').stat().st_size > 10_000


def test_batch_where_nothing_succeeds_exits_non_zero(flights, scheduler, tmp_path, capsys):
    out = tmp_path / 'batch'
    assert main(['batch', str(flights['corrupt']), str(tmp_path / 'missing.raw'), '--out',
                 str(out), '--scheduler', scheduler, '-q']) == 2
    rows = read_csv(out / 'summary.csv')
    assert [r['status'] for r in rows] == ['failed', 'failed']
    assert 'not found' in rows[1]['message'].lower()
    capsys.readouterr()


def test_more_workers_than_cores_are_capped_with_one_line(tmp_path, capsys):
    """Before: --workers 1000 on 2 cores started 1000 processes (> 60 s, 480 semaphores
    leaked on kill; helper review, 2026-11-27)."""
    from helixtrack_ros.fleet.engine import Engine, available_cores
    cores = available_cores()
    assert Engine(workers=cores + 1000).workers == cores
    line = capsys.readouterr().err.strip()
    assert line == (f'helixtrack: warning: --workers {cores + 1000} is more than the {cores} '
                    f'cores this process may use: using {cores}')
    assert Engine(workers=cores).workers == cores and not capsys.readouterr().err
    assert main(['batch', str(tmp_path / 'x.raw'), '--out', str(tmp_path / 'o'),
                 '--workers', '100000', '--params', str(tmp_path / 'none.yaml')]) == 2
    assert f'--workers 100000 is more than the {cores} cores' in capsys.readouterr().err


def test_a_sweep_of_no_recording_says_so(tmp_path, capsys):
    """Before: an empty directory was "no recording has ground truth beside it", as if a
    recording had been found (helper review, 2026-11-27)."""
    (tmp_path / 'empty').mkdir()
    assert main(['sweep', str(tmp_path / 'empty'), str(tmp_path / 'none.raw'), '--grid',
                 str(GRID_2X2), '-q', '-o', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f'helixtrack: error: no recording found: {tmp_path / "empty"} is not a '
                   'rosbag2 directory: no metadata.yaml and 0 .mcap/.db3 files (and 1 more)')


def test_batch_refuses_a_bad_command_line_before_any_work(flights, tmp_path, capsys):
    assert main(['batch', str(flights['ok']), '--out', str(tmp_path / 'o'),
                 '--workers', '0']) == 2
    assert '--workers must be at least 1' in capsys.readouterr().err
    assert main(['batch', str(flights['ok']), '--out', str(tmp_path / 'o'), '--params',
                 str(tmp_path / 'none.yaml')]) == 2
    assert 'none.yaml' in capsys.readouterr().err


def test_kernels_load_per_worker_and_a_crashing_task_is_retried(scheduler, tmp_path):
    from helixtrack_ros.fleet.engine import Engine, Failure
    marker = tmp_path / 'first-try'

    def flaky(x):   # nested: Dask sends it by value to the worker processes
        if x == 1 and not marker.exists():
            marker.touch()
            raise RuntimeError('worker hiccup')
        if x == 2:
            raise ValueError('always broken')
        return x * 10

    def kernels_loaded():
        from helixtrack_ros.core.tracker_kernel import _process
        return len(_process.signatures)

    with Engine(scheduler, retries=1, quiet=True) as engine:
        # every worker loaded the tracker's kernels when the engine started, before any task
        loaded = engine.client.run(kernels_loaded)
        assert len(loaded) == 2 and all(n > 0 for n in loaded.values())
        results = dict(engine.map(flaky, [(0,), (1,), (2,)], 'flaky'))
    assert results[0] == 0 and results[1] == 10   # the hiccup was retried
    assert marker.exists()
    assert isinstance(results[2], Failure)
    assert 'ValueError: always broken' in results[2].error and 'tried 2 times' in results[2].error


# ---------------------------------------------------------------------------- sweep
def test_sweep_2x2_gives_a_ranking(flights, scheduler, tmp_path, capsys):
    out = tmp_path / 'sweep'
    args = ['sweep', '--grid', str(GRID_2X2), str(flights['ok']), str(flights['lost']),
            str(flights['corrupt']), '--out', str(out), '--skip', SKIP, '--scheduler',
            scheduler, '-q']
    assert main(args) == 0
    captured = capsys.readouterr()
    assert 'no ground truth beside' in captured.err and 'corrupt.raw' in captured.err
    assert '8 cell(s) computed, 0 from the cache' in captured.out
    ranking = read_csv(out / 'ranking.csv')
    assert [r['rank'] for r in ranking] == ['1', '2', '3', '4']
    assert sorted(r['config'] for r in ranking) == ['c01', 'c02', 'c03', 'c04']
    assert {(r['tracker.r_in'], r['tracker.r_out']) for r in ranking} == {
        ('0.1', '1.4'), ('0.1', '1.5'), ('0.2', '1.4'), ('0.2', '1.5')}
    mean = [float(r['mean_mare_pct']) for r in ranking]
    assert mean == sorted(mean) and mean[-1] < 0.1
    for r in ranking:
        assert r['missing'] == '0' and r['cells'] == '2'
        assert float(r['worst_mare_pct']) >= float(r['mean_mare_pct'])
        assert float(r['worst_scale_err_pct']) >= 0
    assert len(read_csv(out / 'cells.csv')) == 8
    # run again: everything comes from the cache
    assert main(args) == 0
    assert '0 cell(s) computed, 8 from the cache' in capsys.readouterr().out
    assert read_csv(out / 'ranking.csv') == ranking


def test_a_sweep_killed_half_way_resumes_without_redoing_finished_cells(flights, scheduler,
                                                                         tmp_path, capsys):
    out = tmp_path / 'sweep'
    args = ['sweep', '--grid', str(GRID_2X2), str(flights['ok']), '--out', str(out), '--skip',
            SKIP, '-q']
    cache = out / 'cache'
    proc = subprocess.Popen([sys.executable, '-m', 'helixtrack_ros.cli', *args,
                             '--workers', '1'], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not list(cache.glob('*.json')) and proc.poll() is None:
            assert time.monotonic() < deadline, 'no cell finished in time'
            time.sleep(0.05)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the command and its cluster's processes
        except ProcessLookupError:   # it had ended
            pass
        _, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err.decode()
    done = {p.name: p.stat().st_mtime_ns for p in cache.glob('*.json')}
    assert 1 <= len(done) < 4
    assert not list(cache.glob('*.tmp'))
    assert main([*args, '--scheduler', scheduler]) == 0
    assert f'{4 - len(done)} cell(s) computed, {len(done)} from the cache' in (
        capsys.readouterr().out)
    after = {p.name: p.stat().st_mtime_ns for p in cache.glob('*.json')}
    assert len(after) == 4
    assert {k: after[k] for k in done} == done   # the finished cells were not written again
    assert len(read_csv(out / 'ranking.csv')) == 4


def test_grid_files_are_checked_like_parameter_files(tmp_path):
    from helixtrack_ros.fleet.sweep import load_grid
    grid = load_grid(ROOT / 'config' / 'sweep_paper_s3.yaml')
    assert len(grid.cells()) == 24 and grid.fixed['preset'] == 'paper'
    assert grid.fixed['tracker.q_jerk'] == 400.0
    assert grid.axes['tracker.r_in'] == [0.0, 0.1, 0.2, 0.3]
    cases = {
        'grid: {tracker.r_inn: [0.1]}': 'tracker.r_inn (did you mean tracker.r_in?)',
        'grid: {tracker: {r_in: [0.1, -1.0]}}': 'parameter tracker.r_in: -1.0 is below',
        'grid: {tracker.gn_min_events: [10, 2.5]}': 'must be an integer',
        'grid: {preset: [paper, papper]}': "must be 'default' or 'paper' or 'release'",
        'grid: {tracker.r_in: 0.1}': 'expected a list of values',
        'grid: {tracker.r_in: [0.1, 0.1]}': 'repeated',
        'fixed: {tracker.r_in: 0.1}\ngrid: {tracker.r_in: [0.2]}': 'both fixed and in the grid',
        'fixed: {preset: paper}': 'expected a mapping with grid:',
        'grid: {tracker.r_in: [0.1]}\nsweep: 1': 'unknown sections sweep',
        'grid: {tracker.r_in: [0.1], tracker.r_in: [0.2]}':
            "line 1, column 29: duplicate key 'tracker.r_in'",
    }
    for text, message in cases.items():
        path = tmp_path / 'grid.yaml'
        path.write_text(text)
        with pytest.raises(CliError, match='grid.yaml') as exc:
            load_grid(path)
        assert message in str(exc.value), (text, str(exc.value))


# ---------------------------------------------------------------------------- helpers
def test_recording_names_truth_beside_and_tracking_share(tmp_path):
    from helixtrack_ros.core.health import RotorState
    from helixtrack_ros.fleet.batch import recording_names, truth_beside, unique_recordings
    from helixtrack_ros.fleet.summary import tracking_share
    assert recording_names(['/d/a/events', '/d/b/events']) == ['a/events', 'b/events']
    assert recording_names(['/d/x.raw']) == ['x.raw']
    assert unique_recordings(['a.raw', './a.raw', 'b.raw']) == ['a.raw', 'b.raw']
    (tmp_path / 'bag').mkdir()
    (tmp_path / 'f.raw').touch()
    assert truth_beside(str(tmp_path / 'f.raw')) is None
    (tmp_path / 'ground_truth.csv').touch()
    assert truth_beside(str(tmp_path / 'f.raw')) == str(tmp_path / 'ground_truth.csv')
    (tmp_path / 'f.ground_truth.csv').touch()
    assert truth_beside(str(tmp_path / 'f.raw')) == str(tmp_path / 'f.ground_truth.csv')
    (tmp_path / 'bag' / 'ground_truth.csv').touch()
    assert truth_beside(str(tmp_path / 'bag')) == str(tmp_path / 'bag' / 'ground_truth.csv')
    t = np.array([100, 200, 300, 400, 500], np.int64)
    tr, lost = int(RotorState.TRACKING), int(RotorState.LOST)
    state = np.array([lost, tr, tr, lost, tr])
    assert tracking_share(t, state, 0, 1000) == pytest.approx(0.3)
    assert tracking_share(t[:1], state[:1], 0, 1000) == 0.0


def test_readme_has_the_fleet_sections():
    text = (ROOT / 'README.md').read_text()
    for words in ('### Analysing many flights', '### Sweeping parameters', '--scheduler',
                  'helixtrack batch', 'helixtrack sweep', 'summary.csv',
                  'config/sweep_paper_s3.yaml', 'dask worker'):
        assert words in text, words


def test_summary_files_from_outcomes(tmp_path):
    """summary.csv always, summary.parquet where pyarrow is installed, summary.png."""
    from helixtrack_ros.fleet.summary import COLUMNS, write_summary
    from helixtrack_ros.fleet.task import Outcome
    rotor = {'rotor': 'rotor_0', 'true_rotor': 'rotor', 'rpm_mean': 5000.0, 'rpm_min': 4990.0,
             'rpm_max': 5010.0, 'tracking_pct': 95.0, 'events_per_s': 1e6, 'mae_rpm': 2.0,
             'mare_pct': 0.04, 'rmse_rpm': 2.5, 'scale_err_pct': float('nan'), 'samples': 90}
    outcomes = [Outcome('a.raw', 'a.raw', 'ok', 0, '', [rotor], 10**6, 1.0, 2.0),
                Outcome('b.raw', 'b.raw', 'failed', 2, 'b.raw: broken')]
    written = write_summary(tmp_path, outcomes)
    rows = read_csv(tmp_path / 'summary.csv')
    assert list(rows[0]) == COLUMNS
    assert rows[0]['rpm_mean'] == '5000' and rows[0]['scale_err_pct'] == ''
    assert rows[1]['status'] == 'failed' and rows[1]['rotor'] == '' and rows[1]['message']
    assert (tmp_path / 'summary.png') in written
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert not (tmp_path / 'summary.parquet').exists()
        return
    table = pq.read_table(tmp_path / 'summary.parquet').to_pylist()
    assert table[0]['rpm_mean'] == 5000.0 and table[1]['rotor'] is None
