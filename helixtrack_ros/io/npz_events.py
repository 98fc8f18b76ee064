# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""numpy ``.npz`` files of decoded events: what ``helixtrack events`` writes, read back.

The arrays ``t_us`` (microseconds), ``x``, ``y`` and ``p`` (nonzero = ON)
of equal length; ``width`` and ``height`` (as ``helixtrack events``
writes them) give the sensor size, else the events do (largest x and y
plus one). Events are sorted by time when they are not (a stable sort).
The packets are those of :func:`helixtrack_ros.io.event_packets.mono_packets`.
"""

from collections.abc import Iterator
from pathlib import Path
import zipfile

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.event_packets import mono_packets
from helixtrack_ros.io.packet_record import EventPacketRecord

#: Events per chunk handed to the packet cutter.
_CHUNK = 1 << 20
#: The latest event time taken [us] (2**52: 143 years; in ns it still fits an int64).
MAX_T_US = 1 << 52


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
            arrays = {k: np.asarray(data[k]) for k in ('t_us', 'x', 'y', 'p') if k in data}
            size = [_size(path, k, data[k]) for k in ('width', 'height') if k in data]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, NpzEventsError):
            raise
        raise NpzEventsError(f'{path}: not a numpy .npz file ({_first_line(exc)})') from None
    missing = [k for k in ('t_us', 'x', 'y', 'p') if k not in arrays]
    if missing:
        raise NpzEventsError(f'{path}: no {", ".join(missing)} array (expected t_us, x, y, p)')
    n = arrays['t_us'].shape
    if any(a.ndim != 1 or a.shape != n for a in arrays.values()):
        raise NpzEventsError(f'{path}: t_us, x, y and p must be 1-D arrays of one length')
    ev = EventArrays(_times(path, arrays['t_us']), arrays['x'].astype(np.uint16),
                     arrays['y'].astype(np.uint16), (arrays['p'] != 0).astype(np.uint8))
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


def _times(path: Path, t: np.ndarray) -> np.ndarray:
    """``t_us`` as int64 microseconds; NpzEventsError when a time is not a sensor time."""
    if t.dtype.kind not in 'iuf':
        raise NpzEventsError(f'{path}: t_us must hold real numbers, not {t.dtype}')
    if t.dtype.kind == 'f' and not np.all(np.isfinite(t)):
        raise NpzEventsError(f'{path}: t_us holds {int(np.sum(~np.isfinite(t)))} time(s) '
                             'that are not numbers (NaN or infinite)')
    if len(t) and (t.min() < 0 or t.max() > MAX_T_US):
        raise NpzEventsError(f'{path}: t_us runs from {t.min():.0f} to {t.max():.0f} us; '
                             f'sensor times lie within 0..{MAX_T_US} us (shift them to start '
                             'at 0 or later)')
    return t.astype(np.int64)


def iter_npz_packets(path: 'str | Path', packet_us: int = 1000) -> Iterator[EventPacketRecord]:
    """Stream an ``.npz`` file's events as ``mono`` packet records of ``packet_us`` each."""
    ev, width, height = read_npz_events(path)
    chunks = (ev.slice(lo, min(lo + _CHUNK, len(ev))) for lo in range(0, len(ev), _CHUNK))
    yield from mono_packets(chunks, width, height, 0, packet_us)
