# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The one record of a packet of encoded events, from any source to the pipeline.

The node (DDS bytes or messages), the bag readers (EventPacket, EventArray;
ROS 2 and ROS 1) and the Metavision ``.raw`` reader all give
:class:`EventPacketRecord`, and the pipeline takes it as it is: a packet is
one small tuple from where it is read to where it is decoded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from helixtrack_ros.io.mcap_salvage import one_line

_NS_PER_S = 1_000_000_000


class EventPacketRecord(NamedTuple):
    """The fields of one EventPacket (or EventArray) message, in message order.

    Attributes
    ----------
    stamp_ns : int
        Header stamp [ns of ROS time].
    frame_id : str
        Header frame ('' where the source has none, e.g. a ``.raw`` file).
    height, width : int
        Sensor size in pixels.
    seq : int
        Packet sequence number.
    time_base : int
        The message's time base (0 for EVT 3.0; ns for ``mono``).
    encoding : str
        Payload encoding, e.g. ``'evt3'``.
    is_bigendian : bool
        Byte order of the payload words.
    events : numpy.ndarray or bytes
        The payload bytes (uint8; read in place where the source allows).
    log_time_ns : int
        Time at which a recording stored the message [ns] (the stamp for a
        ``.raw`` file; 0 for a packet taken live).
    """

    stamp_ns: int
    frame_id: str
    height: int
    width: int
    seq: int
    time_base: int
    encoding: str
    is_bigendian: bool
    events: Any
    log_time_ns: int = 0


def record_of_message(msg: Any, log_time_ns: int = 0) -> EventPacketRecord:
    """The record of a deserialized EventPacket or EventArray (rclpy or rosbags; ROS 1 or 2).

    The payload is a view of the message's buffer, not a copy.
    """
    header = msg.header
    return EventPacketRecord(
        int(header.stamp.sec) * _NS_PER_S + int(header.stamp.nanosec), str(header.frame_id),
        int(msg.height), int(msg.width), int(msg.seq), int(msg.time_base), str(msg.encoding),
        bool(msg.is_bigendian), np.frombuffer(msg.events, np.uint8), int(log_time_ns))


def record_of_serialized(deserialize: Callable[[bytes, str], Any], raw: bytes, msgtype: str,
                         log_time_ns: int, n: int, topic: str, path: Any) -> EventPacketRecord:
    """The record of a serialized message, ``deserialize(raw, msgtype)``.

    A message that does not deserialize raises a ValueError naming it: its
    type, its number ``n`` on ``topic`` and the bag ``path``.
    """
    try:
        msg = deserialize(raw, msgtype)
    except Exception as err:
        raise ValueError(f'corrupt {msgtype.rsplit("/", 1)[-1]} {n} on {topic!r} in '
                         f'{path}: {one_line(err)}') from err
    return record_of_message(msg, log_time_ns)


def skip_or_raise(err: ValueError, on_corrupt: Callable[[str], None] | None) -> None:
    """A message that does not read: raise ``err``, or give its line to ``on_corrupt``."""
    if on_corrupt is None:
        raise err
    on_corrupt(str(err))
