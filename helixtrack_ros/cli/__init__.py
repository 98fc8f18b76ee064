# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The ``helixtrack`` command: simulate scenes, decode bags, track offline, demo.

Run ``helixtrack --help`` for the sub-commands. Everything here is plumbing
around :mod:`helixtrack_ros.pipeline` (the same processing as the node),
:mod:`helixtrack_ros.sim`, :mod:`helixtrack_ros.io` and, for many recordings
at once, :mod:`helixtrack_ros.fleet`. This module holds the parser and
:func:`main`; each sub-command has its own module (``demo``, ``simulate``,
``track``, ``detect``, ``events``, ``batch``, ``sweep``), and ``common``
what they share.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from typing import Any

from helixtrack_ros.cli.common import (
    EXIT_STATUS_HELP,
    RECORDING_HELP,
    SCENE_LEAST_S,
    TOPIC_HELP,
    CliError,
    ExitCode,
    Parser,
    holding_outputs,
    out_path,
    seconds,
    seed,
    sensor_size,
)
from helixtrack_ros.io.sink_formats import SINK_FORMATS

__all__ = ['CliError', 'Detection', 'ExitCode', 'build_parser', 'detect_in_bag', 'main',
           'simulate_to_dir', 'track_bag']

#: where the names this package gives lazily live: a sub-command's module is imported
#: only when it runs (numba, the pipeline and matplotlib load only when needed)
_LAZY = {'Detection': 'detect', 'detect_in_bag': 'detect', 'simulate_to_dir': 'simulate',
         'track_bag': 'track'}


def __getattr__(name: str) -> Any:
    """The lazily imported names of :data:`_LAZY` (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'{__name__}.{_LAZY[name]}'), name)


def _command(p: argparse.ArgumentParser, name: str) -> None:
    """Run ``cmd_<name>`` of module ``<name>`` for this sub-command (imported when run)."""
    p.set_defaults(func=f'{name}:cmd_{name}')


def _add_quiet(p: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress bar (there is none either when stderr is not a terminal)."""
    p.add_argument('-q', '--quiet', action='store_true',
                   help='no progress bar (none either when stderr is not a terminal)')


def _add_demo_and_simulate(sub: argparse._SubParsersAction) -> None:
    """The ``demo`` and ``simulate`` sub-commands."""
    nonnegative_s = seconds(positive=False)
    scene_s = seconds(positive=True, least=SCENE_LEAST_S)
    p = sub.add_parser('demo', help='simulate the default quadcopter scene, track it, '
                                    'print the error table')
    p.add_argument('--scenario', default='quadcopter')
    p.add_argument('--duration', type=scene_s, default=1.0, help='seconds of scene time')
    p.add_argument('--seed', type=seed, default=0)
    p.add_argument('--skip', type=nonnegative_s, default=0.2,
                   help='seconds of convergence left out of the errors')
    p.add_argument('-o', '--out', type=out_path, default='demo_out', help='output directory')
    _add_quiet(p)
    _command(p, 'demo')

    p = sub.add_parser('simulate', help='write a simulated scene as a rosbag2 or a .raw file')
    p.add_argument('--scenario', default='quadcopter')
    p.add_argument('--duration', type=scene_s, default=1.0, help='seconds of scene time')
    p.add_argument('--seed', type=seed, default=0)
    p.add_argument('--ego-level', type=int, default=None, choices=range(0, 8),
                   help="camera egomotion level 0-7 (default: the scenario's)")
    p.add_argument('--size', type=sensor_size, default=(1280, 720), metavar='WxH',
                   help='sensor size in pixels, e.g. 346x260 or 640x480 (default 1280x720; '
                        'the scene is scaled to fit)')
    p.add_argument('--format', choices=SINK_FORMATS, default='rosbag2',
                   help='DIR/events as a rosbag2 of EVT3 EventPackets (default), or '
                        'DIR/events.raw, a Metavision RAW file of EVT 3.0, 2.0 or 2.1')
    p.add_argument('--tachometer', action='store_true',
                   help="each rotor's once-per-turn tachometer pulse in the trigger input, "
                        'channel k for rotor k (what events --tachometer reads)')
    p.add_argument('-o', '--out', type=out_path, required=True, help='output directory')
    _add_quiet(p)
    _command(p, 'simulate')


def _add_preset(p: argparse.ArgumentParser, text: str) -> None:
    from helixtrack_ros.pipeline.config import CHOICES
    names = CHOICES['preset'][0]
    p.add_argument('--preset', default=None, choices=names,
                   help=f'{text}: {", ".join(names)} (docs/DEVIATIONS.md)')


def _add_track_detect_events(sub: argparse._SubParsersAction) -> None:
    """The sub-commands that read a recording: ``track``, ``detect``, ``events``."""
    positive_s, nonnegative_s = seconds(positive=True), seconds(positive=False)
    p = sub.add_parser('track', help='track the rotors of a bag')
    p.add_argument('bag', help=RECORDING_HELP)
    p.add_argument('--params', default=None,
                   help='ROS 2 parameter file with the rotors (default: detect them in the '
                        'first 100 ms)')
    p.add_argument('--topic', default=None, help=TOPIC_HELP)
    p.add_argument('-o', '--out', type=out_path, required=True, help='output directory')
    p.add_argument('--ground-truth', default=None, help='CSV t_us,rotor,rpm (shaft RPM)')
    p.add_argument('--skip', type=nonnegative_s, default=0.2,
                   help='seconds of convergence left out of the errors')
    _add_preset(p, "tracker configuration (replaces the parameter file's preset:, its "
                'tracker.* values still apply on top)')
    _add_quiet(p)
    _command(p, 'track')

    p = sub.add_parser('detect', help='find the rotors of a bag and write a parameter file')
    p.add_argument('bag', help=RECORDING_HELP)
    p.add_argument('--topic', default=None, help=TOPIC_HELP)
    p.add_argument('--at-s', type=nonnegative_s, default=0.0,
                   help='start of the detection window, seconds after the first event')
    p.add_argument('--window', type=positive_s, default=0.1,
                   help='seconds of events to use')
    p.add_argument('-o', '--out', type=out_path, required=True,
                   help='parameter file to write (.yaml)')
    _add_preset(p, 'write this preset: into the parameter file')
    _add_quiet(p)
    _command(p, 'detect')

    p = sub.add_parser('events', help="decode a bag's event packets to npz files")
    p.add_argument('bag', help=RECORDING_HELP)
    p.add_argument('--topic', default=None, help=TOPIC_HELP)
    p.add_argument('-o', '--out', type=out_path, required=True,
                   help='output FILE.npz, or a directory that receives chunk files '
                        'events_000000.npz, ... as decoding goes (bounded memory)')
    p.add_argument('--tachometer', action='append', default=[], metavar='CHANNEL=ROTOR[:N]',
                   help="ground truth from a tachometer in the trigger input: ROTOR's shaft "
                        'RPM from the rising edges of trigger CHANNEL, N per turn (default '
                        '1); written to FILE.ground_truth.csv or DIR/ground_truth.csv, where '
                        'track, batch and sweep find it; repeatable')
    _add_quiet(p)
    _command(p, 'events')


def _add_engine(p: argparse.ArgumentParser) -> None:
    """Where the tasks of ``batch`` and ``sweep`` run."""
    p.add_argument('--scheduler', default=None, metavar='ADDRESS',
                   help='an existing Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: an '
                        'embedded local cluster); its workers must see the same paths')
    p.add_argument('--workers', type=int, default=None,
                   help='worker processes of the embedded cluster (default and most: one per '
                        'core)')
    p.add_argument('--retries', type=int, default=2,
                   help='further tries of a task that crashed (default 2); an input that '
                        'track refuses fails at once')


def _add_fleet_inputs(p: argparse.ArgumentParser, preset_text: str) -> None:
    """The configuration every recording of ``batch`` or ``sweep`` starts from."""
    p.add_argument('--params', default=None,
                   help='ROS 2 parameter file with the rotors, for every recording (default: '
                        'detect them in the first 100 ms of each)')
    p.add_argument('--topic', default=None, help=TOPIC_HELP)
    p.add_argument('--skip', type=seconds(positive=False), default=0.2,
                   help='seconds of convergence left out of the errors (ground truth: '
                        'ground_truth.csv beside a recording, or NAME.ground_truth.csv)')
    _add_preset(p, preset_text)


def _add_fleet_options(p: argparse.ArgumentParser, preset_text: str, name: str) -> None:
    """What ``batch`` and ``sweep`` share after their own arguments, and their command."""
    _add_fleet_inputs(p, preset_text)
    _add_engine(p)
    _add_quiet(p)
    _command(p, name)


def _add_batch_and_sweep(sub: argparse._SubParsersAction) -> None:
    """The sub-commands that run many tracking jobs on Dask: ``batch`` and ``sweep``."""
    p = sub.add_parser('batch', help='track many recordings at once (Dask), with a summary')
    p.add_argument('recordings', nargs='+', metavar='RECORDING', help=RECORDING_HELP)
    p.add_argument('-o', '--out', type=out_path, required=True,
                   help='output directory: per recording its track outputs in a '
                        'sub-directory, and summary.csv (.parquet with pyarrow), summary.png')
    _add_fleet_options(p, "tracker configuration (replaces the parameter file's preset:)",
                       'batch')

    p = sub.add_parser('sweep', help='every configuration of a parameter grid on recordings '
                                     'with ground truth, ranked (Dask, cached per cell)')
    p.add_argument('recordings', nargs='+', metavar='RECORDING',
                   help=RECORDING_HELP + '; those without ground truth beside are left out')
    p.add_argument('--grid', required=True,
                   help='YAML grid: grid: {parameter: [values]}, optionally fixed: '
                        '{parameter: value} (example: config/sweep_paper_s3.yaml)')
    p.add_argument('-o', '--out', type=out_path, default='sweep_out',
                   help='output directory: ranking.csv, cells.csv and the cache of cells '
                        '(run again to resume; default sweep_out)')
    p.add_argument('--rank-by', choices=('mean', 'worst', 'scale'), default='mean',
                   help='rank by the mean MArE (default), the worst MArE or the worst '
                        'scale error over every recording and rotor')
    _add_fleet_options(p, 'tracker configuration the grid starts from', 'sweep')


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``helixtrack``."""
    parser = Parser(
        prog='helixtrack',
        description='Event-camera propeller tracking (HelixTrack): RPM, phase and pose '
                    'per rotor from Prophesee EVT3 rosbags.',
        epilog=EXIT_STATUS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    _add_demo_and_simulate(sub)
    _add_track_detect_events(sub)
    _add_batch_and_sweep(sub)
    return parser


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (``timeout``, ``docker stop``, a batch scheduler) ends a run as Ctrl-C does:
    the outputs are closed and hold what was processed so far."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``helixtrack`` console script; returns an :class:`ExitCode`."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print('helixtrack: interrupted', file=sys.stderr)
        return ExitCode.INTERRUPTED
    if threading.current_thread() is not threading.main_thread():
        return _run(args)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        with holding_outputs():
            return _run(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    """Run the sub-command of ``args``; its :class:`ExitCode` (failures said in one line)."""
    module, func = args.func.split(':')
    try:
        return int(getattr(importlib.import_module(f'{__name__}.{module}'), func)(args))
    except CliError as exc:
        print(f'helixtrack: error: {exc}', file=sys.stderr)
        return ExitCode.USAGE
    except OSError as exc:   # an output that cannot be written after all (disk full, ...)
        print(f'helixtrack: error: {_os_error_text(exc, args)}', file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print('helixtrack: interrupted', file=sys.stderr)
        return ExitCode.INTERRUPTED
    except SystemError as exc:
        if not _caused_by_interrupt(exc):
            raise
        # Ctrl-C inside a numba call can surface as "returned a result with an exception set"
        print('helixtrack: interrupted', file=sys.stderr)
        return ExitCode.INTERRUPTED


#: the sub-commands whose process ends without the interpreter's teardown (not the Dask
#: ones: their libraries clean up at exit)
QUICK_EXIT = ('demo', 'simulate', 'track', 'detect', 'events')


def console_main() -> None:
    """The ``helixtrack`` console script: :func:`main`, then the process ends.

    After a ``track`` run the interpreter's teardown (its modules, numba's
    compiled code) takes about 0.6 s, 10 % of a 2 s recording's whole run
    (benchmarks/RESULTS.md). Every output is closed when :func:`main`
    returns, so for the commands of :data:`QUICK_EXIT` stdout and stderr
    are flushed and the process exits at once (``os._exit``).
    """
    code = main()
    if len(sys.argv) > 1 and sys.argv[1] in QUICK_EXIT:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:    # (None when the shell closed it: `>&-`)
                    stream.flush()
            except (OSError, ValueError):   # a reader gone (broken pipe): nothing to say
                pass
        os._exit(code)
    sys.exit(code)


def _os_error_text(exc: OSError, args: argparse.Namespace) -> str:
    """An OSError in one line that says where: its file, else the command's output (a full
    disk said only "[Errno 28] No space left on device"; review)."""
    text = exc.strerror or str(exc)
    if exc.filename is not None:
        return f'{exc.filename}: {text}'
    out = getattr(args, 'out', None)
    return f'{text} (writing {out})' if out else str(exc)


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt stands in the chain of causes of ``exc``."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False
