# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``event_camera_msgs/msg/EventPacket`` read straight from its CDR bytes.

The node takes packets from DDS as serialized bytes and ``helixtrack track``
reads them from bags the same way: the generic deserializers copy the
payload (twice in rclpy: into a C struct, then into a Python array) and build
a Python object per field, about 10x the cost of reading the few fixed
fields here. They are read into an
:class:`~helixtrack_ros.io.packet_record.EventPacketRecord`, the payload a
view of the bytes, not copied.

The message's fields are :data:`EVENT_PACKET_MSG`: a ``std_msgs/Header``
(stamp: int32 sec, uint32 nanosec; string frame_id), then height, width,
seq, time_base, encoding, is_bigendian and the events bytes.

CDR (XCDR1, what the ROS 2 middlewares send by default) aligns each field to its
size, counted from the end of the 4-byte encapsulation header; a string is
its uint32 length (NUL included) and the bytes; a sequence its uint32 count
and the elements. Taken from DDS, the bytes are padded to a multiple of 4.
"""

from __future__ import annotations

import struct

import numpy as np

from helixtrack_ros.io.packet_record import EventPacketRecord

#: The field list of event_camera_msgs/msg/EventPacket (ros-event-camera, Apache-2.0).
EVENT_PACKET_MSG = """std_msgs/Header header
uint32 height
uint32 width
uint64 seq
uint64 time_base
string encoding
bool is_bigendian
uint8[] events
"""

_NS_PER_S = 1_000_000_000
_LE_U32_PAIR = struct.Struct('<II')
_LE_U64_PAIR = struct.Struct('<QQ')
_LE_STAMP = struct.Struct('<iII')
_LE_U32 = struct.Struct('<I')


def parse_event_packet(raw: bytes | memoryview, log_time_ns: int = 0) -> EventPacketRecord:
    """Read a little-endian CDR EventPacket from its bytes (``log_time_ns``: see the record).

    Raises
    ------
    ValueError
        Not little-endian CDR, or a length that does not fit the bytes.
    struct.error, UnicodeDecodeError
        Truncated or garbage bytes.
    """
    if len(raw) < 16 or raw[0] != 0 or raw[1] != 1:
        raise ValueError('not little-endian CDR')
    sec, nsec, flen = _LE_STAMP.unpack_from(raw, 4)
    if flen < 1 or 16 + flen > len(raw):
        raise ValueError('bad frame_id string')
    frame_id = bytes(raw[16:15 + flen]).decode()
    o = 16 + flen
    o += -(o - 4) % 4
    height, width = _LE_U32_PAIR.unpack_from(raw, o)
    o += 8
    o += -(o - 4) % 8
    seq, time_base = _LE_U64_PAIR.unpack_from(raw, o)
    o += 16
    (elen,) = _LE_U32.unpack_from(raw, o)
    o += 4
    if elen < 1 or o + elen > len(raw):
        raise ValueError('bad encoding string')
    encoding = bytes(raw[o:o + elen - 1]).decode()
    o += elen
    if o >= len(raw):
        raise ValueError('truncated before is_bigendian')
    is_big = raw[o]
    o += 1
    o += -(o - 4) % 4
    (n,) = _LE_U32.unpack_from(raw, o)
    o += 4
    # DDS pads the serialized message to a multiple of 4 bytes
    if not 0 <= len(raw) - (o + n) <= 3 or is_big > 1:
        raise ValueError('bad events length')
    return EventPacketRecord(
        int(sec) * _NS_PER_S + int(nsec), frame_id, int(height), int(width), int(seq),
        int(time_base), encoding, bool(is_big), np.frombuffer(raw, np.uint8, n, o),
        int(log_time_ns))
