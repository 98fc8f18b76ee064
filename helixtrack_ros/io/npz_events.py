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


class NpzEventsError(ValueError):
    """An ``.npz`` file that holds no events in the expected arrays."""


def read_npz_events(path: 'str | Path') -> tuple[EventArrays, int, int]:
    """The file's events (time-sorted) and the sensor (width, height); NpzEventsError."""
    path = Path(path)
    try:
        with np.load(path) as data:
            arrays = {k: np.asarray(data[k]) for k in ('t_us', 'x', 'y', 'p') if k in data}
            size = [int(data[k]) for k in ('width', 'height') if k in data]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise NpzEventsError(f'{path}: not a numpy .npz file ({exc})') from None
    missing = [k for k in ('t_us', 'x', 'y', 'p') if k not in arrays]
    if missing:
        raise NpzEventsError(f'{path}: no {", ".join(missing)} array (expected t_us, x, y, p)')
    n = arrays['t_us'].shape
    if any(a.ndim != 1 or a.shape != n for a in arrays.values()):
        raise NpzEventsError(f'{path}: t_us, x, y and p must be 1-D arrays of one length')
    ev = EventArrays(arrays['t_us'].astype(np.int64), arrays['x'].astype(np.uint16),
                     arrays['y'].astype(np.uint16), (arrays['p'] != 0).astype(np.uint8))
    if len(ev) and np.any(np.diff(ev.t_us) < 0):
        order = np.argsort(ev.t_us, kind='stable')
        ev = EventArrays(ev.t_us[order], ev.x[order], ev.y[order], ev.p[order])
    if len(size) == 2 and min(size) > 0:
        return ev, size[0], size[1]
    if not len(ev):
        return ev, 1, 1
    return ev, int(ev.x.max()) + 1, int(ev.y.max()) + 1


def iter_npz_packets(path: 'str | Path', packet_us: int = 1000) -> Iterator[EventPacketRecord]:
    """Stream an ``.npz`` file's events as ``mono`` packet records of ``packet_us`` each."""
    ev, width, height = read_npz_events(path)
    chunks = (ev.slice(lo, min(lo + _CHUNK, len(ev))) for lo in range(0, len(ev), _CHUNK))
    yield from mono_packets(chunks, width, height, 0, packet_us)
