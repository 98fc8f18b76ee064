# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""numpy ``.npz`` files of decoded events: what ``helixtrack events`` writes, read back.

The arrays ``t_us`` (microseconds) or ``t_ns`` (nanoseconds), ``x``, ``y``
and ``p`` (ON above 0) of equal length; ``width`` and ``height`` (as ``helixtrack events``
writes them) give the sensor size, else the events do (largest x and y
plus one). Events are sorted by time when they are not (a stable sort). A ``t_us``
that can only be nanoseconds (:func:`nanoseconds_reason`) is refused, naming ``t_ns``:
read as microseconds, a second of events took a thousand to track.
The packets are those of :func:`helixtrack_ros.io.event_packets.mono_packets`.
A directory of the chunk files ``helixtrack events --out DIR`` writes
(:data:`CHUNK_NAME`) reads as one recording, chunk by chunk.
"""

from collections.abc import Iterator
from pathlib import Path
import re
import zipfile

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.event_packets import mono_packets
from helixtrack_ros.io.packet_record import EventPacketRecord

#: Events per chunk handed to the packet cutter.
_CHUNK = 1 << 20
#: The latest event time taken [us] (2**52: 143 years; in ns it still fits an int64).
MAX_T_US = 1 << 52
#: The name of chunk file k of ``helixtrack events --out DIR``.
CHUNK_NAME = 'events_{:06d}.npz'
#: The arrays read (the times as ``t_us`` or ``t_ns``).
_ARRAYS = ('t_us', 't_ns', 'x', 'y', 'p')


#: Distinct times needed before whole microseconds written as nanoseconds are told apart
#: (every step a multiple of 1000: a sensor counts microseconds, never whole milliseconds).
NS_STEPS_TOLD = 1000
#: Times checked for a step of other than a multiple of 1000 before all are (most files stop).
_NS_SAMPLE = 100_000


def nanoseconds_reason(t: np.ndarray) -> 'str | None':
    """Why whole-number event times can only be nanoseconds, not microseconds (None: they
    may be microseconds).

    Two signs leave no doubt: times beyond :data:`MAX_T_US` that fit once divided by 1000
    (nanoseconds since 1970: a ROS export's ``ts``), or at least :data:`NS_STEPS_TOLD`
    distinct times that all differ by whole multiples of 1000 (an event camera's
    microseconds, written as nanoseconds by Prophesee, iniVation or ROS tools).
    """
    if not len(t) or t.dtype.kind not in 'iuf' or t.min() < 0:
        return None
    if t.dtype.kind == 'u' and t.max() < 1 << 63:
        t = t.astype(np.int64)    # (differences of unsigned times wrap around)
    hi = float(t.max())
    if hi > MAX_T_US and hi / 1000 <= MAX_T_US:
        return f'the latest, {hi:.4g}, is over 143 years in microseconds'
    if t.dtype.kind == 'f' or len(t) <= NS_STEPS_TOLD:
        return None    # (only exact integers tell their steps)
    t0 = t[0]
    if np.any((t[:_NS_SAMPLE] - t0) % 1000) or np.any((t - t0) % 1000):
        return None
    steps = int(np.count_nonzero(np.diff(t)))
    if steps < NS_STEPS_TOLD:
        return None
    return f'the {steps} steps between events are all whole multiples of 1000'


#: More events than this per microsecond, over a whole file, no camera sends (2 G events/s)
MAX_EVENTS_PER_US = 2000.0
#: A file's times spanning less than this [us] while most have a fraction are no microseconds
_SHORTEST_FRACTIONAL_US = 10_000


def coarse_unit_reason(t: np.ndarray) -> 'str | None':
    """Why event times cannot be microseconds, being seconds or milliseconds (None: they
    may be). Found by the formats review: seconds as floats under t_us were floored to 0,
    every event at one time, and the run ended "no rotor detected"."""
    if len(t) < 1000 or t.dtype.kind not in 'iuf':
        return None
    span = float(t.max()) - float(t.min())
    if len(t) > MAX_EVENTS_PER_US * max(span, 1.0):
        return f'{len(t)} events within {span:g} us'
    if t.dtype.kind == 'f' and span < _SHORTEST_FRACTIONAL_US:
        fractional = np.count_nonzero(t[:_NS_SAMPLE] != np.round(t[:_NS_SAMPLE]))
        if 2 * fractional > min(len(t), _NS_SAMPLE):
            return f'they run over {span:g} us only, most with a fraction'
    return None


class NpzEventsError(ValueError):
    """An ``.npz`` file that holds no events in the expected arrays."""


def read_npz_events(path: 'str | Path') -> tuple[EventArrays, int, int]:
    """The file's events (time-sorted) and the sensor (width, height; 0, 0 when it has
    neither events nor a size); NpzEventsError."""
    path = Path(path)
    if path.is_file() and not zipfile.is_zipfile(path):
        raise NpzEventsError(f'{path}: not a numpy .npz file (not a zip archive)')
    try:
        with np.load(path) as data:
            arrays = {k: np.asarray(data[k]) for k in _ARRAYS if k in data}
            size = [_size(path, k, data[k]) for k in ('width', 'height') if k in data]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, NpzEventsError):
            raise
        raise NpzEventsError(f'{path}: not a numpy .npz file ({_first_line(exc)})') from None
    key = _time_key(path, arrays)
    missing = [k for k in (key, 'x', 'y', 'p') if k not in arrays]
    if missing:
        raise NpzEventsError(f'{path}: no {", ".join(missing)} array (expected t_us, x, y, p)')
    n = arrays[key].shape
    if any(a.ndim != 1 or a.shape != n for a in arrays.values()):
        raise NpzEventsError(f'{path}: {key}, x, y and p must be 1-D arrays of one length')
    ev = EventArrays(_times(path, arrays[key], key), _pixels(path, arrays['x'], 'x'),
                     _pixels(path, arrays['y'], 'y'), _polarities(path, arrays['p']))
    ev = ev.time_sorted()
    if len(size) == 2 and min(size) > 0:
        return ev, size[0], size[1]
    if not len(ev):   # (no events, no size: 0, unknown, not a made-up size)
        return ev, 0, 0
    return ev, int(ev.x.max()) + 1, int(ev.y.max()) + 1


def _first_line(exc: Exception) -> str:
    """An exception's first sentence (numpy's load errors go on about ``allow_pickle``)."""
    return str(exc).split('\n')[0].split('. ')[0]


def _size(path: Path, key: str, value: np.ndarray) -> int:
    """A ``width`` / ``height`` entry as an int (0 when it is not a positive whole number)."""
    value = np.asarray(value)
    if value.ndim != 0 or value.dtype.kind not in 'iuf':
        raise NpzEventsError(f'{path}: {key} must be one number, got an array of '
                             f'shape {value.shape} and type {value.dtype}')
    v = float(value)
    return int(v) if np.isfinite(v) and v == int(v) and 0 < v <= 1 << 30 else 0


def _pixels(path: Path, a: np.ndarray, name: str) -> np.ndarray:
    """Pixel coordinates as uint16: whole numbers 0..65535, or one clear error.

    Found by a review: NaN, negative or fractional coordinates were cast to uint16,
    inventing events (the same values in a CSV file are refused).
    """
    if a.dtype.kind not in 'biuf':
        raise NpzEventsError(f'{path}: {name} must hold real numbers, not {a.dtype}')
    problem = pixel_problem(name, a) if a.dtype.kind != 'b' else None
    if problem is not None:
        raise NpzEventsError(f'{path}: {problem}')
    return a.astype(np.uint16)


def pixel_problem(name: str, a: np.ndarray) -> str | None:
    """What is wrong with pixel coordinates ``a`` (real numbers) that are not all whole
    numbers 0..65535 (NaN included); None when they are. Text files share it."""
    if not len(a):
        return None
    with np.errstate(invalid='ignore'):
        bad = ~np.isfinite(a) | (a < 0) | (a > 65535) | (a != np.round(a))
    if not bad.any():
        return None
    return (f'{name} must be whole pixel numbers 0..65535, got {int(bad.sum())} other '
            f'value(s), e.g. {a[bad][0].item()!r}')


def polarity_on(p: np.ndarray) -> np.ndarray:
    """ON (1) or OFF (0) of polarity values: ON above 0, so that -1/1, 0/1 and True/False
    all read alike (npz and text files share it; npz read -1 as ON, every event ON;
    formats review)."""
    return (p > 0).astype(np.uint8)


def _polarities(path: Path, p: np.ndarray) -> np.ndarray:
    """Polarities as uint8 (:func:`polarity_on`); NaN or a non-number is an error."""
    if p.dtype.kind not in 'biuf':
        raise NpzEventsError(f'{path}: p must hold real numbers, not {p.dtype}')
    if p.dtype.kind == 'f' and not np.all(np.isfinite(p)):
        raise NpzEventsError(f'{path}: p holds {int(np.sum(~np.isfinite(p)))} value(s) '
                             'that are no number')
    return polarity_on(p)


def _time_key(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """The times' array: ``t_ns`` when there is one (and no ``t_us``), else ``t_us``."""
    if 't_ns' in arrays and 't_us' in arrays:
        raise NpzEventsError(f'{path}: both t_us and t_ns arrays: keep one (the times in '
                             'microseconds or in nanoseconds)')
    return 't_ns' if 't_ns' in arrays else 't_us'


def _times(path: Path, t: np.ndarray, key: str) -> np.ndarray:
    """The times as int64 microseconds; NpzEventsError when a time is not a sensor time."""
    try:
        return sensor_times_us(t, key, nanoseconds=key == 't_ns')
    except ValueError as exc:
        raise NpzEventsError(f'{path}: {exc}') from None


def sensor_times_us(t: np.ndarray, name: str, nanoseconds: bool = False,
                    check_unit: bool = True, offset_us: int = 0) -> np.ndarray:
    """Event times ``t`` (named ``name``) as int64 microseconds of sensor time, for every
    file of decoded events: nanoseconds divided down, ``offset_us`` added; ValueError in one
    line when they are no numbers, cannot be microseconds (``check_unit``:
    :func:`nanoseconds_reason`, :func:`coarse_unit_reason`) or leave 0..MAX_T_US."""
    if t.dtype.kind not in 'iuf':
        raise ValueError(f'{name} must hold real numbers, not {t.dtype}')
    if t.dtype.kind == 'f' and not np.all(np.isfinite(t)):
        raise ValueError(f'{name} holds {int(np.sum(~np.isfinite(t)))} time(s) that are not '
                         'numbers (NaN or infinite)')
    if nanoseconds:
        t = t // 1000 if t.dtype.kind != 'f' else np.floor(t / 1000)
    elif check_unit:
        ns = nanoseconds_reason(t)
        if ns is not None:
            raise ValueError(f'{name} holds nanoseconds, not microseconds ({ns}): save them as '
                             f't_ns instead (or {name} // 1000)')
        coarse = coarse_unit_reason(t)
        if coarse is not None:
            raise ValueError(f'{name} cannot be microseconds ({coarse}): seconds or '
                             'milliseconds? save the times in microseconds')
    if offset_us:
        t = t.astype(np.int64) + offset_us
    if len(t) and (t.min() < 0 or t.max() > MAX_T_US):
        raise ValueError(f'{name} runs from {t.min():.0f} to {t.max():.0f} us; sensor times lie '
                         f'within 0..{MAX_T_US} us (shift them to start at 0 or later)')
    return t.astype(np.int64)


def chunk_files(path: 'str | Path') -> list[Path]:
    """The chunk files of a directory ``helixtrack events --out DIR`` wrote, in order
    ([] for none, or for a file)."""
    path = Path(path)
    if not path.is_dir():
        return []
    return sorted(p for p in path.glob('events_*.npz')
                  if re.fullmatch(r'events_\d{6}\.npz', p.name))


def npz_size(path: 'str | Path') -> tuple[int, int]:
    """The sensor (width, height) of an ``.npz`` file or a chunk directory (its first
    chunk's); (0, 0) when it holds neither events nor a size."""
    files = chunk_files(path)
    _, width, height = read_npz_events(files[0] if files else path)
    return width, height


def iter_npz_packets(path: 'str | Path', packet_us: int = 1000) -> Iterator[EventPacketRecord]:
    """Stream an ``.npz`` file's events, or a chunk directory's, as ``mono`` packet records
    of ``packet_us`` each."""
    width, height = npz_size(path)
    yield from mono_packets(_event_chunks(Path(path)), width, height, 0, packet_us)


def _event_chunks(path: Path) -> Iterator[EventArrays]:
    """The events of a file, or of a directory's chunk files one after the other, in
    slices of :data:`_CHUNK`; NpzEventsError when a chunk starts before the one before
    it ends (not one recording in order)."""
    last_t = None
    for file in chunk_files(path) or [path]:
        ev = read_npz_events(file)[0]
        if len(ev) and last_t is not None and int(ev.t_us[0]) < last_t:
            raise NpzEventsError(f'{file}: starts at {int(ev.t_us[0])} us, before the chunk '
                                 f'before it ends ({last_t} us): not one recording in order')
        if len(ev):
            last_t = int(ev.t_us[-1])
        for lo in range(0, len(ev), _CHUNK):
            yield ev.slice(lo, min(lo + _CHUNK, len(ev)))
