# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""ROS 1 bags cut short: a reader of their intact records.

A ``rosbag record`` killed before it closes the bag leaves no index, and
rosbags refuses the file ("Bag index looks damaged"). :class:`Ros1Salvage`
reads such a bag record by record (format 2.0: chunks of connection and
message records, uncompressed, bz2 or lz4), up to the first record that is
cut off or unreadable, and keeps what and where in ``damage``; it offers
the ``Reader`` members :mod:`helixtrack_ros.io.ros1_bags` uses.
"""

import bz2
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
import mmap
from pathlib import Path
import struct
from typing import Any

from helixtrack_ros.io.mcap_salvage import one_line

MAGIC = b'#ROSBAG V2.0\n'
_OP_MESSAGE, _OP_INDEX, _OP_CHUNK, _OP_CHUNK_INFO, _OP_CONNECTION = 0x02, 0x04, 0x05, 0x06, 0x07
_U32 = struct.Struct('<I')


@dataclass
class _Connection:
    """A connection of a salvaged bag: what ``Reader.connections`` items offer here."""

    id: int
    topic: str
    msgtype: str
    msgcount: int = 0


def _fields(header: bytes) -> dict[str, bytes]:
    """The ``name=value`` fields of a record header."""
    out, pos = {}, 0
    while pos + 4 <= len(header):
        (n,) = _U32.unpack_from(header, pos)
        name, _, value = header[pos + 4:pos + 4 + n].partition(b'=')
        out[name.decode(errors='replace')] = value
        pos += 4 + n
    return out


def _record_at(data: bytes, pos: int) -> 'tuple[dict[str, bytes], bytes, int] | None':
    """(header fields, data, end) of the record at ``pos``; its data cut short where the
    bytes end (end > len(data)); None when not even its header is there."""
    if pos + 4 > len(data):
        return None
    (hlen,) = _U32.unpack_from(data, pos)
    if pos + 8 + hlen > len(data):
        return None
    (dlen,) = _U32.unpack_from(data, pos + 4 + hlen)
    end = pos + 8 + hlen + dlen
    return _fields(data[pos + 4:pos + 4 + hlen]), data[pos + 8 + hlen:end], end


def _records(data: bytes) -> tuple[list[tuple[dict[str, bytes], bytes]], bool]:
    """(header fields, data) of each whole record in ``data``, and whether they fill it
    (False: a record is cut off or its lengths are garbage)."""
    out, pos = [], 0
    while (rec := _record_at(data, pos)) is not None and rec[2] <= len(data):
        out.append((rec[0], rec[1]))
        pos = rec[2]
    return out, pos == len(data)


def _decompress(data: bytes, compression: bytes) -> bytes:
    """As much of a (possibly cut) chunk as decodes."""
    if compression == b'none':
        return data
    if compression == b'bz2':
        return bz2.BZ2Decompressor().decompress(data)
    if compression == b'lz4':
        from lz4.frame import LZ4FrameDecompressor
        return LZ4FrameDecompressor().decompress(data)
    raise ValueError(f'unsupported chunk compression {compression.decode()!r}')


class Ros1Salvage:
    """Reads the intact connection and message records of a ROS 1 bag, in file order.

    ``damage`` says where reading stopped, or that the bag ends without its
    index; ``damaged_file`` is the bag.
    """

    #: a salvage reader (not to be salvaged again)
    salvaged = True

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.damage: str | None = None
        self.damaged_file = self.path
        self.read_past = False
        self._conns: dict[int, _Connection] = {}
        self._by_topic: dict[tuple[str, str], _Connection] = {}
        for conn, _, _ in self._scan(None):
            conn.msgcount += 1
        self.connections = list(self._by_topic.values())

    def open(self) -> None:
        """Nothing to open (the file is read on each scan)."""

    def close(self) -> None:
        """Nothing stays open between reads."""

    def messages(self, connections: Iterable[Any]) -> Iterator[tuple[Any, int, bytes]]:
        """Yield ``(connection, record time [ns], raw message)`` of the intact messages."""
        yield from self._scan({c.id for c in connections})

    def _scan(self, wanted: 'set[int] | None') -> Iterator[tuple[Any, int, bytes]]:
        with self.path.open('rb') as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) \
                as data:
            yield from self._scan_data(data, wanted)

    def _scan_data(self, data: Any, wanted: 'set[int] | None'
                   ) -> Iterator[tuple[Any, int, bytes]]:
        """:meth:`_scan` over the file's bytes (mapped: a bag can be many GB)."""
        if data[:len(MAGIC)] != MAGIC:
            self.damage = 'no ROS 1 bag header'
            return
        pos = len(MAGIC)
        self._notes: list[str] = []
        indexed = False
        while pos < len(data):
            rec = _record_at(data, pos)
            if rec is None:
                self.damage = f'the bag ends at byte {len(data)} inside a record header'
                return
            fields, body, end = rec
            op = fields.get('op', b'\0')[:1]
            try:
                if op == bytes([_OP_CHUNK]):
                    # (a cut-off chunk gives the records that arrived whole)
                    inner = _decompress(body, fields.get('compression', b'none'))
                    records, whole = _records(inner)
                    yield from self._take(records, wanted)
                    if not whole and end <= len(data):    # damage inside: read on after it
                        self._notes.append(f'the chunk at byte {pos} holds a damaged record')
                elif end <= len(data):
                    indexed = indexed or op in (bytes([_OP_INDEX]), bytes([_OP_CHUNK_INFO]))
                    yield from self._take([(fields, body)], wanted)
            except Exception as err:  # bz2 / lz4 / struct errors, bad fields, bad text
                what = f'the record at byte {pos} is damaged: {one_line(err)}'
                if op != bytes([_OP_CHUNK]) or end > len(data):
                    self.damage = self._damage(what)
                    return
                self._notes.append(what)    # a whole chunk: read on after it
            if end > len(data):
                self.damage = self._damage(f'the bag ends at byte {len(data)} inside the record '
                                           f'at byte {pos}')
                return
            pos = end
        self.damage = self._damage(None if indexed else
                                   'it ends without its index (the recorder did not close it)')

    def _damage(self, stop: 'str | None') -> 'str | None':
        """The damaged chunks read past (the first named) and where reading stopped."""
        parts = self._notes[:1] + ([f'{len(self._notes) - 1} more damaged chunks']
                                   if len(self._notes) > 1 else [])
        self.read_past = bool(self._notes) and stop is None
        return '; '.join(parts + ([stop] if stop else [])) or None

    def _take(self, records: Iterable[tuple[dict[str, bytes], bytes]],
              wanted: 'set[int] | None') -> Iterator[tuple[Any, int, bytes]]:
        """Take in connection records; give the message records of wanted connections."""
        for fields, body in records:
            op = fields.get('op', b'\0')[:1]
            if op == bytes([_OP_CONNECTION]):
                self._connection(fields, body)
            elif op == bytes([_OP_MESSAGE]) and 'conn' in fields and 'time' in fields:
                conn = self._conns.get(_U32.unpack(fields['conn'])[0])
                if conn is None or (wanted is not None and conn.id not in wanted):
                    continue
                sec, nsec = struct.unpack('<II', fields['time'])
                yield conn, sec * 1_000_000_000 + nsec, body

    def _connection(self, fields: dict[str, bytes], body: bytes) -> None:
        (cid,) = _U32.unpack(fields['conn'])
        if cid in self._conns:
            return
        info = _fields(body)
        key = (fields.get('topic', info.get('topic', b'')).decode(),
               _ros2_name(info.get('type', b'').decode()))
        conn = self._by_topic.get(key)
        if conn is None:
            conn = self._by_topic[key] = _Connection(len(self._by_topic), *key)
        self._conns[cid] = conn


def _ros2_name(msgtype: str) -> str:
    """A ROS 1 type name as rosbags names it: ``pkg/Msg`` -> ``pkg/msg/Msg``."""
    pkg, _, name = msgtype.partition('/')
    return msgtype if '/msg/' in msgtype or not name else f'{pkg}/msg/{name}'
