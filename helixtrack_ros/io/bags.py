# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""rosbag2 input and output with ``rosbags`` (no ROS installation needed).

Reading: :func:`iter_event_packets` streams ``event_camera_msgs/msg/EventPacket``
messages of one topic from a sqlite3 or mcap bag (a bag directory, or a single
``.db3``/``.mcap`` file). The EventPacket type is registered from its message
definition here, so bags that do not store the definition (e.g. the sqlite3
bags of older rosbag2 versions) read as well. :func:`iter_messages` reads any
topic of standard message types (used to read back results).

Writing: :class:`EventBagWriter` writes EventPackets (e.g. simulated streams);
:class:`ResultBagWriter` writes the tracker outputs with the same topics and
types as the node publishes.

Errors: a missing path raises ``FileNotFoundError``; a bag that cannot be read,
a missing topic or a topic of the wrong type raise ``ValueError`` with a
one-line reason (listing the available topics where it helps). An MCAP file
cut short (a recorder killed before it wrote the footer and index) is read
record by record up to the damage; the readers then raise
:class:`TruncatedBagError` (a ``ValueError``) saying how many messages were
read and how to repair the file.
"""

from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
import re
import struct
from typing import Any
import zlib

import numpy as np
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from helixtrack_ros.io.event_packet_cdr import EVENT_PACKET_MSG, parse_event_packet

#: ROS type name of the event packet message.
EVENT_PACKET_TYPE = 'event_camera_msgs/msg/EventPacket'
#: Default topic of the metavision driver.
DEFAULT_EVENT_TOPIC = '/event_camera/events'

_STORAGES = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}
_NAME_RE = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')
_NS_PER_S = 1_000_000_000


@lru_cache(maxsize=1)
def typestore() -> Any:
    """Return the rosbags typestore (ROS 2 Kilted types + EventPacket), shared."""
    store = get_typestore(Stores.ROS2_KILTED)
    store.register(get_types_from_msg(EVENT_PACKET_MSG, EVENT_PACKET_TYPE))
    return store


@dataclass(frozen=True)
class EventPacketRecord:
    """One EventPacket read from a bag.

    Attributes
    ----------
    stamp_ns : int
        Header stamp [ns of ROS time].
    seq : int
        Packet sequence number.
    width, height : int
        Sensor size in pixels.
    encoding : str
        Payload encoding, e.g. ``'evt3'``.
    is_bigendian : bool
        Byte order of the payload words.
    time_base : int
        The message's time base (0 for EVT 3.0; ns for ``mono``).
    events : numpy.ndarray
        The payload bytes (uint8).
    log_time_ns : int
        Time at which the bag recorded the message [ns].
    """

    stamp_ns: int
    seq: int
    width: int
    height: int
    encoding: str
    is_bigendian: bool
    time_base: int
    events: np.ndarray
    log_time_ns: int


def _parse_event_packet(raw: 'bytes | memoryview', log_time_ns: int) -> EventPacketRecord:
    """Read a little-endian CDR EventPacket straight from its bytes (the payload not copied).

    :func:`~helixtrack_ros.io.event_packet_cdr.parse_event_packet`; anything
    unexpected raises (``ValueError``, ``struct.error``, ...) and the caller
    falls back to the generic deserializer.
    """
    f = parse_event_packet(raw)
    return EventPacketRecord(
        stamp_ns=f.stamp_ns, seq=f.seq, width=f.width, height=f.height, encoding=f.encoding,
        is_bigendian=f.is_bigendian, time_base=f.time_base, events=f.events,
        log_time_ns=int(log_time_ns))


def _resolve_bag_path(bag_path: 'str | Path') -> Path:
    path = Path(bag_path)
    if not path.exists():
        raise FileNotFoundError(f'bag not found: {path}')
    if path.is_dir() and not (path / 'metadata.yaml').exists():
        files = sorted(path.glob('*.mcap')) + sorted(path.glob('*.db3'))
        if len(files) != 1:
            raise FileNotFoundError(
                f'{path} is not a rosbag2 directory: no metadata.yaml and '
                f'{len(files)} .mcap/.db3 files')
        path = files[0]
    return path


def _open(bag_path: 'str | Path') -> Reader:
    """Open a bag with rosbags; an MCAP bag cut short opens as a :class:`_McapSalvage`."""
    path = _resolve_bag_path(bag_path)
    try:
        reader = Reader(path)
        reader.open()
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as err:  # rosbags, sqlite3, yaml and mcap raise many types
        files = _mcap_files_if_damaged(path)
        if files:   # a recording cut short: read what precedes the damage
            return _McapSalvage(path, files)
        raise ValueError(f'cannot read bag {path}: {_one_line(err)}') from err
    return reader


def _one_line(err: BaseException) -> str:
    text = ' '.join(str(err).split())
    return f'{type(err).__name__}: {text}' if text else type(err).__name__


class TruncatedBagError(ValueError):
    """An MCAP file of the bag ends early (e.g. the recorder was killed).

    Raised by the readers after every intact message before the damage was
    given; ``messages_read`` says how many (of the topics read), ``damage``
    where and what the damage is, ``file`` which file holds it.
    """

    def __init__(self, file: Path, damage: str, messages_read: int, topic: str) -> None:
        self.file = Path(file)
        self.damage = damage
        self.messages_read = int(messages_read)
        self.topic = topic
        super().__init__(
            f'{self.file} is damaged ({damage}); read the {self.messages_read} intact '
            f'messages on {topic} before it. {repair_hint(self.file)}')


def repair_hint(file: 'str | Path') -> str:
    """One sentence on how to repair a truncated MCAP file with the mcap CLI."""
    file = Path(file)
    return (f'To repair it: mcap recover {file} -o {file.stem}_recovered.mcap '
            '(the mcap CLI, github.com/foxglove/mcap)')


_MCAP_MAGIC = b'\x89MCAP0\r\n'
_MCAP_RECORD_HEAD = struct.Struct('<BQ')          # opcode, record length
_MCAP_CHUNK_HEAD = struct.Struct('<QQQI')       # start, end, uncompressed size, crc
_MCAP_MESSAGE_HEAD = struct.Struct('<HIQQ')     # channel, sequence, log time, publish time


def _mcap_files_if_damaged(path: Path) -> list[Path]:
    """The MCAP files of a bag (file or directory), in order, if one lacks its end magic.

    Empty when none does: then the bag is not truncated MCAP (and is left to rosbags).
    """
    if path.is_dir():
        def order(p: Path) -> tuple:
            m = re.search(r'(\d+)$', p.stem)
            return (p.stem[:m.start()] if m else p.stem, int(m.group(1)) if m else -1)
        files = sorted(path.glob('*.mcap'), key=order)
    else:
        files = [path] if path.suffix == '.mcap' else []
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


class _McapSalvage:
    """Reads the intact records of MCAP files that end early, in file order.

    rosbags needs an MCAP file's footer and summary; a recording whose
    recorder died has neither. This scans the records from the start
    (chunks included, a cut-off last chunk as far as it decodes) and stops
    at the first record that is incomplete or fails its checksum, keeping
    where in ``damage`` and ``damaged_file``. Offers the few ``Reader``
    members this module uses: ``path``, ``connections``, ``messages``, ``close``.
    """

    def __init__(self, path: Path, files: list[Path]) -> None:
        self.path = path
        self.files = files
        self.damage: str | None = None
        self.damaged_file: Path | None = None
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
        for file in self.files:
            damage = yield from self._scan_file(file, wanted)
            if damage is not None:
                self.damage, self.damaged_file = damage, file
                return

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
                if cut is not None:
                    return cut

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
            return [], f'chunk at byte {offset} unreadable: {_one_line(err)}'
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


def _topic_types(reader: Reader) -> dict[str, str]:
    return {c.topic: c.msgtype for c in reader.connections}


def _require_topic(reader: Reader, topic: str, msgtype: 'str | None' = None) -> list:
    topics = _topic_types(reader)
    if topic not in topics:
        _raise_if_damaged(reader, 0, topic)   # cut before the topic's first message
        avail = ', '.join(f'{t} ({m})' for t, m in sorted(topics.items())) or 'none'
        raise ValueError(f'topic {topic!r} not in bag {reader.path}; available: {avail}')
    conns = [c for c in reader.connections if c.topic == topic]
    if msgtype is not None and any(c.msgtype != msgtype for c in conns):
        raise ValueError(f'topic {topic!r} has type {topics[topic]}, expected {msgtype}')
    return conns


def list_topics(bag_path: 'str | Path') -> dict[str, str]:
    """Return the topics of a bag and their message types.

    Parameters
    ----------
    bag_path : str or pathlib.Path
        Bag directory, or a ``.db3``/``.mcap`` file.

    Returns
    -------
    dict of str to str
        Topic name -> ROS message type.
    """
    reader = _open(bag_path)
    try:
        return dict(sorted(_topic_types(reader).items()))
    finally:
        reader.close()


def count_messages(bag_path: 'str | Path', topic: str = DEFAULT_EVENT_TOPIC,
                   msgtype: 'str | None' = None) -> int:
    """Return the number of messages of one topic (from the bag's index).

    For an MCAP bag cut short (no index), the intact messages before the
    damage, counted by reading them.

    Parameters
    ----------
    bag_path : str or pathlib.Path
        Bag directory, or a ``.db3``/``.mcap`` file.
    topic : str
        Topic name.
    msgtype : str, optional
        The type the topic must have (``ValueError`` if it has another).

    Returns
    -------
    int
        Message count.
    """
    reader = _open(bag_path)
    try:
        return int(sum(c.msgcount for c in _require_topic(reader, topic, msgtype)))
    finally:
        reader.close()


def _stamp_ns(header: Any) -> int:
    return int(header.stamp.sec) * _NS_PER_S + int(header.stamp.nanosec)


def iter_event_packets(bag_path: 'str | Path',
                       topic: str = DEFAULT_EVENT_TOPIC) -> Iterator[EventPacketRecord]:
    """Stream the EventPacket messages of one topic, in recording order.

    Parameters
    ----------
    bag_path : str or pathlib.Path
        Bag directory (sqlite3 or mcap), or a ``.db3``/``.mcap`` file.
    topic : str
        Topic of ``event_camera_msgs/msg/EventPacket`` messages.

    Yields
    ------
    EventPacketRecord
        One record per message.

    Raises
    ------
    FileNotFoundError
        If the bag does not exist.
    ValueError
        If the bag cannot be read, the topic is missing or has another type,
        or a message cannot be deserialized.
    TruncatedBagError
        (a ValueError) After the last intact message of an MCAP bag cut short.
    """
    reader = _open(bag_path)
    try:
        conns = _require_topic(reader, topic, EVENT_PACKET_TYPE)
        store = typestore()
        n = 0
        it = reader.messages(connections=conns)
        while True:
            try:
                item = next(it)
            except StopIteration:
                break
            except Exception as err:
                raise ValueError(f'cannot read message {n} of {topic!r} in {reader.path}: '
                                 f'{_one_line(err)}') from err
            _, log_time_ns, raw = item
            n += 1
            try:
                record = _parse_event_packet(raw, log_time_ns)
            except (ValueError, struct.error, IndexError, UnicodeDecodeError):
                record = None   # the generic deserializer decides (and names the problem)
            if record is not None:
                yield record
                continue
            try:
                msg = store.deserialize_cdr(raw, EVENT_PACKET_TYPE)
            except Exception as err:
                raise ValueError(f'corrupt EventPacket {n - 1} on {topic!r} in {reader.path}: '
                                 f'{_one_line(err)}') from err
            yield EventPacketRecord(
                stamp_ns=_stamp_ns(msg.header), seq=int(msg.seq), width=int(msg.width),
                height=int(msg.height), encoding=str(msg.encoding),
                is_bigendian=bool(msg.is_bigendian), time_base=int(msg.time_base),
                events=np.asarray(msg.events, dtype=np.uint8), log_time_ns=int(log_time_ns))
        _raise_if_damaged(reader, n, topic)
    finally:
        reader.close()


def _raise_if_damaged(reader: Any, messages_read: int, topics: str) -> None:
    """Raise :class:`TruncatedBagError` when ``reader`` stopped at damage."""
    damage = getattr(reader, 'damage', None)
    if damage is not None:
        raise TruncatedBagError(reader.damaged_file, damage, messages_read, topics)


def iter_messages(bag_path: 'str | Path',
                  topics: 'Iterable[str] | None' = None) -> Iterator[tuple[str, int, Any]]:
    """Stream deserialized messages of standard types (and EventPacket).

    Parameters
    ----------
    bag_path : str or pathlib.Path
        Bag directory, or a ``.db3``/``.mcap`` file.
    topics : iterable of str, optional
        Topics to read; all topics when omitted.

    Yields
    ------
    tuple of (str, int, object)
        Topic, log time [ns] and the rosbags message object.

    Raises
    ------
    ValueError
        If a topic is missing, or a type is unknown to the typestore.
    TruncatedBagError
        (a ValueError) After the last intact message of an MCAP bag cut short.
    """
    reader = _open(bag_path)
    try:
        if topics is None:
            conns = list(reader.connections)
        else:
            conns = [c for t in dict.fromkeys(topics) for c in _require_topic(reader, t)]
        store = typestore()
        for c in conns:
            if c.msgtype not in store.types:
                raise ValueError(f'unknown message type {c.msgtype} on {c.topic!r}')
        n = 0
        for conn, log_time_ns, raw in reader.messages(connections=conns):
            try:
                msg = store.deserialize_cdr(raw, conn.msgtype)
            except Exception as err:
                raise ValueError(f'corrupt {conn.msgtype} on {conn.topic!r}: '
                                 f'{_one_line(err)}') from err
            n += 1
            yield conn.topic, int(log_time_ns), msg
        _raise_if_damaged(reader, n, ', '.join(sorted({c.topic for c in conns})) or 'no topic')
    finally:
        reader.close()


_MCAP_MESSAGE = struct.Struct('<BQHIQQ')   # opcode, record length, channel, seq, times


def _fast_mcap(storage: Any) -> bool:
    """True for the rosbags MCAP writer whose per-message bookkeeping is known here."""
    chunk = getattr(storage, 'chunk', None)
    return (type(storage).__name__ == 'McapWriter' and hasattr(storage, 'close_chunk')
            and isinstance(getattr(storage, 'channel_stats', None), dict)
            and all(hasattr(chunk, a) for a in ('bio', 'msgs', 'message_start_time',
                                                 'message_end_time')))


def _mcap_write(storage: Any, cid: int, ts: int, data: 'bytes | memoryview') -> None:
    """The same bytes and bookkeeping as rosbags' ``McapWriter.write``, in one pack.

    (rosbags writes a message record in eight small writes; at nine result
    messages per packet that was the largest cost of ``helixtrack track``
    besides the tracking.)
    """
    storage.message_start_time = min(ts, storage.message_start_time)
    storage.message_end_time = max(ts, storage.message_end_time)
    storage.channel_stats[cid] += 1
    chunk = storage.chunk
    chunk.message_start_time = min(ts, chunk.message_start_time)
    chunk.message_end_time = max(ts, chunk.message_end_time)
    bio = chunk.bio
    chunk.msgs[cid].append((ts, bio.tell()))
    # message record 0x05: channel id, sequence 0, log time, publish time, data
    bio.write(_MCAP_MESSAGE.pack(0x05, 22 + len(data), cid, 0, ts, ts))
    bio.write(data)
    if bio.tell() > 2**20:
        storage.close_chunk()


class _BagWriterBase:
    """Owns a rosbags Writer and lazily created connections."""

    def __init__(self, path: 'str | Path', storage: str) -> None:
        if storage not in _STORAGES:
            raise ValueError(f'storage must be one of {", ".join(_STORAGES)}, got {storage!r}')
        self.path = Path(path)
        if self.path.exists():
            raise FileExistsError(f'output bag exists already: {self.path}')
        self._writer = Writer(self.path, version=Writer.VERSION_LATEST,
                              storage_plugin=_STORAGES[storage])
        self._conns: dict[str, Any] = {}
        self._store = typestore()
        self._open = False
        self._path_kind: str | None = None

    def open(self) -> None:
        """Create the bag (called by ``with``)."""
        if not self._open:
            self._writer.open()
            self._open = True

    def close(self) -> None:
        """Finish the bag and write its metadata (called by ``with``)."""
        if self._open:
            self._writer.close()
            self._open = False

    def __enter__(self):  # noqa: D105
        self.open()
        return self

    def __exit__(self, *exc) -> None:  # noqa: D105
        self.close()

    def _write(self, topic: str, msgtype: str, msg: Any, log_time_ns: int) -> None:
        self._write_raw(topic, msgtype, self._store.serialize_cdr(msg, msgtype), log_time_ns)

    def _write_raw(self, topic: str, msgtype: str, data: 'bytes | memoryview',
                   log_time_ns: int) -> None:
        if not self._open:
            raise ValueError(f'bag {self.path} is not open (use it in a with block)')
        conn = self._conns.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, msgtype, typestore=self._store)
            self._conns[topic] = conn
        w = self._writer
        if self._path_kind is None:
            self._path_kind = self._choose_path()
        kind = self._path_kind
        if kind == 'writer':
            w.write(conn, int(log_time_ns), data)
            return
        # what Writer.write does, without its check that the connection is one of its
        # own (a list search comparing every field; ours always is), and for MCAP the
        # message record in one write
        ts = int(log_time_ns)
        if kind == 'mcap':
            _mcap_write(w.storage, conn.id, ts, data)
        else:
            w.storage.write(conn, ts, data)
        w.counts[conn.id] += 1
        w.min_timestamp = min(ts, w.min_timestamp)
        w.max_timestamp = max(ts, w.max_timestamp)

    def _choose_path(self) -> str:
        """How to write a message: rosbags' Writer.write, or straight to its storage."""
        w = self._writer
        storage = getattr(w, 'storage', None)
        if (storage is None or not isinstance(getattr(w, 'counts', None), dict)
                or not isinstance(getattr(w, 'min_timestamp', None), int)
                or not isinstance(getattr(w, 'max_timestamp', None), int)
                or getattr(getattr(w, 'compression_mode', None), 'name', '') == 'MESSAGE'):
            return 'writer'
        return 'mcap' if _fast_mcap(storage) else 'storage'

    def _header(self, stamp_ns: int, frame_id: str) -> Any:
        stamp_ns = int(stamp_ns)
        if stamp_ns < 0:
            raise ValueError(f'stamp_ns must be >= 0, got {stamp_ns}')
        t = self._store.types['builtin_interfaces/msg/Time']
        h = self._store.types['std_msgs/msg/Header']
        return h(stamp=t(sec=stamp_ns // _NS_PER_S, nanosec=stamp_ns % _NS_PER_S),
                 frame_id=frame_id)


class EventBagWriter(_BagWriterBase):
    """Write EventPacket messages to a new bag.

    Parameters
    ----------
    path : str or pathlib.Path
        Bag directory to create (must not exist).
    topic : str
        Topic name.
    storage : str
        ``'mcap'`` or ``'sqlite3'``.

    Examples
    --------
    >>> with EventBagWriter('out_bag') as w:            # doctest: +SKIP
    ...     w.write(stamp_ns, seq, payload)
    """

    def __init__(self, path: 'str | Path', topic: str = DEFAULT_EVENT_TOPIC,
                 storage: str = 'mcap') -> None:
        super().__init__(path, storage)
        self.topic = topic

    def write(self, stamp_ns: int, seq: int, payload: 'bytes | np.ndarray', width: int = 1280,
              height: int = 720, encoding: str = 'evt3', frame_id: str = 'event_camera',
              time_base: int = 0, log_time_ns: 'int | None' = None) -> None:
        """Write one EventPacket (little-endian payload).

        Parameters
        ----------
        stamp_ns : int
            Header stamp [ns]; also the bag's log time unless ``log_time_ns`` is given.
        seq : int
            Packet sequence number.
        payload : bytes or numpy.ndarray
            Encoded events.
        width, height : int
            Sensor size.
        encoding : str
            Payload encoding.
        frame_id : str
            Header frame id.
        time_base : int
            Message time base (0 for EVT 3.0, ns for ``mono``).
        log_time_ns : int, optional
            Recording time [ns].
        """
        if isinstance(payload, np.ndarray):
            data = np.ascontiguousarray(payload, dtype=np.uint8).reshape(-1)
        else:
            data = np.frombuffer(bytes(payload), dtype=np.uint8)
        cls = self._store.types[EVENT_PACKET_TYPE]
        msg = cls(header=self._header(stamp_ns, frame_id), height=int(height), width=int(width),
                  seq=int(seq), time_base=int(time_base), encoding=str(encoding),
                  is_bigendian=False, events=data)
        self._write(self.topic, EVENT_PACKET_TYPE, msg,
                    stamp_ns if log_time_ns is None else log_time_ns)


class ResultBagWriter(_BagWriterBase):
    """Write the tracker outputs with the node's topics and types.

    Topics (``ns`` = namespace):

    - ``<ns>/rotors`` sensor_msgs/msg/JointState: name = rotor names,
      position = shaft phase [rad], velocity = shaft angular speed [rad/s],
      effort empty;
    - ``<ns>/<rotor>/rpm`` std_msgs/msg/Float64: shaft RPM;
    - ``<ns>/<rotor>/homography`` std_msgs/msg/Float64MultiArray: H (3x3,
      row-major; dims ``rows`` size 3 stride 9, ``cols`` size 3 stride 3);
    - ``/diagnostics`` diagnostic_msgs/msg/DiagnosticArray.

    Parameters
    ----------
    path : str or pathlib.Path
        Bag directory to create (must not exist).
    namespace : str
        Topic prefix.
    storage : str
        ``'mcap'`` or ``'sqlite3'``.
    frame_id : str
        Header frame id.
    """

    def __init__(self, path: 'str | Path', namespace: str = '/helixtrack',
                 storage: str = 'mcap', frame_id: str = 'event_camera') -> None:
        super().__init__(path, storage)
        ns = '/' + namespace.strip('/')
        self.namespace = '' if ns == '/' else ns
        self.frame_id = frame_id
        self._templates: dict[str, tuple[bytearray, int]] = {}

    def _template(self, msgtype: str, make: Any, n_doubles: int) -> tuple[bytearray, int]:
        """CDR bytes of a message whose only varying part is ``n_doubles`` float64s.

        Serialising through rosbags costs tens of microseconds per message;
        the rpm and homography messages have a fixed layout, so their bytes
        are made once and the numbers patched in (same bytes as rosbags).
        """
        tpl = self._templates.get(msgtype)
        if tpl is None:
            marker = np.arange(1, n_doubles + 1, dtype=np.float64) * 1.2345678901234567e-300
            raw = bytearray(self._store.serialize_cdr(make(marker), msgtype))
            offset = bytes(raw).find(marker.astype('<f8').tobytes())
            if offset < 0:
                raise RuntimeError(f'cannot locate the data of {msgtype} in its CDR bytes')
            tpl = (raw, offset)
            self._templates[msgtype] = tpl
        return tpl

    def _write_doubles(self, topic: str, msgtype: str, make: Any, values: np.ndarray,
                       log_time_ns: int) -> None:
        raw, offset = self._template(msgtype, make, values.size)
        out = bytearray(raw)
        out[offset:offset + 8 * values.size] = values.astype('<f8').tobytes()
        self._write_raw(topic, msgtype, out, log_time_ns)

    def write_packet_outputs(self, stamp_ns: int, rotors: 'list[dict]') -> None:
        """Write the outputs of one processed packet.

        Parameters
        ----------
        stamp_ns : int
            ROS time of the outputs [ns] (header stamp and log time).
        rotors : list of dict
            One dict per rotor with keys ``name``, ``phase_rad``,
            ``omega_rad_s`` (shaft angular speed), ``rpm_shaft`` and
            ``homography`` (3x3).
        """
        st = self._store.types
        names, phase, omega = [], [], []
        for r in rotors:
            name = str(r['name'])
            if not _NAME_RE.match(name):
                raise ValueError(f'rotor name {name!r} is not a valid ROS name token')
            hom = np.asarray(r['homography'], dtype=np.float64)
            if hom.shape != (3, 3):
                raise ValueError(f'homography of {name!r} must be 3x3, got shape {hom.shape}')
            names.append(name)
            phase.append(float(r['phase_rad']))
            omega.append(float(r['omega_rad_s']))
            base = f'{self.namespace}/{name}'
            self._write_doubles(f'{base}/rpm', 'std_msgs/msg/Float64', self._make_float64,
                                np.array([float(r['rpm_shaft'])]), stamp_ns)
            self._write_doubles(f'{base}/homography', 'std_msgs/msg/Float64MultiArray',
                                self._make_matrix, hom.reshape(9), stamp_ns)
        js = st['sensor_msgs/msg/JointState'](
            header=self._header(stamp_ns, self.frame_id), name=names,
            position=np.asarray(phase, np.float64), velocity=np.asarray(omega, np.float64),
            effort=np.empty(0, np.float64))
        self._write(f'{self.namespace}/rotors', 'sensor_msgs/msg/JointState', js, stamp_ns)

    def _make_float64(self, values: np.ndarray) -> Any:
        return self._store.types['std_msgs/msg/Float64'](data=float(values[0]))

    def _make_matrix(self, values: np.ndarray) -> Any:
        st = self._store.types
        dim = st['std_msgs/msg/MultiArrayDimension']
        layout = st['std_msgs/msg/MultiArrayLayout'](
            dim=[dim(label='rows', size=3, stride=9), dim(label='cols', size=3, stride=3)],
            data_offset=0)
        return st['std_msgs/msg/Float64MultiArray'](layout=layout, data=values.copy())

    def write_diagnostics(self, stamp_ns: int, statuses: 'list[dict]',
                          topic: str = '/diagnostics') -> None:
        """Write one DiagnosticArray on ``topic`` (``/diagnostics``; ``~/health``).

        Parameters
        ----------
        stamp_ns : int
            ROS time [ns].
        statuses : list of dict
            Each with ``name``, ``level`` (0 OK, 1 WARN, 2 ERROR, 3 STALE),
            ``message``, ``hardware_id`` and ``values`` (dict of str to str).
        """
        st = self._store.types
        kv = st['diagnostic_msgs/msg/KeyValue']
        out = []
        for s in statuses:
            level = int(s['level'])
            if level not in (0, 1, 2, 3):
                raise ValueError(f'diagnostic level must be 0, 1, 2 or 3, got {level}')
            out.append(st['diagnostic_msgs/msg/DiagnosticStatus'](
                level=level, name=str(s['name']), message=str(s.get('message', '')),
                hardware_id=str(s.get('hardware_id', '')),
                values=[kv(key=str(k), value=str(v)) for k, v in s.get('values', {}).items()]))
        msg = st['diagnostic_msgs/msg/DiagnosticArray'](
            header=self._header(stamp_ns, self.frame_id), status=out)
        self._write(topic, 'diagnostic_msgs/msg/DiagnosticArray', msg, stamp_ns)
