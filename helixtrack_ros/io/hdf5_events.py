# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""HDF5 files of decoded events: Metavision's event files, DSEC, M3ED and the like.

Read with h5py (an optional dependency). The events are found where they are:

- a compound dataset with fields x, y, p and t (Metavision's ``CD/events``: x, y as
  uint16, p as int16, t as int64 microseconds; its trigger dataset has no x and y);
- a group of 1-D datasets x, y, p and t (DSEC's ``events``, M3ED's ``prophesee/left``),
  with DSEC's ``t_offset`` [us] added to the times where the file has one.

The time may be named ``t``, ``ts``, ``t_us``, ``timestamp`` or ``timestamps``
(microseconds, with the checks of :mod:`~helixtrack_ros.io.npz_events`) or
``t_ns`` (nanoseconds); the polarity ``p``, ``polarity`` or ``on``. A file with
several such places needs one named (``--topic``, e.g. ``/CD/events``). The
sensor size comes from the attributes (``geometry`` ``WxH``, or ``width`` and
``height``), else from the events. A dataset compressed by a filter this HDF5
library lacks (Metavision's ECF codec, Blosc) is refused saying which and where
it comes from. The events are read in chunks and cut into 1 ms ``mono`` packets.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
import re
from typing import Any

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.event_packets import mono_packets
from helixtrack_ros.io.npz_events import pixel_problem, polarity_on, sensor_times_us
from helixtrack_ros.io.packet_record import EventPacketRecord

#: File name suffixes read as HDF5.
HDF5_SUFFIXES = ('.hdf5', '.h5', '.he5')
#: Names of the time, polarity and pixel fields, in the order they are looked for.
_T_NAMES = ('t', 'ts', 't_us', 'timestamp', 'timestamps', 't_ns')
_P_NAMES = ('p', 'polarity', 'on', 'pol')
#: Events read at a time.
_CHUNK = 1 << 20
#: HDF5 filters that come as plugins, by id: what they are and where to get them.
_PLUGIN_FILTERS = {
    0x8ECF: ("Prophesee's ECF codec", 'install the hdf5_ecf plugin (it comes with Metavision '
             'SDK) and set HDF5_PLUGIN_PATH to its folder, or give the .raw file instead'),
    **{fid: (name, 'pip install hdf5plugin') for fid, name in (
        (32001, 'Blosc'), (32004, 'LZ4'), (32008, 'bitshuffle'), (32015, 'Zstandard'),
        (32026, 'Blosc2'))},
}


class Hdf5EventsError(ValueError):
    """An HDF5 file that holds no events this reader can use, in one line."""


@dataclass(frozen=True)
class Hdf5Layout:
    """Where a file's events are: a compound dataset or a group of 1-D datasets."""

    place: str                       # the dataset or group path, e.g. '/CD/events'
    fields: tuple[str, str, str, str]   # names of x, y, p and t
    compound: bool
    t_offset_us: int
    width: int
    height: int
    n_events: int


def _h5py() -> Any:
    """h5py, with hdf5plugin's filters registered where that is installed."""
    try:
        import h5py
    except ImportError:
        raise Hdf5EventsError('reading HDF5 files needs h5py: pip install h5py') from None
    try:
        import hdf5plugin  # noqa: F401  (registers Blosc, LZ4, Zstandard ... with HDF5)
    except ImportError:
        pass
    return h5py


def _fields_of(names: 'list[str]') -> 'tuple[str, str, str, str] | None':
    """(x, y, p, t) names among ``names``; None when one is missing."""
    low = {n.lower(): n for n in names}
    t = next((low[n] for n in _T_NAMES if n in low), None)
    p = next((low[n] for n in _P_NAMES if n in low), None)
    if t is None or p is None or 'x' not in low or 'y' not in low:
        return None
    return low['x'], low['y'], p, t


def _candidates(f: Any) -> 'list[tuple[str, tuple[str, str, str, str], bool]]':
    """Every place in the file that holds events: (path, field names, compound)."""
    h5py = _h5py()
    found = []

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset) and obj.dtype.names:
            fields = _fields_of(list(obj.dtype.names))
            if fields is not None and obj.ndim == 1:
                found.append(('/' + name, fields, True))
        elif isinstance(obj, h5py.Group):
            names = [k for k, v in obj.items() if isinstance(v, h5py.Dataset) and v.ndim == 1]
            fields = _fields_of(names)
            if fields is not None and len({obj[k].shape for k in fields}) == 1:
                found.append(('/' + name, fields, False))

    visit('', f)
    f.visititems(visit)
    return [(p.replace('//', '/') or '/', fl, c) for p, fl, c in found]


def _choose(path: Path, found: list, place: 'str | None') -> tuple:
    """The place the events are read from: ``place`` if given, else the only one."""
    if place is not None:
        want = '/' + place.strip('/')
        match = [c for c in found if c[0].rstrip('/') == want.rstrip('/') or c[0] == want]
        if not match:
            raise Hdf5EventsError(f'{path}: no events at {place} (events are at: '
                                  f'{", ".join(c[0] for c in found) or "no place"})')
        return match[0]
    if not found:
        raise Hdf5EventsError(f'{path}: no events found (expected a dataset with fields x, y, '
                              'p, t, such as /CD/events, or a group of datasets x, y, p, t)')
    if len(found) > 1:
        raise Hdf5EventsError(f'{path} has events at {len(found)} places: '
                              f'{", ".join(c[0] for c in found)}; choose one with --topic')
    return found[0]


def _geometry(*holders: Any) -> tuple[int, int]:
    """(width, height) from attributes (``geometry`` 'WxH', or ``width``/``height``); 0s."""
    for h in holders:
        attrs = h.attrs
        geo = attrs.get('geometry')
        if geo is not None:
            text = geo.decode() if isinstance(geo, bytes) else str(geo)
            m = re.fullmatch(r'\s*(\d+)\s*[xX]\s*(\d+)\s*', text)
            if m:
                return int(m.group(1)), int(m.group(2))
        for w_key, h_key in (('width', 'height'), ('sensor_width', 'sensor_height')):
            if w_key in attrs and h_key in attrs:
                return int(np.asarray(attrs[w_key]).item()), int(np.asarray(attrs[h_key]).item())
    return 0, 0


def _datasets(f: Any, lay: Hdf5Layout) -> list:
    """The datasets a layout reads (one compound, or four)."""
    if lay.compound:
        return [f[lay.place]]
    return [f[lay.place][k] for k in lay.fields]


def _filter_problem(path: Path, dsets: list) -> 'str | None':
    """Why the events cannot be decompressed here (a plugin filter not installed)."""
    from h5py import h5z
    for d in dsets:
        plist = d.id.get_create_plist()
        for i in range(plist.get_nfilters()):
            fid = plist.get_filter(i)[0]
            if not h5z.filter_avail(fid):
                what, how = _PLUGIN_FILTERS.get(fid, (f'HDF5 filter {fid}', 'install its plugin '
                                                      'and set HDF5_PLUGIN_PATH'))
                return (f'{path}: {d.name} is compressed with {what} (HDF5 filter {fid}), '
                        f'which this HDF5 library lacks: {how}')
    return None


def read_hdf5_layout(path: 'str | Path', place: 'str | None' = None) -> Hdf5Layout:
    """Find a file's events (see the module docstring); Hdf5EventsError in one line."""
    path = Path(path)
    h5py = _h5py()
    try:
        f = h5py.File(path, 'r')
    except OSError as exc:
        raise Hdf5EventsError(f'{path}: cannot be read as HDF5 ({_first(exc)})') from None
    with f:
        where, fields, compound = _choose(path, _candidates(f), place)
        obj = f[where]
        parent = obj.parent if compound else obj
        off = parent.get('t_offset', f.get('t_offset'))
        t_offset = int(np.asarray(off[()]).item()) if off is not None else 0
        width, height = _geometry(obj, parent, f)
        n = obj.shape[0] if compound else obj[fields[0]].shape[0]
        lay = Hdf5Layout(where, fields, compound, t_offset, width, height, int(n))
        problem = _filter_problem(path, _datasets(f, lay))
        if problem is not None:
            raise Hdf5EventsError(problem)
        if not (width and height) and n:
            width, height = _size_from_events(f, lay)
            lay = Hdf5Layout(where, fields, compound, t_offset, width, height, int(n))
    return lay


def _first(exc: Exception) -> str:
    """The gist of an HDF5 error (h5py's messages run on with the library's stack)."""
    return str(exc).split(';')[0].split('\n')[0].strip()


def _columns(f: Any, lay: Hdf5Layout, lo: int, hi: int) -> tuple:
    """The raw (x, y, p, t) arrays of events lo..hi."""
    if lay.compound:
        block = f[lay.place][lo:hi]
        return tuple(block[k] for k in lay.fields)
    group = f[lay.place]
    return tuple(group[k][lo:hi] for k in lay.fields)


def _size_from_events(f: Any, lay: Hdf5Layout) -> tuple[int, int]:
    """(largest x + 1, largest y + 1) over the file."""
    wx = hy = 0
    for lo in range(0, lay.n_events, _CHUNK):
        x, y = _columns(f, lay, lo, min(lo + _CHUNK, lay.n_events))[:2]
        wx, hy = max(wx, int(x.max()) + 1), max(hy, int(y.max()) + 1)
    return wx, hy


def _times_us(path: Path, t: np.ndarray, name: str, first: bool, offset_us: int) -> np.ndarray:
    """A chunk's times as int64 microseconds (the unit checked on the first chunk)."""
    try:
        return sensor_times_us(t, name, nanoseconds=name.lower() == 't_ns', check_unit=first,
                               offset_us=offset_us)
    except ValueError as exc:
        raise Hdf5EventsError(f'{path}: {exc}') from None


def _chunk_events(path: Path, cols: tuple, lay: Hdf5Layout, first: bool) -> EventArrays:
    """One chunk's events, checked and converted."""
    x, y, p, t = cols
    for name, a in (('x', x), ('y', y)):
        problem = pixel_problem(name, a) if a.dtype.kind in 'iuf' else f'{name} is not numbers'
        if problem is not None:
            raise Hdf5EventsError(f'{path}: {problem}')
    if p.dtype.kind not in 'biuf':
        raise Hdf5EventsError(f'{path}: the polarity must be numbers, not {p.dtype}')
    return EventArrays(_times_us(path, t, lay.fields[3], first, lay.t_offset_us),
                       x.astype(np.uint16), y.astype(np.uint16), polarity_on(p))


def _event_chunks(path: Path, lay: Hdf5Layout,
                  on_notice: 'Callable[[str], None]') -> Iterator[EventArrays]:
    """The file's events in time order, a chunk at a time (a block that cannot be read is
    said and left out); Hdf5EventsError when a chunk starts before the one before it ends
    (the file is not in time order)."""
    h5py = _h5py()
    last_t, unsorted = None, 0
    with h5py.File(path, 'r') as f:
        for lo in range(0, lay.n_events, _CHUNK):
            hi = min(lo + _CHUNK, lay.n_events)
            try:
                cols = _columns(f, lay, lo, hi)
            except OSError as exc:    # (a damaged block: the others are still good)
                on_notice(f'{path}: events {lo}..{hi - 1} cannot be read ({_first(exc)}): '
                          'left out')
                continue
            ev = _chunk_events(path, cols, lay, lo == 0)
            if len(ev) > 1 and np.any(np.diff(ev.t_us) < 0):
                unsorted += 1
                ev = ev.time_sorted()
            if last_t is not None and len(ev) and int(ev.t_us[0]) < last_t:
                raise Hdf5EventsError(f'{path}: events {lo}.. start at {int(ev.t_us[0])} us, '
                                      f'before those before them end ({last_t} us): not in '
                                      'time order')
            if len(ev):
                last_t = int(ev.t_us[-1])
            yield ev
    if unsorted:
        on_notice(f'{path}: events out of time order in {unsorted} block(s) of '
                  f'{_CHUNK} were sorted')


def iter_hdf5_packets(path: 'str | Path', place: 'str | None' = None, packet_us: int = 1000,
                      on_notice: 'Callable[[str], None] | None' = None
                      ) -> Iterator[EventPacketRecord]:
    """Stream an HDF5 file's events as ``mono`` packet records of ``packet_us`` each."""
    path = Path(path)
    lay = read_hdf5_layout(path, place)
    chunks = _event_chunks(path, lay, on_notice or (lambda line: None))
    yield from mono_packets(chunks, lay.width, lay.height, 0, packet_us)
