# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Messages in and out of the node: reading packets as taken, building diagnostics.

Packets arrive as their serialized bytes and are read in place
(:mod:`helixtrack_ros.io.event_packet_cdr`); a deserialized message is taken
as well. Packets already waiting in the subscription are taken in one go
when the node falls behind.
"""

from __future__ import annotations

from collections.abc import Callable
import struct
from typing import Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from event_camera_msgs.msg import EventPacket
from rclpy.serialization import deserialize_message

from helixtrack_ros.io.event_packet_cdr import parse_event_packet
from helixtrack_ros.io.packet_record import EventPacketRecord, record_of_message

_LEVEL_BYTES = [DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR,
                DiagnosticStatus.STALE]


#: Values of the ``events_type`` parameter.
_TYPE_NAMES = {'event_camera_msgs/msg/EventPacket': 'event_packet',
               'event_array_msgs/msg/EventArray': 'event_array'}


def event_message_class(kind: str) -> type:
    """The message class of an ``events_type`` (auto starts with EventPacket).

    ValueError: event_array asked for but event_array_msgs is not installed.
    """
    if kind != 'event_array':
        return EventPacket
    try:
        from event_array_msgs.msg import EventArray
    except ImportError:
        raise ValueError('events_type event_array: the event_array_msgs package is not '
                         'installed (scripts/setup.sh builds it; on ROS: '
                         'ros-<distro>-event-array-msgs)') from None
    return EventArray


def publisher_message_class(publisher_types: list[str]) -> type | None:
    """The event message class the publishers of a topic use (None: none known)."""
    for t in publisher_types:
        if t in _TYPE_NAMES:
            try:
                return event_message_class(_TYPE_NAMES[t])
            except ValueError:
                return None
    return None


def unpack_event_packet(item: bytes | EventPacket) -> EventPacketRecord:
    """The record of a packet as taken (bytes or message); ValueError when unreadable."""
    if not isinstance(item, (bytes, bytearray, memoryview)):
        return record_of_message(item)
    try:
        return parse_event_packet(item)
    except (ValueError, struct.error, IndexError, UnicodeDecodeError):
        pass
    try:
        # not the layout every ROS 2 middleware sends: the generic deserializer
        return record_of_message(deserialize_message(bytes(item), EventPacket))
    except Exception as exc:  # noqa: BLE001 - any failure is an unreadable message
        raise ValueError(f'an EventPacket could not be read ({len(item)} bytes): '
                         f'{exc}') from None


def take_queued(sub: Any, limit: int, on_error: Callable[[Exception], None]
                ) -> list[tuple[bytes | EventPacket, dict | None]]:
    """Take up to ``limit`` (message, MessageInfo) pairs waiting in subscription ``sub``.

    A message rclpy cannot convert (RuntimeError) goes to ``on_error`` and is
    lost; the ones taken before it are kept.
    """
    out: list[tuple[bytes | EventPacket, dict | None]] = []
    if limit <= 0 or sub is None:
        return out
    try:
        handle, msg_type, raw = sub.handle, sub.msg_type, sub.raw
        with handle:
            while len(out) < limit:
                got = handle.take_message(msg_type, raw)
                if got is None:
                    break
                out.append((got[0], got[1] if len(got) > 1 else None))
    except RuntimeError as exc:
        on_error(exc)
    except Exception:  # noqa: BLE001 - e.g. the subscription is being destroyed
        pass
    return out


def arrival_ns(info: dict | None, now_ns: int) -> int:
    """A packet's arrival [ns, system clock]: the middleware's reception time when
    rclpy reports it (and it is plausible), else ``now_ns``."""
    if info:
        received = info.get('received_timestamp') or 0
        if 0 <= now_ns - received < 60_000_000_000:
            return int(received)
    return now_ns


def diagnostic_array(statuses: list[dict[str, Any]], stamp: Time) -> DiagnosticArray:
    """A ``DiagnosticArray`` of status dicts (name, level, message, hardware_id, values)."""
    arr = DiagnosticArray()
    arr.header.stamp = stamp
    for s in statuses:
        arr.status.append(DiagnosticStatus(
            level=_LEVEL_BYTES[min(max(int(s.get('level', 0)), 0), 3)],
            name=str(s.get('name', '')), message=str(s.get('message', '')),
            hardware_id=str(s.get('hardware_id', '')),
            values=[KeyValue(key=str(k), value=str(v))
                    for k, v in (s.get('values') or {}).items()]))
    return arr
