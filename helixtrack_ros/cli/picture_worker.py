# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The offline pictures drawn by a helper process started with the command.

Importing matplotlib and drawing ``rpm.png`` and ``overlay.png`` cost about
as much as tracking a second of a busy recording. A :class:`PictureWorker`
starts ``python -m helixtrack_ros.cli.picture_worker`` when a run begins:
it imports matplotlib while the command loads its kernels and tracks, then
waits for the pictures to draw (pickled over its stdin) and draws them
while the command finishes its other outputs. If it cannot start, dies or
fails, the pictures are drawn in this process as before, so a picture is
never missing because of the worker.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
from typing import Any

#: the drawing functions a job may name: (module, function)
_JOBS = {'rpm': ('helixtrack_ros.cli.plots', 'plot_rpm'),
         'frames': ('helixtrack_ros.cli.pictures', 'draw_frames')}
#: seconds the pictures may take in the worker before they are drawn here instead
_TIMEOUT_S = 120.0


def _run(name: str, args: tuple) -> Any:
    """Draw one picture job in this process."""
    import importlib
    module, func = _JOBS[name]
    return getattr(importlib.import_module(module), func)(*args)


class PictureWorker:
    """A helper process that draws the pictures of a run (see the module docstring)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._early: list[tuple[str, tuple]] = []   # jobs sent by :meth:`submit`
        self._sender: threading.Thread | None = None

    def start(self) -> PictureWorker:
        """Start the worker (it imports matplotlib at once); nothing when it cannot start."""
        try:
            # (a session of its own: ending it ends the copies it forked, see _end)
            self._proc = subprocess.Popen([sys.executable, '-m', __name__],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          start_new_session=True)
        except OSError:
            self._proc = None
        return self

    def submit(self, jobs: list[tuple[str, tuple]]) -> None:
        """Have the worker start drawing these jobs now, while the run goes on (their
        results come with :meth:`draw`'s). Sent by a thread of its own: the pipe takes
        64 KB, and a worker still importing would hold the run until it reads."""
        self._early.extend(jobs)
        proc = self._proc
        if proc is None or proc.stdin is None:
            return
        try:
            data = pickle.dumps(('draw', jobs))
        except Exception:   # noqa: BLE001  (an argument that does not pickle: drawn here)
            self._proc = None
            _end(proc)
            return
        self._join_sender(proc)
        self._sender = threading.Thread(target=_send, args=(proc, data), daemon=True)
        self._sender.start()

    def _join_sender(self, proc: subprocess.Popen) -> bool:
        """Wait for the jobs being sent; False (the worker ended) when it does not read."""
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.join(_TIMEOUT_S)
            if sender.is_alive():
                _end(proc)
                return False
        return True

    def draw(self, jobs: list[tuple[str, tuple]]) -> list[Any]:
        """Each job's result (job: a name of :data:`_JOBS` and its arguments), those of
        :meth:`submit` first, drawn by the worker, or here when it is not there or fails."""
        proc, self._proc = self._proc, None
        every = [*self._early, *jobs]
        self._early = []
        if proc is not None:
            try:
                # (a worker that did not read what was sent is ended: drawn here)
                if self._join_sender(proc):
                    out, _ = proc.communicate(pickle.dumps(('end', jobs)), timeout=_TIMEOUT_S)
                    status, results = pickle.loads(out)
                    if proc.returncode == 0 and status == 'ok':
                        return results
            except (OSError, ValueError, EOFError, TypeError, AttributeError,
                    pickle.PickleError, subprocess.TimeoutExpired):
                pass
            except BaseException:   # Ctrl-C while it draws: it must not draw on after us
                _end(proc)
                raise
            _end(proc)
        return [_run(name, args) for name, args in every]

    def close(self) -> None:
        """Stop the worker if it still waits (a run that ended early draws nothing)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _end(proc)

    def __enter__(self) -> PictureWorker:
        return self    # (started by :meth:`start`; the context only ends it)

    def __exit__(self, *exc: object) -> None:
        self.close()


def _send(proc: subprocess.Popen, data: bytes) -> None:
    """Write jobs to the worker (a thread of :meth:`PictureWorker.submit`); a worker gone
    meanwhile is found out by :meth:`PictureWorker.draw`."""
    try:
        proc.stdin.write(data)
        proc.stdin.flush()
    except (OSError, ValueError):
        pass


def _end(proc: subprocess.Popen) -> None:
    """End a worker and the copies it forked (whatever they are doing), and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):   # (gone; no killpg)
        if proc.poll() is None:
            proc.kill()
    proc.wait()


def _warm_up() -> None:
    """Draw a tiny figure of what the pictures hold (an image, lines, texts, a legend) into
    memory: the first drawing loads fonts and fills caches, about 0.2 s that would
    otherwise come after the tracking."""
    import io

    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots(figsize=(2.0, 1.0), dpi=50)
    ax.imshow(np.zeros((4, 4), np.uint8), cmap='gray', vmin=0, vmax=255,
              interpolation='nearest')
    ax.plot([0.0, 1.0], [0.0, 1.0], '+', label='warm-up')
    ax.set_title('0.1 s', fontsize=8)
    ax.text(0.5, 0.5, 'rpm', fontsize=7)
    ax.legend(fontsize=8)
    fig.savefig(io.BytesIO(), format='png')
    plt.close(fig)


def _fork(name: str, args: tuple) -> tuple[int, int]:
    """Draw a job in a forked copy of this worker; (its pid, the pipe its result comes on)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the copy: draw, send the result, leave at once, whatever happens
        try:
            os.close(read_fd)
            try:
                reply: tuple[str, Any] = ('ok', _run(name, args))
            except Exception as exc:   # noqa: BLE001  (reported by the worker)
                reply = ('failed', repr(exc))
            with os.fdopen(write_fd, 'wb') as out:
                out.write(pickle.dumps(reply))
        except BaseException:   # noqa: BLE001  (the reader gone, e.g. on a full disk: a
            pass                # traceback, and a copy that ran on as the worker; review)
        finally:
            os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def _result(child: tuple[int, int]) -> Any:
    """The result of a job drawn by :func:`_fork` (its failure raised here)."""
    pid, read_fd = child
    with os.fdopen(read_fd, 'rb') as src:
        data = src.read()
    os.waitpid(pid, 0)
    status, value = pickle.loads(data) if data else ('failed', 'no reply')
    if status != 'ok':
        raise RuntimeError(f'a picture failed: {value}')
    return value


def _run_side_by_side(jobs: list[tuple[str, tuple]],
                      started: list[tuple[int, int]] | None = None) -> list[Any]:
    """The results of the jobs ``started`` before (by :func:`_fork`), then of ``jobs``, the
    jobs after the first drawn by forked copies of this worker at the same time (the
    command waits for the slowest picture, not for their sum)."""
    started = started or []
    if not hasattr(os, 'fork'):
        return [_run(name, args) for name, args in jobs]
    children = [_fork(name, args) for name, args in jobs[1:]]
    first = [_run(*jobs[0])] if jobs else []
    return [*(_result(c) for c in started), *first, *(_result(c) for c in children)]


def _serve() -> int:
    """The worker: import the drawing code, read the jobs, draw them, write the results."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the command's to handle
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot  # noqa: F401  (imported now, while the command tracks)
        for module, _ in _JOBS.values():
            __import__(module)
        _warm_up()
    except ImportError:   # the jobs fail below and are drawn in the command, which says why
        pass
    started: list[tuple[int, int]] = []   # the jobs sent early, drawing in forked copies
    waiting: list[tuple[str, tuple]] = []  # (or waiting, where there is no fork)
    while True:
        try:
            kind, jobs = pickle.load(sys.stdin.buffer)
        except (EOFError, pickle.PickleError):   # the command ended without pictures
            for pid, _ in started:
                os.kill(pid, signal.SIGKILL)
            return 0
        if kind != 'draw':
            break
        if hasattr(os, 'fork'):
            started.extend(_fork(name, args) for name, args in jobs)
        else:
            waiting.extend(jobs)
    try:
        reply: tuple[str, Any] = ('ok', _run_side_by_side([*waiting, *jobs], started))
    except Exception as exc:   # noqa: BLE001  (drawn again in the command, which reports it)
        reply = ('failed', repr(exc))
    try:
        sys.stdout.buffer.write(pickle.dumps(reply))
        sys.stdout.buffer.flush()
    except OSError:   # the command is gone (interrupted): nobody to tell
        pass
    return 0


if __name__ == '__main__':
    sys.exit(_serve())
