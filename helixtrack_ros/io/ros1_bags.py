# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""ROS 1 bags (``.bag``) of event messages, with ``rosbags.rosbag1``.

Older recordings of the metavision driver are ROS 1 bags of
``event_array_msgs/EventArray`` (or ``event_camera_msgs/EventPacket``)
messages. :func:`iter_ros1_event_packets` reads them into the same
:class:`~helixtrack_ros.io.packet_record.EventPacketRecord` as the rosbag2
reader; :class:`Ros1EventBagWriter` writes them (tests, conversions).
Errors are ``FileNotFoundError`` or a one-line ``ValueError``.
"""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.rosbag1 import Reader, Writer

from helixtrack_ros.io.bags import ResumableMessages
from helixtrack_ros.io.event_structs import StructEventReader, struct_record
from helixtrack_ros.io.mcap_salvage import TruncatedBagError, one_line
from helixtrack_ros.io.packet_record import (
    EventPacketRecord,
    record_of_serialized,
    skip_or_raise,
)
from helixtrack_ros.io.ros1_salvage import MAGIC, Ros1Salvage
from helixtrack_ros.io.ros_types import (
    DEFAULT_EVENT_TOPIC,
    EVENT_ARRAY_TYPE,
    EVENT_TYPES,
    READABLE_EVENT_TYPES,
    STRUCT_EVENT_TYPES,
    ros1_typestore,
)

_NS_PER_S = 1_000_000_000


def _open(path: 'str | Path') -> 'Reader | Ros1Salvage':
    """The bag's reader; a bag rosbags cannot open (no index) as a :class:`Ros1Salvage`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'bag not found: {path}')
    try:
        reader = Reader(path)
        reader.open()
    except Exception as err:  # rosbags raises its own ReaderError, and OSError
        with path.open('rb') as fh:
            bag = fh.read(len(MAGIC)) == MAGIC and path.stat().st_size > len(MAGIC)
        if bag:   # no index (the recorder was killed), or damage rosbags stops at
            return Ros1Salvage(path)
        raise ValueError(f'cannot read ROS 1 bag {path}: {one_line(err)}') from err
    return reader


def ros1_topics(path: 'str | Path') -> dict[str, tuple[str, int]]:
    """The topics of a ROS 1 bag: topic -> (message type, message count)."""
    reader = _open(path)
    try:
        out: dict[str, tuple[str, int]] = {}
        for c in reader.connections:
            _, n = out.get(c.topic, (c.msgtype, 0))
            out[c.topic] = (c.msgtype, n + int(c.msgcount))
        return dict(sorted(out.items()))
    finally:
        reader.close()


def iter_ros1_event_packets(path: 'str | Path', topic: str = DEFAULT_EVENT_TOPIC,
                            on_corrupt: 'Callable[[str], None] | None' = None,
                            on_notice: 'Callable[[str], None] | None' = None
                            ) -> Iterator[EventPacketRecord]:
    """Stream the EventArray or EventPacket messages of one topic of a ROS 1 bag.

    ``on_corrupt``, ``on_notice``: as for :func:`~helixtrack_ros.io.bags.iter_event_packets`.

    Raises
    ------
    FileNotFoundError
        If the bag does not exist.
    ValueError
        If it cannot be read, the topic is missing or of another type, or a
        message cannot be deserialized.
    TruncatedBagError
        (a ValueError) After the last intact message of a bag cut short.
    """
    reader = _open(path)
    try:
        conns = [c for c in reader.connections if c.topic == topic]
        if not conns:
            avail = ', '.join(f'{c.topic} ({c.msgtype})' for c in reader.connections) or 'none'
            raise ValueError(f'topic {topic!r} not in bag {path}; available: {avail}')
        msgtype = conns[0].msgtype
        if any(c.msgtype not in READABLE_EVENT_TYPES for c in conns):
            raise ValueError(f'topic {topic!r} has type {msgtype}, expected '
                             f'{" or ".join(READABLE_EVENT_TYPES)}')
        store = ros1_typestore()
        structs = StructEventReader(True, on_notice) if msgtype in STRUCT_EVENT_TYPES else None
        read = 0
        stream = ResumableMessages(reader, conns, f'of {topic!r}',
                                   lambda: Ros1Salvage(Path(path)))
        for n, (_, log_time_ns, raw) in enumerate(stream):
            try:
                if structs is not None:
                    record = struct_record(structs, raw, log_time_ns, n, topic, path)
                else:
                    record = record_of_serialized(store.deserialize_ros1, raw, msgtype,
                                                  log_time_ns, n, topic, path)
            except ValueError as err:
                skip_or_raise(err, on_corrupt)
                continue
            yield record
            read += 1
        if getattr(stream.reader, 'damage', None) is not None:
            raise TruncatedBagError(path, stream.reader.damage, read, topic,
                                    getattr(stream.reader, 'read_past', False))
    finally:
        reader.close()


class Ros1EventBagWriter:
    """Write event messages (EventArray by default) to a new ROS 1 bag.

    Use in a ``with`` block; :meth:`write` takes the fields of one packet.
    """

    def __init__(self, path: 'str | Path', topic: str = DEFAULT_EVENT_TOPIC,
                 msgtype: str = EVENT_ARRAY_TYPE) -> None:
        if msgtype not in EVENT_TYPES:
            raise ValueError(f'msgtype must be one of {", ".join(EVENT_TYPES)}, got {msgtype!r}')
        self.path = Path(path)
        self.topic = topic
        self.msgtype = msgtype
        self._store = ros1_typestore()
        self._writer = Writer(self.path)
        self._conn: Any = None

    def __enter__(self) -> 'Ros1EventBagWriter':  # noqa: D105
        self._writer.open()
        self._conn = self._writer.add_connection(self.topic, self.msgtype, typestore=self._store)
        return self

    def __exit__(self, *exc: object) -> None:  # noqa: D105
        self._writer.close()

    def write(self, stamp_ns: int, seq: int, payload: 'bytes | np.ndarray', width: int,
              height: int, encoding: str = 'evt3', frame_id: str = 'event_camera',
              time_base: int = 0) -> None:
        """Write one message; the stamp is also the bag's record time."""
        st = self._store.types
        stamp = st['builtin_interfaces/msg/Time'](sec=int(stamp_ns) // _NS_PER_S,
                                                  nanosec=int(stamp_ns) % _NS_PER_S)
        header = st['std_msgs/msg/Header'](seq=int(seq) & 0xFFFFFFFF, stamp=stamp,
                                           frame_id=frame_id)
        data = np.frombuffer(bytes(payload), np.uint8) if isinstance(payload, bytes) else \
            np.ascontiguousarray(payload, np.uint8).reshape(-1)
        msg = st[self.msgtype](header=header, height=int(height), width=int(width),
                               encoding=str(encoding), is_bigendian=False,
                               time_base=int(time_base), events=data, seq=int(seq))
        raw = self._store.serialize_ros1(msg, self.msgtype)
        self._writer.write(self._conn, int(stamp_ns), raw)
