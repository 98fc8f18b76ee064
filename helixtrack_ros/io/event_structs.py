# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EventArray messages that list every event as a struct (dvs_msgs, prophesee_event_msgs).

Many recordings (the rpg_dvs_ros drivers, Prophesee's ROS wrapper, most
public event datasets) carry ``EventArray`` messages of ``header``,
``height``, ``width`` and ``Event[] events`` with each event ``x``, ``y``,
``ts`` (ROS time) and ``polarity``. Both packages use the same fields.
Deserializing them message object by event object costs microseconds per
event, so the bytes are read here in place with numpy (ROS 1: 13 packed
bytes per event; ROS 2 CDR: the ``ts`` aligned to 4 bytes) and each message
becomes a ``mono`` packet of the same events (:mod:`helixtrack_ros.codecs.mono`).

Sensor time: the events carry ROS time, so sensor time is counted from the
whole second before the stream's first event (``epoch_ns``). The packet's
stamp is its first event's ROS time when that is within a second of the
header stamp (drivers stamp a message when it is sent, up to a whole message
after its first event: outputs were stamped that much late), else the
header's. Events are put in time order within a message. A message may span
at most 2**32 ns (4.29 s; the ``mono`` words' offset): the few events more than half
that from the message's median time (a damaged or unset time, years off) are dropped,
counted and said (``on_notice``); a message most of whose events are that far apart is
refused (ValueError).

Sensor size: a message whose ``width`` or ``height`` is 0 (some drivers leave them
unset) takes the stream's size from its other messages, else the events' (largest x
and y plus one over the first messages), said once: :func:`sized_records`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
import datetime
import struct
from typing import NamedTuple

import numpy as np

from helixtrack_ros.codecs.mono import mono_words
from helixtrack_ros.io.packet_record import EventPacketRecord

_NS_PER_S = 1_000_000_000
#: a message's first event this close to its header stamp stamps the packet [ns]
_STAMP_AGREE_NS = _NS_PER_S
#: events farther than this from their message's median time are strays [ns] (half the
#: span a message may have: what is left always fits the ``mono`` words)
_STRAY_NS = 1 << 31
_U32 = struct.Struct('<I')
_ROS1_HEAD = struct.Struct('<III')    # seq, stamp sec, stamp nsec
_CDR_STAMP = struct.Struct('<iI')     # stamp sec, nanosec

#: One event in a ROS 1 message: x, y, ts (sec, nsec), polarity, 13 bytes packed.
ROS1_EVENT = np.dtype({'names': ['x', 'y', 'sec', 'nsec', 'p'],
                       'formats': ['<u2', '<u2', '<u4', '<u4', 'u1'],
                       'offsets': [0, 2, 4, 8, 12], 'itemsize': 13})
#: The first event in a ROS 2 (CDR) message, which starts 4-aligned.
CDR_FIRST_EVENT = np.dtype({'names': ['x', 'y', 'sec', 'nsec', 'p'],
                            'formats': ['<u2', '<u2', '<i4', '<u4', 'u1'],
                            'offsets': [0, 2, 4, 8, 12], 'itemsize': 13})
#: Every later CDR event: 2 bytes of padding before ``ts``, 16 bytes apart (the last 15).
CDR_EVENT = np.dtype({'names': ['x', 'y', 'sec', 'nsec', 'p'],
                      'formats': ['<u2', '<u2', '<i4', '<u4', 'u1'],
                      'offsets': [0, 2, 6, 10, 14], 'itemsize': 15})


class StructEvents(NamedTuple):
    """The fields of one struct-per-event EventArray message."""

    stamp_ns: int
    frame_id: str
    seq: int
    height: int
    width: int
    events: np.ndarray   # structured, fields x, y, sec, nsec, p


def _string(raw: memoryview, o: int, nul: bool) -> tuple[str, int]:
    (n,) = _U32.unpack_from(raw, o)
    o += 4
    if o + n > len(raw) or (nul and n < 1):
        raise ValueError('bad frame_id string')
    return bytes(raw[o:o + n - (1 if nul else 0)]).decode(), o + n


def _events(raw: memoryview, o: int, n: int, dtype: np.dtype, stride: int) -> np.ndarray:
    if n == 0:
        return np.empty(0, dtype)
    if o + stride * (n - 1) + dtype.itemsize > len(raw):
        raise ValueError(f'{n} events do not fit the message')
    return np.ndarray((n,), dtype, raw, o, (stride,))


def parse_ros1(raw: bytes | memoryview) -> StructEvents:
    """Read a ROS 1 serialized ``dvs_msgs/EventArray`` (or prophesee_event_msgs)."""
    raw = memoryview(raw)
    seq, sec, nsec = _ROS1_HEAD.unpack_from(raw, 0)
    frame_id, o = _string(raw, 12, False)
    height, width, n = struct.unpack_from('<III', raw, o)
    ev = _events(raw, o + 12, n, ROS1_EVENT, ROS1_EVENT.itemsize)
    if o + 12 + n * 13 != len(raw):
        raise ValueError(f'{len(raw) - o - 12 - n * 13} bytes after the events')
    return StructEvents(sec * _NS_PER_S + nsec, frame_id, seq, height, width, ev)


def parse_cdr(raw: bytes | memoryview, seq: int) -> StructEvents:
    """Read a little-endian CDR ``dvs_msgs/msg/EventArray`` (ROS 2); ``seq``: its number."""
    raw = memoryview(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 1:
        raise ValueError('not little-endian CDR')
    sec, nsec = _CDR_STAMP.unpack_from(raw, 4)
    frame_id, o = _string(raw, 12, True)
    o += -(o - 4) % 4
    height, width, n = struct.unpack_from('<III', raw, o)
    o += 12
    if n == 0:
        return StructEvents(sec * _NS_PER_S + nsec, frame_id, seq, height, width,
                            np.empty(0, CDR_EVENT))
    if not 0 <= len(raw) - (o + 16 * n - 3) <= 3:    # (a middleware may pad to 4 bytes)
        raise ValueError(f'{n} events do not fit the message of {len(raw)} bytes')
    first = _events(raw, o, 1, CDR_FIRST_EVENT, 16)
    rest = _events(raw, o + 14, n - 1, CDR_EVENT, 16)
    ev = np.empty(n, [('x', '<u2'), ('y', '<u2'), ('sec', '<i8'), ('nsec', '<u4'), ('p', 'u1')])
    for name in ev.dtype.names:
        ev[name][:1] = first[name]
        ev[name][1:] = rest[name]
    return StructEvents(sec * _NS_PER_S + nsec, frame_id, seq, height, width, ev)


class StructEventReader:
    """Turns the struct-per-event messages of one stream into ``mono`` packet records.

    ``ros1``: the messages are ROS 1 serialized, else CDR. The first message
    with events fixes ``epoch_ns``, the ROS time that sensor time counts from.
    """

    def __init__(self, ros1: bool, on_notice: Callable[[str], None] | None = None) -> None:
        self.ros1 = ros1
        self.epoch_ns: int | None = None
        #: given one line per message whose stray events were dropped
        self.on_notice = on_notice
        #: events dropped for a time far from the rest of their message's
        self.events_dropped = 0

    def record(self, raw: bytes | memoryview, log_time_ns: int, n: int) -> EventPacketRecord:
        """The record of message number ``n``; ValueError when its bytes do not fit the type."""
        msg = parse_ros1(raw) if self.ros1 else parse_cdr(raw, n)
        ev = msg.events
        t_ns = ev['sec'].astype(np.int64) * _NS_PER_S + ev['nsec'].astype(np.int64)
        if not t_ns.size:
            return self._record(msg, log_time_ns, 0, np.empty(0, np.uint64), msg.stamp_ns)
        if np.any(t_ns[1:] < t_ns[:-1]):   # (a driver that lists them otherwise)
            order = np.argsort(t_ns, kind='stable')
            ev, t_ns = ev[order], t_ns[order]
        if int(t_ns[-1]) - int(t_ns[0]) >= 1 << 32:
            ev, t_ns = self._without_strays(ev, t_ns, n)
        base = int(t_ns[0])
        if self.epoch_ns is None:    # (only once a message is taken)
            self.epoch_ns = base // _NS_PER_S * _NS_PER_S
        if base < self.epoch_ns:
            # before the stream's start: held at it, as the decoder holds any event
            # earlier than the last (``time_clamped``)
            t_ns = np.maximum(t_ns, self.epoch_ns)
            base = self.epoch_ns
        words = mono_words(ev['x'], ev['y'], ev['p'], t_ns - base)
        stamp_ns = base if abs(base - msg.stamp_ns) <= _STAMP_AGREE_NS else msg.stamp_ns
        return self._record(msg, log_time_ns, base - self.epoch_ns, words, stamp_ns)

    def _without_strays(self, ev: np.ndarray, t_ns: np.ndarray,
                        n: int) -> tuple[np.ndarray, np.ndarray]:
        """A message's events (time-sorted) less the few whose time lies years off the
        rest (dropped, counted, said); ValueError when they are not a few."""
        mid = int(t_ns[len(t_ns) // 2])
        keep = np.abs(t_ns - mid) < _STRAY_NS
        kept = int(keep.sum())
        if 2 * kept <= len(t_ns):
            raise ValueError(f'message {n} spans {(int(t_ns[-1]) - int(t_ns[0])) / 1e9:.1f} '
                             's of event time (at most 4.29 s)')
        far = t_ns[~keep]
        worst = int(far[np.argmax(np.abs(far - mid))])
        self.events_dropped += len(far)
        if self.on_notice is not None:
            self.on_notice(f'EventArray {n}: {len(far)} of its {len(t_ns)} events lie '
                           f'{abs(worst - mid) / 1e9:.3g} s from the others in time (the '
                           f'farthest at {_date(worst)}): dropped, the other {kept} kept')
        return ev[keep], t_ns[keep]

    @staticmethod
    def _record(msg: StructEvents, log_time_ns: int, time_base: int,
                words: np.ndarray, stamp_ns: int) -> EventPacketRecord:
        return EventPacketRecord(stamp_ns, msg.frame_id, msg.height, msg.width, msg.seq,
                                 time_base, 'mono', False, words.view(np.uint8),
                                 int(log_time_ns))


def struct_record(reader: StructEventReader, raw: bytes | memoryview, log_time_ns: int, n: int,
                  topic: str, path: object) -> EventPacketRecord:
    """:meth:`StructEventReader.record`; a message that does not read raises a ValueError
    naming it: its number ``n`` on ``topic`` and the bag ``path``."""
    try:
        return reader.record(raw, log_time_ns, n)
    except (ValueError, struct.error, UnicodeDecodeError) as err:
        raise ValueError(f'corrupt EventArray {n} on {topic!r} in {path}: {err}') from err


def _date(t_ns: int) -> str:
    """A ROS time as a UTC date (or its seconds, beyond the years a date can have)."""
    try:
        when = datetime.datetime.fromtimestamp(t_ns / 1e9, datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f'{t_ns / 1e9:.0f} s'
    return when.strftime('%Y-%m-%d %H:%M:%S UTC')


#: messages without a sensor size held while their events tell it, and their most events
SIZE_FROM_MESSAGES = 200
SIZE_FROM_EVENTS = 2_000_000


def _extent(rec: EventPacketRecord) -> tuple[int, int]:
    """The largest x and y plus one of a ``mono`` record's events ((0, 0): none)."""
    words = np.frombuffer(rec.events, '<u8')
    if not len(words):
        return 0, 0
    return (int(((words >> np.uint64(32)) & np.uint64(0xFFFF)).max()) + 1,
            int(((words >> np.uint64(48)) & np.uint64(0x7FFF)).max()) + 1)


class _Sizes:
    """The sensor size of a stream's unsized ``mono`` records, and the lines saying it."""

    def __init__(self, where: str, on_notice: Callable[[str], None] | None) -> None:
        self.where = where
        self.say = on_notice or (lambda line: None)
        self.size: tuple[int, int] | None = None   # given by a message, or taken
        self.taken = False                         # taken from the events
        self.extent = (0, 0)                       # of the events held
        self.said = False

    def given(self, rec: EventPacketRecord) -> None:
        """A record with a size: the stream's from now on (said once, if any lacked it)."""
        self.size, self.taken = (int(rec.width), int(rec.height)), False

    def fit(self, rec: EventPacketRecord) -> EventPacketRecord:
        """A record as it is, or (unsized, ``mono``) with the size; one beyond a size taken
        from the events grows it (said)."""
        if (rec.width and rec.height) or rec.encoding != 'mono' or self.size is None:
            return rec
        w, h = _extent(rec)
        if self.taken and (w > self.size[0] or h > self.size[1]):
            grown = (max(w, self.size[0]), max(h, self.size[1]))
            self.say(f'EventArray {rec.seq} on {self.where} has events beyond the '
                     f'{self.size[0]}x{self.size[1]} sensor taken from the events before: '
                     f'{grown[0]}x{grown[1]} from here on')
            self.size = grown
        if not self.said:
            self.said = True
            self.say(f'EventArray messages on {self.where} give no sensor size (width and '
                     f"height 0): the {self.size[0]}x{self.size[1]} of the stream's other "
                     'messages taken')
        return rec._replace(width=self.size[0], height=self.size[1])

    def take(self, held: list[EventPacketRecord]) -> None:
        """The size of the events of the first unsized records (largest x and y + 1)."""
        for rec in held:
            w, h = _extent(rec)
            self.extent = (max(self.extent[0], w), max(self.extent[1], h))
        if min(self.extent) > 0:
            self.size, self.taken, self.said = self.extent, True, True
            self.say(f'EventArray messages on {self.where} give no sensor size (width and '
                     f'height 0): {self.size[0]}x{self.size[1]} taken from the events of the '
                     f'first {len(held)} messages (largest x and y + 1)')


def sized_records(records: Iterable[EventPacketRecord], where: str,
                  on_notice: Callable[[str], None] | None = None
                  ) -> Iterator[EventPacketRecord]:
    """The records of a stream, each ``mono`` one without a sensor size given one.

    A driver may leave an EventArray's ``width`` and ``height`` 0; such a record takes
    the size of the stream's other messages, else the one its events give: the first
    :data:`SIZE_FROM_MESSAGES` unsized records (or :data:`SIZE_FROM_EVENTS` events) are
    held until their largest x and y say it. Said once in ``on_notice``; a later event
    beyond a size taken so grows it (said too: the pipeline counts a format change).
    """
    sizes = _Sizes(where, on_notice)
    try:
        yield from _sized(records, sizes)
    finally:     # (a reader closed early closes its bag at once)
        close = getattr(records, 'close', None)
        if close is not None:
            close()


def _sized(records: Iterable[EventPacketRecord], sizes: _Sizes) -> Iterator[EventPacketRecord]:
    """:func:`sized_records` of ``records`` (the held and sized, in their order)."""
    held: list[EventPacketRecord] = []
    events = 0
    for rec in records:
        if rec.width and rec.height:
            sizes.given(rec)
        elif rec.encoding != 'mono':
            # (only mono words hold a size; another encoding's payload is no such words:
            # the pipeline refuses the packet, saying why)
            pass
        elif sizes.size is None:     # nothing tells the size yet: held until events do
            held.append(rec)
            events += len(rec.events) // 8
            if len(held) < SIZE_FROM_MESSAGES and events < SIZE_FROM_EVENTS:
                continue
            sizes.take(held)         # (none yet, as in a stream of empty messages: unsized)
            yield from (sizes.fit(h) for h in held)
            held, events = [], 0
            continue
        yield from (sizes.fit(h) for h in held)    # (a size given: theirs too)
        held, events = [], 0
        yield sizes.fit(rec)
    if held:
        sizes.take(held)
        yield from (sizes.fit(h) for h in held)
