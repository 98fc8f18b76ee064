# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The reader of ROS 1 bags without their index: malformed records end it, never raise."""

import struct

import pytest

from helixtrack_ros.io.ros1_salvage import MAGIC, Ros1Salvage


def _field(name: bytes, value: bytes) -> bytes:
    b = name + b'=' + value
    return struct.pack('<I', len(b)) + b


def _record(fields: list[tuple[bytes, bytes]], data: bytes) -> bytes:
    header = b''.join(_field(k, v) for k, v in fields)
    return struct.pack('<I', len(header)) + header + struct.pack('<I', len(data)) + data


CONNECTION = _record([(b'op', b'\x07'), (b'conn', struct.pack('<I', 0)), (b'topic', b'/e')],
                     _field(b'topic', b'/e') + _field(b'type', b'event_array_msgs/EventArray'))
MESSAGE = _record([(b'op', b'\x02'), (b'conn', struct.pack('<I', 0)),
                   (b'time', struct.pack('<II', 5, 7))], b'payload')


@pytest.mark.parametrize('bad', [
    _record([(b'op', b'\x07'), (b'conn', b'\x01'), (b'topic', b'/e')], b''),   # short conn
    _record([(b'op', b'\x02'), (b'conn', struct.pack('<I', 0)), (b'time', b'\x01')], b'x'),
    _record([(b'op', b'\x05'), (b'compression', b'bz2'), (b'size', b'\0\0\0\0')],
            b'not bz2 at all'),
    _record([(b'\xff\xfe', b'x'), (b'op', b'\x02')], b''),                      # not UTF-8
])
def test_a_malformed_record_ends_the_reading_with_its_damage(tmp_path, bad):
    """Before the review (2026-11-27) such records raised struct.error or KeyError,
    a traceback at the command line."""
    path = tmp_path / 'b.bag'
    path.write_bytes(MAGIC + CONNECTION + MESSAGE + bad + MESSAGE)
    reader = Ros1Salvage(path)
    got = list(reader.messages(reader.connections))
    assert [(c.topic, c.msgtype) for c in reader.connections] == [
        ('/e', 'event_array_msgs/msg/EventArray')]
    assert [(t, raw) for _, t, raw in got][:1] == [(5_000_000_007, b'payload')]
    assert reader.damage is not None
