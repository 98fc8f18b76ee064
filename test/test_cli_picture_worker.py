# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The picture worker (#16.4): the same pictures as drawn in the command, and never one
missing when the worker is gone or fails."""

import numpy as np
import pytest

from helixtrack_ros.cli import picture_worker
from helixtrack_ros.cli.picture_worker import PictureWorker
from helixtrack_ros.cli.pictures import Frame, Mark
from helixtrack_ros.debug_image import detection_homography


def _jobs(tmp_path, tag):
    rng = np.random.default_rng(3)
    t_us = np.arange(0, 500_000, 1000)
    arrays = {'a': {'t_us': t_us, 'rpm': 6000 + rng.normal(0, 5, len(t_us))},
              'b': {'t_us': t_us, 'rpm': np.full(len(t_us), np.nan)}}
    truth = {'a': (t_us, np.full(len(t_us), 6000.0))}
    d = type('D', (), {'radius_px': 30, 'psi_rad': 0.0, 'center_px': (100, 80),
                       'perspective': (0.0, 0.0)})()
    frame = Frame(0.1, rng.integers(0, 320, 4000), rng.integers(0, 240, 4000),
                  rng.integers(0, 2, 4000), [Mark('a', detection_homography(d), 2, 1, 6000.0)])
    return [('rpm', (tmp_path / f'rpm_{tag}.png', arrays, truth)),
            ('frames', (tmp_path / f'overlay_{tag}.png', 320, 240, [frame], 'title'))]


def _here(jobs):
    return [picture_worker._run(name, args) for name, args in jobs]


def test_worker_draws_the_same_bytes_as_the_command(tmp_path, monkeypatch):
    with PictureWorker().start() as worker:
        assert worker._proc is not None
        with monkeypatch.context() as m:   # (drawn here, the test would fail)
            m.setattr(picture_worker, '_run', None)
            got = worker.draw(_jobs(tmp_path, 'worker'))
    want = _here(_jobs(tmp_path, 'here'))
    assert got == want and got[1][0][0].text.startswith('a')
    for name in ('rpm', 'overlay'):
        assert ((tmp_path / f'{name}_worker.png').read_bytes()
                == (tmp_path / f'{name}_here.png').read_bytes())


def test_a_dead_worker_leaves_the_pictures_to_the_command(tmp_path):
    worker = PictureWorker().start()
    worker._proc.kill()
    worker._proc.wait()
    got = worker.draw(_jobs(tmp_path, 'w'))
    assert got[0] is None and len(got[1]) == 1
    assert (tmp_path / 'rpm_w.png').stat().st_size > 5_000
    assert (tmp_path / 'overlay_w.png').stat().st_size > 5_000


def test_a_worker_that_cannot_start_leaves_the_pictures_to_the_command(tmp_path, monkeypatch):
    monkeypatch.setattr(picture_worker.sys, 'executable', str(tmp_path / 'no-python'))
    worker = PictureWorker().start()
    assert worker._proc is None
    worker.draw(_jobs(tmp_path, 'w'))
    assert (tmp_path / 'rpm_w.png').stat().st_size > 5_000


def test_a_job_failing_in_the_worker_fails_in_the_command_too(tmp_path):
    jobs = _jobs(tmp_path, 'w')
    jobs[0] = ('rpm', (tmp_path / 'no_dir' / 'rpm.png', *jobs[0][1][1:]))
    with PictureWorker().start() as worker, pytest.raises(FileNotFoundError):
        worker.draw(jobs)


def test_closing_an_unused_worker_ends_it():
    with PictureWorker() as worker:
        assert worker._proc is None      # (only start() starts one: a run starts one worker)
        worker.start()
        proc = worker._proc
    assert proc.poll() is not None and worker._proc is None


def test_a_track_run_starts_one_worker_and_leaves_none(tmp_path_factory, tmp_path, monkeypatch):
    """(A first version started a second worker on entering the context: each imported
    matplotlib while the rotors ran.)"""
    from cli_scenes import simulated

    from helixtrack_ros.cli import main
    scene = simulated(tmp_path_factory, 'lone_constant', 0.05, 1)
    started = []
    real = picture_worker.subprocess.Popen

    def counting(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]
    monkeypatch.setattr(picture_worker.subprocess, 'Popen', counting)
    assert main(['track', str(scene / 'events'), '--params', str(scene / 'params.yaml'),
                 '-q', '-o', str(tmp_path / 'o')]) == 0
    assert len(started) == 1 and started[0].poll() == 0
    assert (tmp_path / 'o' / 'rpm.png').stat().st_size > 5_000


def test_ctrl_c_while_the_worker_draws_ends_the_worker(tmp_path, monkeypatch):
    """(Before: the worker, which ignores SIGINT, drew on after the command had said
    "interrupted", then printed a BrokenPipeError traceback; review.)"""
    worker = PictureWorker().start()
    proc = worker._proc

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(proc, 'communicate', interrupted)
    with pytest.raises(KeyboardInterrupt):
        worker.draw(_jobs(tmp_path, 'w'))
    assert proc.poll() is not None and not (tmp_path / 'rpm_w.png').exists()


def test_a_job_failing_in_a_forked_copy_fails_in_the_command_too(tmp_path):
    jobs = _jobs(tmp_path, 'w')
    jobs[1] = ('frames', (tmp_path / 'no_dir' / 'overlay.png', *jobs[1][1][1:]))
    with PictureWorker().start() as worker, pytest.raises(FileNotFoundError):
        worker.draw(jobs)
    assert (tmp_path / 'rpm_w.png').stat().st_size > 5_000


def test_the_worker_draws_the_jobs_after_the_first_in_forked_copies(monkeypatch):
    """(rpm.png and overlay.png at the same time: the command waits for the slower one.)"""
    import os
    monkeypatch.setattr(picture_worker, '_run', lambda name, args: (name, os.getpid()))
    got = picture_worker._run_side_by_side([('rpm', ()), ('frames', ()), ('rpm', ())])
    assert [name for name, _ in got] == ['rpm', 'frames', 'rpm']
    pids = [pid for _, pid in got]
    assert pids[0] == os.getpid() and len(set(pids)) == 3


def test_jobs_sent_early_to_a_worker_that_does_not_read_never_hold_the_run(tmp_path,
                                                                           monkeypatch):
    """(Code review: the pipe takes 64 KB and the early overlay is megabytes, so a worker
    still importing, or hung, held the tracking loop in submit with no time limit.)"""
    import subprocess
    import sys
    worker = PictureWorker()
    worker._proc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    start_new_session=True)
    jobs = _jobs(tmp_path, 'w')
    big = ('frames', (*jobs[1][1][:3], jobs[1][1][3] * 40, jobs[1][1][4]))
    worker.submit([big])              # returns while the bytes wait in the pipe
    assert worker._sender is not None and worker._sender.is_alive()
    monkeypatch.setattr(picture_worker, '_TIMEOUT_S', 0.5)
    got = worker.draw([jobs[0]])      # the worker never read: it is ended, drawn here
    assert len(got) == 2 and worker._proc is None
    assert (tmp_path / 'rpm_w.png').stat().st_size > 5_000
    assert (tmp_path / 'overlay_w.png').stat().st_size > 5_000
