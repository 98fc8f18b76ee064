# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""MCAP files cut short: the error that says so and a reader of their intact records.

A recorder killed before it writes an MCAP file's footer and index leaves a
file that rosbags cannot open. :class:`McapSalvage` reads such files record
by record up to the damage; :class:`TruncatedBagError` is what the bag
readers raise after giving every intact message. Split from
:mod:`helixtrack_ros.io.bags` (one concept per module).
"""

from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
import re
import struct
from typing import Any
import zlib


def one_line(err: BaseException) -> str:
    """An exception as one line: its type and its message with the whitespace collapsed."""
    text = ' '.join(str(err).split())
    return f'{type(err).__name__}: {text}' if text else type(err).__name__


class TruncatedBagError(ValueError):
    """An MCAP file of the bag ends early (e.g. the recorder was killed) or has damage.

    Raised by the readers after every intact message was given;
    ``messages_read`` says how many (of the topics read), ``damage`` where
    and what the damage is, ``file`` which file holds it. ``read_past``: the
    damage lay in chunks that were skipped, and the messages after them were
    read too (else reading stopped at the damage).
    """

    def __init__(self, file: Path, damage: str, messages_read: int, topic: str,
                 read_past: bool = False) -> None:
        self.file = Path(file)
        self.damage = damage
        self.messages_read = int(messages_read)
        self.topic = topic
        self.read_past = read_past
        where = 'around' if read_past else 'before'
        super().__init__(
            f'{self.file} is damaged ({damage}); read the {self.messages_read} intact '
            f'messages on {topic} {where} it. {repair_hint(self.file)}')


def repair_hint(file: 'str | Path') -> str:
    """One sentence on how to repair a truncated bag file (MCAP: the mcap CLI; ROS 1)."""
    file = Path(file)
    if file.suffix == '.bag':
        return f'To repair it: rosbag reindex {file} (ROS 1)'
    return (f'To repair it: mcap recover {file} -o {file.stem}_recovered.mcap '
            '(the mcap CLI, github.com/foxglove/mcap)')


_MCAP_MAGIC = b'\x89MCAP0\r\n'
_MCAP_RECORD_HEAD = struct.Struct('<BQ')          # opcode, record length
_MCAP_CHUNK_HEAD = struct.Struct('<QQQI')       # start, end, uncompressed size, crc
_MCAP_MESSAGE_HEAD = struct.Struct('<HIQQ')     # channel, sequence, log time, publish time
_MCAP_FOOTER = struct.Struct('<QQI')            # summary start, summary offset start, crc


def mcap_files(path: Path) -> list[Path]:
    """The MCAP files of a bag (a file or a directory), in recording order."""
    if not path.is_dir():
        return [path] if path.suffix == '.mcap' else []

    def order(p: Path) -> tuple:
        m = re.search(r'(\d+)$', p.stem)
        return (p.stem[:m.start()] if m else p.stem, int(m.group(1)) if m else -1)
    return sorted(path.glob('*.mcap'), key=order)


def mcap_files_if_damaged(path: Path) -> list[Path]:
    """The MCAP files of a bag (file or directory), in order, if one lacks its end magic.

    Empty when none does: then the bag is not truncated MCAP (and is left to rosbags).
    """
    files = mcap_files(path)
    damaged = []
    for f in files:
        with f.open('rb') as fh:
            head = fh.read(len(_MCAP_MAGIC))
            size = fh.seek(0, 2)
            if size >= 2 * len(_MCAP_MAGIC):
                fh.seek(size - len(_MCAP_MAGIC))
            tail = fh.read()
        if head == _MCAP_MAGIC and tail != _MCAP_MAGIC:
            damaged.append(f)
    return files if damaged else []


def _decompress_partial(data: memoryview, compression: str) -> bytes:
    """As much of a (possibly cut) compressed chunk as decodes."""
    if compression == '':
        return data
    if compression == 'lz4':
        from lz4.frame import LZ4FrameDecompressor
        return LZ4FrameDecompressor().decompress(data)
    if compression == 'zstd':
        try:
            from compression import zstd
        except ImportError:
            from backports import zstd
        return zstd.ZstdDecompressor().decompress(data)
    raise ValueError(f'unsupported chunk compression {compression!r}')


@dataclass
class _SalvagedConnection:
    """A topic of a salvaged bag: what ``Reader.connections`` items offer here."""

    id: int
    topic: str
    msgtype: str
    msgcount: int = 0


class McapSalvage:
    """Reads the intact records of damaged MCAP files, in file order.

    rosbags needs an MCAP file's footer and summary, which a recording whose
    recorder died lacks, and stops at a chunk that fails its checksum. This
    scans the records from the start (chunks included, a cut-off last chunk
    as far as it decodes), skips a chunk that is all there but damaged
    inside (the records after it are framed by its length), and stops at
    the first record that is incomplete. ``damage`` and ``damaged_file``
    say what and where (``read_past``: only skipped chunks). Offers the few
    ``Reader`` members this module uses: ``path``, ``connections``,
    ``messages``, ``close``.
    """

    #: a salvage reader (not to be salvaged again)
    salvaged = True

    def __init__(self, path: Path, files: list[Path]) -> None:
        self.path = path
        self.files = files
        self.damage: str | None = None
        self.damaged_file: Path | None = None
        self.read_past = False
        self._skipped: list[tuple[Path, str]] = []
        self._conns: dict[tuple[str, str], _SalvagedConnection] = {}
        for conn, _, _ in self._scan(None):
            conn.msgcount += 1
        self.connections = list(self._conns.values())

    def close(self) -> None:
        """Nothing stays open between reads."""

    def messages(self, connections: Iterable[Any]) -> Iterator[tuple[Any, int, bytes]]:
        """Yield ``(connection, log time [ns], raw CDR)`` of the intact messages."""
        wanted = {c.id for c in connections}
        for conn, log_time, raw in self._scan(wanted):
            yield conn, log_time, bytes(raw)

    def _scan(self, wanted: 'set[int] | None') -> Iterator[tuple[Any, int, memoryview]]:
        self._skipped = []
        for file in self.files:
            damage = yield from self._scan_file(file, wanted)
            if damage is not None:
                self.damage, self.damaged_file = self._damage_text(damage), file
                return
        if self._skipped:
            self.damaged_file = self._skipped[0][0]
            self.damage, self.read_past = self._damage_text(None), True

    def _damage_text(self, stop: 'str | None') -> str:
        """The skipped chunks (the first named) and where reading stopped, in one phrase."""
        parts = []
        if self._skipped:
            n = len(self._skipped)
            parts.append(f'{self._skipped[0][1]}' + (
                f' and {n - 1} more damaged chunks' if n > 1 else '') + ', skipped')
        if stop is not None:
            parts.append(stop)
        return '; '.join(parts)

    def _scan_file(self, file: Path, wanted: 'set[int] | None'
                   ) -> Generator[tuple[Any, int, memoryview], None, 'str | None']:
        """Yield the messages of one file; return the damage found (None: intact)."""
        schemas: dict[int, str] = {}
        channels: dict[int, _SalvagedConnection] = {}
        with file.open('rb') as fh:
            size = fh.seek(0, 2)
            fh.seek(0)
            if fh.read(len(_MCAP_MAGIC)) != _MCAP_MAGIC:
                return 'no MCAP magic at its start'
            # (the channels also stand in the summary: a damaged first chunk loses none)
            self._summary_channels(fh, size, schemas, channels)
            fh.seek(len(_MCAP_MAGIC))
            while True:
                offset = fh.tell()
                head = fh.read(_MCAP_RECORD_HEAD.size)
                if len(head) < _MCAP_RECORD_HEAD.size:
                    return f'the file ends at byte {offset + len(head)} without its MCAP footer'
                op, length = _MCAP_RECORD_HEAD.unpack(head)
                # (a garbage length is not read: the rest of the file is all there is)
                body = memoryview(fh.read(min(length, size - offset)))
                if op in (0x02, 0x0F) and len(body) == length:   # footer, data end
                    return None
                if op == 0x06:
                    records, cut = self._chunk_records(body, length, offset)
                else:
                    cut = (None if len(body) == length else
                           f'record at byte {offset} cut off after {len(body)} of {length} bytes')
                    records = [(op, body)] if cut is None else []
                for rop, rec in records:
                    try:
                        got = self._record(rop, rec, schemas, channels, wanted)
                    except (struct.error, UnicodeDecodeError):
                        return f'malformed record (opcode {rop:#04x}) at or in byte {offset}'
                    if got is not None:
                        yield got
                if cut is not None and op == 0x06 and len(body) == length:
                    self._skipped.append((file, cut))   # damage inside a whole chunk
                elif cut is not None:
                    return cut

    def _summary_channels(self, fh: Any, size: int, schemas: dict[int, str],
                          channels: dict[int, _SalvagedConnection]) -> None:
        """Take in the schema and channel records of the file's summary, where its footer
        is intact (best effort: anything unreadable is left to the scan)."""
        footer = len(_MCAP_MAGIC) + _MCAP_RECORD_HEAD.size + _MCAP_FOOTER.size
        if size < footer + len(_MCAP_MAGIC):
            return
        fh.seek(size - footer)
        op, length = _MCAP_RECORD_HEAD.unpack(fh.read(_MCAP_RECORD_HEAD.size))
        start, offsets, _ = _MCAP_FOOTER.unpack(fh.read(_MCAP_FOOTER.size))
        end = offsets or size - footer
        if op != 0x02 or length != _MCAP_FOOTER.size or not 0 < start < end <= size - footer:
            return
        fh.seek(start)
        data = memoryview(fh.read(end - start))
        pos = 0
        while pos + _MCAP_RECORD_HEAD.size <= len(data):
            rop, rlen = _MCAP_RECORD_HEAD.unpack_from(data, pos)
            body = data[pos + _MCAP_RECORD_HEAD.size:pos + _MCAP_RECORD_HEAD.size + rlen]
            if len(body) < rlen:
                return
            if rop in (0x03, 0x04):
                try:
                    self._record(rop, body, schemas, channels, None)
                except (struct.error, UnicodeDecodeError):
                    return
            pos += _MCAP_RECORD_HEAD.size + rlen

    @staticmethod
    def _chunk_records(body: memoryview, length: int, offset: int) -> tuple[list, 'str | None']:
        """The records of a chunk that arrived whole, and the damage if it did not."""
        try:
            _, _, size, crc = _MCAP_CHUNK_HEAD.unpack_from(body, 0)
            pos = _MCAP_CHUNK_HEAD.size
            (n,) = struct.unpack_from('<I', body, pos)
            compression = bytes(body[pos + 4:pos + 4 + n]).decode()
            pos += 4 + n
            (csize,) = struct.unpack_from('<Q', body, pos)
            data = memoryview(_decompress_partial(body[pos + 8:pos + 8 + csize], compression))
        except Exception as err:  # struct, UTF-8 and the decompressors' own errors
            return [], f'chunk at byte {offset} unreadable: {one_line(err)}'
        whole = len(body) == length and len(data) == size
        if whole and crc and zlib.crc32(data) != crc:
            return [], f'chunk at byte {offset} fails its checksum'
        records, pos = [], 0
        while pos + _MCAP_RECORD_HEAD.size <= len(data):
            op, rlen = _MCAP_RECORD_HEAD.unpack_from(data, pos)
            end = pos + _MCAP_RECORD_HEAD.size + rlen
            if end > len(data):
                break
            records.append((op, data[pos + _MCAP_RECORD_HEAD.size:end]))
            pos = end
        if whole and pos == len(data):
            return records, None
        if len(body) == length:
            return records, f'chunk at byte {offset} holds a damaged record'
        return records, f'chunk at byte {offset} cut off after {len(body)} of {length} bytes'

    def _record(self, op: int, rec: memoryview, schemas: dict[int, str],
                channels: dict[int, _SalvagedConnection],
                wanted: 'set[int] | None') -> 'tuple[Any, int, memoryview] | None':
        """Take in a schema or channel record; give a message record's contents."""
        if op == 0x05 and len(rec) >= _MCAP_MESSAGE_HEAD.size:
            cid, _, log_time, _ = _MCAP_MESSAGE_HEAD.unpack_from(rec, 0)
            conn = channels.get(cid)
            if conn is None or (wanted is not None and conn.id not in wanted):
                return None
            return conn, int(log_time), rec[_MCAP_MESSAGE_HEAD.size:]
        if op == 0x03:
            (sid,) = struct.unpack_from('<H', rec, 0)
            schemas[sid] = _mcap_string(rec, 2)[0]
        elif op == 0x04:
            cid, sid = struct.unpack_from('<HH', rec, 0)
            topic = _mcap_string(rec, 4)[0]
            key = (topic, schemas.get(sid, ''))
            conn = self._conns.get(key)
            if conn is None:
                conn = self._conns[key] = _SalvagedConnection(len(self._conns), *key)
            channels[cid] = conn
        return None


def _mcap_string(buf: memoryview, pos: int) -> tuple[str, int]:
    """An MCAP string (uint32 length, UTF-8) at ``pos``; the text and the position after it."""
    (n,) = struct.unpack_from('<I', buf, pos)
    return bytes(buf[pos + 4:pos + 4 + n]).decode(), pos + 4 + n
