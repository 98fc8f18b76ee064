# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Prophesee DAT files: decoded CD events, as Metavision tools and older datasets store them.

Layout (Prophesee's "DAT File Format" page): text header lines ``% key
value`` (``Width``, ``Height``, ``Date`` among them), then two bytes, the
event type (0 Event2d or 12 EventCD) and the event size (8), then
little-endian 8-byte events: the time in microseconds (32 bits), and a
32-bit word with x in bits 0..13, y in bits 14..27 and the polarity in
bits 28..31. The time wraps every 2**32 us (71.6 min): a step back of more
than half of that is a wrap.

:func:`iter_dat_packets` cuts the events into packets of ``packet_us`` as
the driver would and gives each as a ``mono`` packet record (the encoding
the EventArray readers use too), stamped from the header's date. The file
is mapped, not read whole. A file that ends inside an event gives every
whole event, then :class:`~helixtrack_ros.io.raw_file.TruncatedRawError`.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
import mmap
from pathlib import Path

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.event_packets import mono_packets
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.io.raw_file import RawFileError, TruncatedRawError, utc_date_ns

#: The event types whose 8-byte events are CD events.
CD_TYPES = {0: 'Event2d', 12: 'EventCD'}
_EVENT = np.dtype([('t', '<u4'), ('w', '<u4')])
#: Events read at a time (8 MB).
_CHUNK = 1 << 20
#: The most events in a row a damaged time may put far ahead (more are a gap in time).
_MAX_OUTLIERS = 64
#: A step in time this far (either way) opens a run that, if it comes back within
#: :data:`_MAX_OUTLIERS` events, is damage [us]. Sensor times step back by microseconds,
#: not this far (but at the wrap), and a damaged time less far off holds back at most
#: this much (a revolution at 6000 RPM); 100 ms left a file with 2000 flipped bits
#: 800 k events held at a stray time, 10 ms 130 k.
_MAX_JUMP_US = 10_000


@dataclass(frozen=True)
class DatHeader:
    """What a DAT file's header says, and where its events are."""

    width: int
    height: int
    #: byte offset of the first event, and the number of whole events
    data_offset: int
    n_events: int
    #: bytes after the last whole event (a file cut inside one)
    tail_bytes: int
    #: ROS time of sensor time 0 [ns]: the ``Date`` line as UTC, else 0
    date_ns: int


def read_dat_header(path: 'str | Path') -> DatHeader:
    """The header of a DAT file; RawFileError (one line) when it is none or not CD events.

    Without ``Width`` / ``Height`` lines the size is that of the events (the
    largest x and y plus one).
    """
    path = Path(path)
    with path.open('rb') as fh:
        fields: dict[str, str] = {}
        while fh.peek(1)[:1] == b'%':
            words = fh.readline().decode('latin-1')[1:].split(None, 1)
            if words:
                fields[words[0].lower()] = words[1].strip() if len(words) > 1 else ''
        kind = fh.read(2)
        offset = fh.tell()
        size = fh.seek(0, 2)
    if len(kind) < 2 or not fields:
        raise RawFileError(f'{path}: not a DAT file (no "%" header and event type)')
    if kind[0] not in CD_TYPES or kind[1] != _EVENT.itemsize:
        raise RawFileError(f'{path}: DAT events of type {kind[0]} and size {kind[1]}: only CD '
                           f'events (type 0 or 12, size 8) can be tracked')
    n, tail = divmod(size - offset, _EVENT.itemsize)
    width, height = _size(fields, 'width'), _size(fields, 'height')
    if (width is None or height is None) and n:
        w = _events(path, offset, n)['w']
        width = width or int((w & 0x3FFF).max()) + 1
        height = height or int(((w >> 14) & 0x3FFF).max()) + 1
    return DatHeader(width or 1, height or 1, offset, n, tail,
                     utc_date_ns(fields.get('date', '')))


def _size(fields: dict[str, str], key: str) -> int | None:
    """A positive integer header value, or None."""
    try:
        value = int(fields.get(key, ''))
    except ValueError:
        return None
    return value if 0 < value <= 1 << 14 else None


def _events(path: Path, offset: int, n: int) -> np.ndarray:
    """The file's ``n`` events from ``offset``, mapped (read-only)."""
    with path.open('rb') as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mm, _EVENT, count=n, offset=offset)


def iter_dat_packets(path: 'str | Path', packet_us: int = 1000,
                     on_notice: 'Callable[[str], None] | None' = None
                     ) -> Iterator[EventPacketRecord]:
    """Stream a DAT file's CD events as ``mono`` packet records of ``packet_us`` each.

    ``on_notice`` gets one line for each repair of the times (:class:`_Unwrapper`).
    """
    path = Path(path)
    head = read_dat_header(path)
    unwrap = _Unwrapper(on_notice or (lambda line: None))
    packets = mono_packets(_chunks(path, head, unwrap), head.width, head.height, head.date_ns,
                           packet_us)
    n = 0
    for pkt in packets:
        yield pkt
        n += 1
    if head.tail_bytes:
        raise TruncatedRawError(path, f'the file ends {head.tail_bytes} bytes into an event', n)


def _chunks(path: Path, head: DatHeader, unwrap: '_Unwrapper') -> Iterator[EventArrays]:
    """The file's events in chunks, their times unwrapped and sorted (:class:`_Unwrapper`)."""
    if not head.n_events:
        return
    events = _events(path, head.data_offset, head.n_events)
    for lo in range(0, head.n_events, _CHUNK):
        hi = min(lo + _CHUNK, head.n_events)
        chunk = events[lo:hi]
        # (the events after the chunk tell whether a jump at its end comes back)
        t_us, keep = unwrap.times(events['t'][lo:hi + _MAX_OUTLIERS].astype(np.int64),
                                  hi - lo, lo)
        w = chunk['w'] if keep is None else chunk['w'][keep]
        ev = EventArrays(t_us, (w & 0x3FFF).astype(np.uint16),
                         ((w >> 14) & 0x3FFF).astype(np.uint16),
                         ((w >> 28) != 0).astype(np.uint8))
        yield unwrap.sorted(ev, lo)


def _signed(d: 'np.ndarray | int') -> 'np.ndarray | int':
    """Differences of 32-bit times as the shorter way round (-2**31 .. 2**31-1)."""
    return (d + (1 << 31)) % (1 << 32) - (1 << 31)


class _Unwrapper:
    """Sensor times from a DAT file's 32-bit times, across chunks.

    A step of more than 2**31 us back between two events is a wrap of the
    counter (every 71.6 min). A run of up to :data:`_MAX_OUTLIERS` events
    that jumps more than :data:`_MAX_JUMP_US` away (ahead or back) and comes
    back (to nearer the time before it than half the jump) is damage: a
    flipped bit, a stray time. It is left out: read as a wrap it would put
    every later event 71.6 min late, read as a time it would hold every
    later event at the stray time (sensor times never step back that far).
    A jump ahead that stays is a real, if odd, gap; a run back at the file's
    end is left out too. The first time is the median of the first events
    (a damaged first event is left out like any other). Events out of time
    order within a chunk are sorted (a stable sort); each repair is said
    through ``notice``.
    """

    def __init__(self, notice: 'Callable[[str], None]') -> None:
        self.notice = notice
        self.wraps = 0
        self.prev_t32: int | None = None
        self.skip = 0      # events of a left-out run that the chunk before began

    def times(self, t32: np.ndarray, n: int, first: int
              ) -> tuple[np.ndarray, np.ndarray | None]:
        """The unwrapped times of a chunk's ``n`` events and which are kept (None: all).

        ``t32`` is the chunk's times and up to :data:`_MAX_OUTLIERS` times after it.
        """
        prev = (int(np.median(t32[:_MAX_OUTLIERS + 1])) if self.prev_t32 is None
                else self.prev_t32)
        keep = self._damage(t32, n, first, prev)
        t32, keep = t32[:n], keep[:n]
        kept = t32[keep]
        wrap = np.diff(kept, prepend=prev) < -(1 << 31)     # (between kept events only)
        t_us = kept + ((self.wraps + np.cumsum(wrap)) << 32)
        self.wraps += int(wrap.sum())
        if len(kept):
            self.prev_t32 = int(kept[-1])
        return t_us, (None if keep.all() else keep)

    def _damage(self, t32: np.ndarray, n: int, first: int, prev: int) -> np.ndarray:
        """Which of ``t32`` are kept: the runs that jump away and back, from the first n."""
        keep = np.ones(len(t32), bool)
        keep[:self.skip] = False
        jumps = np.flatnonzero(np.abs(_signed(np.diff(t32, prepend=prev))) > _MAX_JUMP_US)
        ref, i = prev, self.skip     # the last kept time; where to look on from
        check = self.skip > 0        # whether t32[i] must be checked against ref
        self.skip = 0
        while True:
            if not check:
                c = int(np.searchsorted(jumps, i))
                if c == len(jumps):
                    return keep
                i = int(jumps[c])
                ref = int(t32[i - 1]) if i else prev
            check = False
            if i >= n:
                return keep
            step = int(_signed(int(t32[i]) - ref))
            if abs(step) <= _MAX_JUMP_US:
                i += 1
                continue
            after = np.abs(_signed(t32[i + 1:i + 1 + _MAX_OUTLIERS] - ref))
            back = np.flatnonzero(2 * after < abs(step))
            # (a run back at the file's end: still away, as if the next events were near ref)
            at_end = len(t32) < n + _MAX_OUTLIERS and len(t32) - i <= _MAX_OUTLIERS
            if not len(back) and not (at_end and step < 0):
                i += 1                     # a jump ahead that stays: a real gap
                continue
            j = i + 1 + (int(back[0]) if len(back) else len(after))
            keep[i:j] = False
            self.notice(f'{j - i} event(s) from event {first + i} stand more than '
                        f'{_MAX_JUMP_US / 1e6:g} s off the events around them (time '
                        f'{int(t32[i])} us after {ref} us): left out as damaged times')
            self.skip = max(j - n, 0)
            i, check = j, j < len(t32)
            if not check:
                return keep

    def sorted(self, ev: EventArrays, first: int) -> EventArrays:
        """The chunk's events in time order (said when they were not)."""
        out = ev.time_sorted()
        if out is not ev:
            n, at = ev.late()
            self.notice(f'{n} event(s) from event {first + at} '
                        'come earlier than events before them: sorted by time')
        return out


def write_dat(path: 'str | Path', events: EventArrays, width: int, height: int,
              date: str = '2026-01-01 00:00:00') -> None:
    """Write CD events as a DAT file (tests, conversions); times must fit 32 bits."""
    t = np.asarray(events.t_us, np.int64)
    if t.size and (t.min() < 0 or t.max() >= 1 << 32):
        raise ValueError('DAT event times must lie within 0..2**32-1 us')
    data = np.empty(len(t), _EVENT)
    data['t'] = t
    data['w'] = (np.asarray(events.x, np.uint32) | (np.asarray(events.y, np.uint32) << 14)
                 | ((np.asarray(events.p) != 0).astype(np.uint32) << 28))
    header = (f'% Data file containing CD events\n% Date {date}\n% Version 2\n'
              f'% Width {width}\n% Height {height}\n').encode()
    Path(path).write_bytes(header + bytes([12, _EVENT.itemsize]) + data.tobytes())
