# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What every ``helixtrack`` sub-command shares: exit codes, errors, outputs, input.

A failure the user can fix is a :class:`CliError` (one line, exit status 2);
outputs are checked before any work (:func:`output_dir`, :func:`output_file`)
so that a bad path costs nothing; :class:`Packets` turns a recording's read
failures into a :class:`CliError` or a remembered truncation.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator
import contextlib
from enum import IntEnum
import math
import os
from pathlib import Path
import sys
import tempfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from helixtrack_ros.io.bags import TruncatedBagError

DEFAULT_TOPIC = '/event_camera/events'
#: ``--topic`` and recording help of the offline commands
TOPIC_HELP = ('event topic of a bag (the dataset or group of an HDF5 file, the event stream '
              'number of an AEDAT 4 file); needed only when there are several')
RECORDING_HELP = ('recording: rosbag2 directory or .mcap/.db3 file, ROS 1 .bag (EventPacket or '
                  'EventArray), Metavision .raw file (EVT 2.0/2.1/3.0), or decoded events: '
                  '.dat, .hdf5/.h5, .aedat4, .npz, .csv or .txt (README "Inputs")')


class ExitCode(IntEnum):
    """Exit statuses of ``helixtrack``; the same table is in ``--help`` and the README."""

    #: done
    OK = 0
    #: ran to the end but found nothing: no rotor tracked, no rotor detected, no event
    NOTHING_FOUND = 1
    #: bad command line or input (one line on stderr), nothing or little done
    USAGE = 2
    #: an MCAP file of the bag is cut short or damaged: every intact message was processed
    PARTIAL_INPUT = 3
    #: Ctrl-C: the outputs hold what was processed so far
    INTERRUPTED = 130


#: ``helixtrack --help`` epilog (the README's table says the same)
EXIT_STATUS_HELP = """exit status:
  0    done (batch, sweep: at least one recording tracked; the others are rows
       of the summary with the reason)
  1    nothing found: track tracked no rotor (no message or event, every packet
       refused, no rotor detected without --params, every rotor of --params
       impossible on the sensor, or no rotor ever reached TRACKING: every RPM
       is NaN), detect found no rotor (or no event: no file written),
       events decoded no event; batch, sweep: no recording had a rotor tracked
  2    bad command line or input, one line on stderr: unknown option, a
       duration <= 0 (--skip, --at-s < 0), a demo --skip not shorter than its
       --duration, missing recording or topic, a topic
       not of type EventPacket or EventArray, a bag with no event topic or with
       several and no --topic, a .raw file without a header or of another
       format than EVT 2.0/2.1/3.0, a .dat file of other than CD events, a
       .dat, .npz or text file on a sensor over 32768 pixels wide or high,
       an output that cannot be written, an output directory that is an
       existing file or lies in the input rosbag2's directory; batch,
       sweep: no recording could be read, a bad grid file
  3    the input is cut short or damaged: the bag's MCAP file (recorder
       killed; every intact message before the damage was processed and
       written; the message says how many and how to repair the file:
       mcap recover), an MCAP chunk that fails its checksum (skipped, the
       messages around it processed), a ROS 1 bag without its index (read
       up to the damage; rosbag reindex), or a .raw file ending inside a
       word or a .dat file inside an event (every whole packet was
       processed); wins over 1, except that track exits 1 when it tracked
       no rotor (its line also says the input is cut short)
  130  interrupted (Ctrl-C or SIGTERM): the outputs hold what was processed"""


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 2 (ExitCode.USAGE)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print ``prog: error: message`` and where to find help; exit 2."""
        self.exit(ExitCode.USAGE, f'{self.prog}: error: {message} (see {self.prog} --help)\n')


#: the shortest scene the simulator makes: one microsecond, its time step
SCENE_LEAST_S = 1e-6


def seconds(positive: bool, least: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds, > 0 (``positive``) or >= 0, and at
    least ``least`` when given (argparse names the option in its message)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected seconds, got {text!r}') from None
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(
                f'must be {"> 0" if positive else ">= 0"} s, got {text}')
        if least is not None and value < least:
            raise argparse.ArgumentTypeError(
                f'must be at least {least:g} s, got {text} s')
        return value
    parse.__name__ = 'seconds'
    return parse


def skip_problem(skip_s: float, duration_s: float, what: str) -> str | None:
    """Why ``--skip`` leaves no sample for the errors of ``duration_s`` seconds of ``what``
    (None when it leaves some): the one rule of ``demo`` (up front) and ``track`` (after)."""
    if skip_s < duration_s:
        return None
    return (f'--skip {skip_s:g} s leaves no sample for the errors: {what} {duration_s:.3g} s '
            '(give a shorter --skip)')


def seed(text: str) -> int:
    """An argparse type: a random seed, an integer >= 0 (numpy's rule)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected an integer, got {text!r}') from None
    if value < 0:
        raise argparse.ArgumentTypeError(f'must be an integer >= 0, got {text}')
    return value


def sensor_size(text: str) -> tuple[int, int]:
    """An argparse type: ``WIDTHxHEIGHT`` in pixels, each 1..2048."""
    w, sep, h = text.lower().partition('x')
    if not (sep and w.isdigit() and h.isdigit() and 0 < int(w) <= 2048
            and 0 < int(h) <= 2048):
        raise argparse.ArgumentTypeError(f'expected WIDTHxHEIGHT (each 1..2048), got {text!r}')
    return int(w), int(h)


def out_path(text: str) -> str:
    """An argparse type: an output path, not empty (an empty one was the current
    directory, written into without a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError('expected a path, got an empty one')
    return text


def _unwritable(directory: Path) -> str | None:
    """Why files cannot be made in ``directory`` (created if missing), or None."""
    for above in (directory, *directory.parents):
        if above.exists():
            if not above.is_dir():
                return f'{above} is a file, not a directory'
            break
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def output_dir(path: Path) -> Path:
    """Create an output directory and hold it for this run (:func:`_hold`), or fail in one
    line before any work is done."""
    reason = _unwritable(path)
    if reason is not None:
        raise CliError(f'cannot write to output directory {path}: {reason}')
    _hold(path)
    return path


#: the output directories this command holds: their open descriptors, by real path; None
#: outside a command (a library call, a Dask worker: nothing is held)
_HELD: dict[Path, int] | None = None


def _hold(path: Path) -> None:
    """Lock ``path`` for the command running (flock on the directory, released when it
    ends: :func:`holding_outputs`; no file left behind); a directory another run holds is
    refused in one line. A file system without locks is written as before.

    Found by a review: two runs into one -o ended with an exit-0 run whose rpm.csv held
    the other recording's rows and a row spliced from both, read as TRACKING.
    """
    import errno
    import fcntl
    if _HELD is None:
        return
    key = path.resolve()
    if key in _HELD:
        return
    fd = os.open(key, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise CliError(f'output directory {path} is being written by another helixtrack '
                           'run (wait for it to end, or give another -o)') from None
        return        # (no locks there, e.g. NFS without lockd: not held)
    _HELD[key] = fd


@contextlib.contextmanager
def holding_outputs() -> Iterator[None]:
    """Hold the output directories made while the block runs (one command) and let them go
    at its end."""
    global _HELD
    import fcntl
    _HELD = {}
    try:
        yield
    finally:
        held, _HELD = _HELD, None
        for fd in held.values():
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _recording_dir(recording: Path) -> Path | None:
    """The recording's directory: the recording itself when it is a directory (a
    rosbag2), or the directory of a file of a rosbag2 (beside a metadata.yaml)."""
    rec = recording.resolve()
    if rec.is_dir():
        return rec
    return rec.parent if (rec.parent / 'metadata.yaml').is_file() else None


def output_outside(out: Path, recording: Path) -> None:
    """Refuse an output directory that is the input recording's directory or inside it."""
    rec = _recording_dir(recording)
    target = out.resolve()
    if rec is not None and (target == rec or rec in target.parents):
        raise CliError(f"output directory {out} lies in the input recording's directory "
                       f"{rec}: the outputs would be mixed with the recording's files (give "
                       'another -o)')


def outputs_not_input(outputs: Iterable[Path], recording: Path) -> None:
    """Refuse output files that are the input recording or lie in its rosbag2 directory.

    Found by a review: ``track OUT/rpm.csv -o OUT`` emptied the recording before
    reading it (and said it held no event); ``detect`` and ``events`` overwrote an
    input given as their own ``-o``.
    """
    rec, rec_dir = recording.resolve(), _recording_dir(recording)
    for path in outputs:
        target = path.resolve()
        if (target == rec or (rec_dir is not None and rec_dir in target.parents)
                or _same_file(target, rec)):
            raise CliError(f'output {path} would overwrite the input recording {recording} '
                           '(give another -o)')


def _same_file(a: Path, b: Path) -> bool:
    """Whether two existing paths are one file (a hard link: the input emptied before it
    was read, when its link was the output; review)."""
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def output_file(path: Path) -> Path:
    """Check that an output file can be written (its directory made), in one line if not."""
    reason = 'it is a directory' if path.is_dir() else _unwritable(path.parent)
    if reason is not None:
        raise CliError(f'cannot write {path}: {reason}')
    return path


def remove_output(path: Path) -> None:
    """Remove an output of an earlier run (a bag file or directory) before rewriting it."""
    if path.is_dir():
        import shutil
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def damage_line(exc: TruncatedBagError, what: str) -> str:
    """The one line for a bag cut short: what was done with how many messages, and the fix."""
    from helixtrack_ros.io.bags import repair_hint
    if hasattr(exc, 'repair'):   # a .raw file (io.raw_file.TruncatedRawError)
        return (f'{exc.file} is cut short ({exc.damage}): {what} the {exc.messages_read} '
                f'packets before the damage. {exc.repair}')
    if getattr(exc, 'read_past', False):   # damaged chunks skipped, the rest read
        return (f'{exc.file} is damaged ({exc.damage}): {what} the {exc.messages_read} intact '
                f'messages on {exc.topic} around the damage. {repair_hint(exc.file)}')
    return (f'{exc.file} is cut short ({exc.damage}): {what} the {exc.messages_read} intact '
            f'messages on {exc.topic} before the damage. {repair_hint(exc.file)}')


def open_or_fail(path: str, topic: str | None) -> Any:
    """The recording (``io.recordings.Recording``) at ``path``; a problem as CliError."""
    from helixtrack_ros.io.recordings import open_recording
    try:
        return open_recording(path, topic)
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None


class Packets:
    """The packets of a recording; one cut short ends them, kept in ``truncated``.

    A bag message that does not deserialize is skipped and said in one
    ``warning:`` line, as is each repair of a ``.raw`` file's data (the first
    :data:`CORRUPT_SAID` of each; the rest are counted), since the data after
    them are still good; when no message
    reads at all, the first one's problem is a :class:`CliError`. Any other
    read failure becomes a :class:`CliError`.
    """

    #: corrupt messages said one by one; the rest are counted
    CORRUPT_SAID = 3

    def __init__(self, recording: Any) -> None:
        self.recording = recording
        self.truncated: TruncatedBagError | None = None
        #: repairs made while reading (each also said on stderr)
        self.repairs = 0
        #: messages skipped because they do not deserialize
        self.corrupt = 0
        self._unsaid: list[str] = []   # corrupt-message lines not printed yet

    def _notice(self, line: str) -> None:
        self.repairs += 1
        if self.repairs <= self.CORRUPT_SAID:
            print(f'warning: {line}', file=sys.stderr)

    def _corrupt(self, line: str) -> None:
        self.corrupt += 1
        if self.corrupt <= self.CORRUPT_SAID:
            self._unsaid.append(f'warning: {line}; skipped')

    def _say_corrupt(self) -> None:
        for line in self._unsaid:
            print(line, file=sys.stderr)
        self._unsaid = []

    def __iter__(self) -> Iterator[Any]:
        from helixtrack_ros.io.bags import TruncatedBagError
        from helixtrack_ros.io.raw_file import TruncatedRawError
        good = 0
        try:
            for pkt in self.recording.packets(self._notice, self._corrupt):
                good += 1
                self._say_corrupt()
                yield pkt
        except (TruncatedBagError, TruncatedRawError) as exc:
            self.truncated = exc
        except FileNotFoundError as exc:
            raise CliError(str(exc)) from None
        except ValueError as exc:
            raise CliError(str(exc)) from None
        if self._unsaid and not good:    # nothing read: the first problem is the answer
            raise CliError(self._unsaid[0].removeprefix('warning: ').removesuffix('; skipped'))
        self._say_corrupt()
        if self.corrupt > self.CORRUPT_SAID:
            print(f'warning: {self.corrupt} corrupt messages skipped in all', file=sys.stderr)
        if self.repairs > self.CORRUPT_SAID:
            print(f'warning: {self.repairs} repairs of the data in all', file=sys.stderr)


def make_decoder_or_fail(pkt: Any) -> Any:
    """The decoder for a packet's encoding and sensor size; an unknown encoding or an
    unusable size as CliError."""
    from helixtrack_ros.codecs import UnsupportedEncodingError, make_decoder
    try:
        return make_decoder(pkt.encoding, pkt.width, pkt.height)
    except UnsupportedEncodingError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:     # (a sensor size the decoder cannot take, e.g. 0 x 0)
        raise CliError(f'packet {pkt.seq}: {exc}: no usable sensor size') from None
