# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""One entry point for every kind of event recording: :func:`open_recording`.

The offline commands take a path and need packets and the sensor size; what
the path is decides how it is read:

- a file whose name ends in ``.raw``: a Metavision RAW file (EVT 2.0, 2.1 or 3.0,
  :mod:`~helixtrack_ros.io.raw_file`);
- a file ending in ``.dat``: a Prophesee DAT file of CD events
  (:mod:`~helixtrack_ros.io.dat_file`);
- a file ending in ``.npz``: numpy arrays of decoded events
  (:mod:`~helixtrack_ros.io.npz_events`, as ``helixtrack events`` writes them);
- a file ending in ``.csv`` or ``.txt``: decoded events as text, one per line
  (:mod:`~helixtrack_ros.io.text_events`: Metavision's CSV, the UZH-RPG layout);
- a file ending in ``.hdf5`` or ``.h5``: events in HDF5 (Metavision's event files, DSEC,
  M3ED: :mod:`~helixtrack_ros.io.hdf5_events`; ``topic`` names the dataset or group);
- a file ending in ``.aedat4``: iniVation's AEDAT 4 (:mod:`~helixtrack_ros.io.aedat4_events`;
  ``topic`` is the event stream's number);
- a file ending in ``.bag``: a ROS 1 bag (:mod:`~helixtrack_ros.io.ros1_bags`);
- a directory, or a file ending in ``.mcap`` or ``.db3``: a rosbag2
  (:mod:`~helixtrack_ros.io.bags`).

In a bag the event topic is the one of type EventPacket or EventArray (of
event_array_msgs, or of dvs_msgs / prophesee_event_msgs:
:mod:`~helixtrack_ros.io.event_structs`); it needs naming only when there
are several (then the error lists them). The writers for simulated scenes
are here too (:func:`open_event_sink`).
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.io.sink_formats import SINK_FORMATS

#: Kinds of recording :func:`open_recording` reads.
KINDS = ('raw', 'dat', 'npz', 'text', 'hdf5', 'aedat4', 'rosbag2', 'rosbag1')
#: The kinds that are event files, not bags of messages.
FILE_KINDS = KINDS[:6]


class RecordingError(ValueError):
    """A recording that cannot be used: unknown kind, no or several event topics."""


@dataclass(frozen=True)
class Recording:
    """An opened recording: what it is, its event topic and sensor size, and its packets.

    ``count`` is the number of packets when the kind knows it (bags), else None;
    ``width``/``height`` are None when no packet could be looked at (an empty
    topic) or a file of events holds none (and no size). Iterate :meth:`packets` for
    the :class:`EventPacketRecord` items.
    """

    path: Path
    kind: str
    topic: str | None
    msgtype: str
    count: int | None
    width: int | None
    height: int | None

    def packets(self, on_notice: 'Callable[[str], None] | None' = None,
                on_corrupt: 'Callable[[str], None] | None' = None
                ) -> Iterator[EventPacketRecord]:
        """Stream the packets (the reader's errors pass through: see :func:`open_recording`).

        ``on_notice`` gets one line for each repair made on the way (a ``.raw``
        file's words read on after bytes inserted or lost, a DAT file's damaged
        or unsorted times, an EventArray's events of an absurd time dropped or its
        unset sensor size taken from the stream); ``on_corrupt`` one
        line for each bag message that does not deserialize, which is then
        skipped (without it, such a message raises).
        """
        if self.kind == 'raw':
            from helixtrack_ros.io.raw_file import iter_raw_packets
            return iter_raw_packets(self.path, on_notice=on_notice)
        if self.kind == 'dat':
            from helixtrack_ros.io.dat_file import iter_dat_packets
            return iter_dat_packets(self.path, on_notice=on_notice)
        if self.kind == 'npz':
            from helixtrack_ros.io.npz_events import iter_npz_packets
            return iter_npz_packets(self.path)
        if self.kind == 'text':
            from helixtrack_ros.io.text_events import iter_text_packets
            return iter_text_packets(self.path, on_notice=on_notice)
        if self.kind == 'hdf5':
            from helixtrack_ros.io.hdf5_events import iter_hdf5_packets
            return iter_hdf5_packets(self.path, self.topic, on_notice=on_notice)
        if self.kind == 'aedat4':
            from helixtrack_ros.io.aedat4_events import iter_aedat4_packets
            return iter_aedat4_packets(self.path, self.topic, on_notice=on_notice)
        from helixtrack_ros.io.event_structs import sized_records
        if self.kind == 'rosbag1':
            from helixtrack_ros.io.ros1_bags import iter_ros1_event_packets
            bag = iter_ros1_event_packets(self.path, self.topic, on_corrupt, on_notice)
        else:
            from helixtrack_ros.io.bags import iter_event_packets
            bag = iter_event_packets(self.path, self.topic, on_corrupt, on_notice)
        return sized_records(bag, repr(self.topic), on_notice)


#: suffixes of compressed files (a .csv.gz, a .mcap.zstd)
_COMPRESSED = ('.gz', '.xz', '.bz2', '.zst', '.zstd', '.lz4', '.zip')


def recording_kind(path: 'str | Path') -> str:
    """One of :data:`KINDS` by the path (see the module docstring)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f'recording not found: {path}')
    suffix = path.suffix.lower()
    if path.is_dir() and _is_chunk_dir(path):
        return 'npz'
    if path.is_dir() or suffix in ('.mcap', '.db3'):
        return 'rosbag2'
    if suffix == '.raw':
        return 'raw'
    if suffix in ('.dat', '.npz'):
        return suffix[1:]
    if suffix in ('.csv', '.txt'):
        return 'text'
    if suffix == '.bag':
        return 'rosbag1'
    if suffix in ('.hdf5', '.h5', '.he5'):
        return 'hdf5'
    if suffix == '.aedat4':
        return 'aedat4'
    if suffix in _COMPRESSED:   # (named no kind: "not a known recording" alone; review)
        raise RecordingError(f'{path}: a compressed file ({suffix}): decompress it first, '
                             f'then give the {path.stem} it holds')
    raise RecordingError(f'{path}: not a known recording (expected a .raw, .dat, .npz, .csv or '
                         '.txt file, a ROS 1 .bag, or a rosbag2 directory, .mcap or .db3 file)')


def _is_chunk_dir(path: Path) -> bool:
    """Whether a directory holds the chunk files ``helixtrack events --out DIR`` writes
    and no bag (before, ``track DIR`` said "not a rosbag2 directory"; formats review)."""
    from helixtrack_ros.io.npz_events import chunk_files
    bag = (path / 'metadata.yaml').exists() or any(path.glob('*.mcap')) or any(
        path.glob('*.db3'))
    return not bag and bool(chunk_files(path))


def recording_problem(path: 'str | Path') -> str | None:
    """Why ``path`` is no recording at all, by its name and files without reading them
    (missing, an unknown kind, a directory that is no rosbag2); None when it may be one."""
    from helixtrack_ros.io.bags import resolve_bag_path
    try:
        if recording_kind(path) == 'rosbag2':
            resolve_bag_path(path)
    except (FileNotFoundError, ValueError) as exc:
        return str(exc)
    return None


def choose_topic(path: Path, topics: dict[str, str], topic: str | None) -> str:
    """The event topic: ``topic`` if given, else the only one of an event type."""
    from helixtrack_ros.io.ros_types import READABLE_EVENT_TYPES
    if topic is not None:
        return topic
    events = sorted(t for t, m in topics.items() if m in READABLE_EVENT_TYPES)
    if len(events) == 1:
        return events[0]
    if not events:
        avail = ', '.join(f'{t} ({m})' for t, m in sorted(topics.items())) or 'none'
        raise RecordingError(f'no event topic (EventPacket or EventArray) in {path}; '
                             f'topics: {avail}')
    raise RecordingError(f'{path} has {len(events)} event topics: {", ".join(events)}; '
                         'choose one with --topic')


def open_recording(path: 'str | Path', topic: str | None = None) -> Recording:
    """Open a recording of any kind, find its event topic and sensor size.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.raw``, ``.dat``, ``.npz``, ``.csv``, ``.txt``, ``.hdf5``/``.h5`` or ``.aedat4``
        file, a ROS 1 ``.bag``, a rosbag2 directory or ``.mcap``/``.db3`` file.
    topic : str, optional
        The event topic of a bag (an HDF5 file's dataset or group, an AEDAT 4 file's
        event stream number); needed only when it has several.

    Raises
    ------
    FileNotFoundError
        If the path does not exist.
    ValueError
        One line: an unknown kind, a bad RAW header
        (:class:`~helixtrack_ros.io.raw_file.RawFileError`), no event topic or
        several, a topic missing or of another type, a bag that cannot be read.
    TruncatedBagError
        (a ValueError) An MCAP bag cut short before its event topic's first message.
    """
    path = Path(path)
    kind = recording_kind(path)
    if kind == 'raw':
        from helixtrack_ros.io.raw_file import read_raw_header
        head = read_raw_header(path)
        return Recording(path, kind, None, f'raw {head.encoding}', None, head.width, head.height)
    if kind == 'dat':
        from helixtrack_ros.io.dat_file import read_dat_header
        dat = read_dat_header(path)
        return _decoded_events(path, kind, 'dat cd', dat.width, dat.height)
    if kind == 'npz':
        from helixtrack_ros.io.npz_events import npz_size
        width, height = npz_size(path)
        return _decoded_events(path, kind, 'npz events', width, height)
    if kind == 'text':
        from helixtrack_ros.io.text_events import read_text_events
        text = read_text_events(path)
        return _decoded_events(path, kind, 'text events', text.width, text.height)
    if kind == 'hdf5':
        from helixtrack_ros.io.hdf5_events import read_hdf5_layout
        lay = read_hdf5_layout(path, topic)
        return _decoded_events(path, kind, 'hdf5 events', lay.width, lay.height, lay.place)
    if kind == 'aedat4':
        from helixtrack_ros.io.aedat4_events import aedat4_stream
        sid, width, height = aedat4_stream(path, topic)
        return _decoded_events(path, kind, 'aedat4 events', width, height, str(sid))
    if kind == 'rosbag1':
        from helixtrack_ros.io.ros1_bags import ros1_topics
        info = ros1_topics(path)
        name = choose_topic(path, {t: m for t, (m, _) in info.items()}, topic)
        msgtype, count = info.get(name, ('', 0))
    else:
        name, msgtype, count = _rosbag2_topic(path, topic)
    rec = Recording(path, kind, name, msgtype, count, None, None)
    if count:
        first = next(iter(_first_packet(rec)), None)
        if first is not None:
            rec = Recording(path, kind, name, msgtype, count, int(first.width),
                            int(first.height))
    return rec


def _decoded_events(path: Path, kind: str, what: str, width: int, height: int,
                    place: 'str | None' = None) -> Recording:
    """The recording of a file of decoded events (sent as ``mono`` packets), refused in one
    line when its sensor is larger than the ``mono`` decoder takes (before, each packet
    was refused: a RAW file's header is refused at once; review)."""
    from helixtrack_ros.codecs.mono import MONO_MAX_SIZE
    if max(width, height) > MONO_MAX_SIZE:
        raise RecordingError(f'{path}: a sensor of {width} x {height} pixels is larger than '
                             f'the {MONO_MAX_SIZE} x {MONO_MAX_SIZE} this reader takes')
    return Recording(path, kind, place, what, None, width or None, height or None)


def _rosbag2_topic(path: Path, topic: str | None) -> tuple[str, str, int]:
    """(topic, type, message count) of a rosbag2's event topic.

    An MCAP bag cut short before its event topic's first message (or before
    any topic) gets the driver's topic and a count of 0: reading it then
    raises :class:`~helixtrack_ros.io.mcap_salvage.TruncatedBagError`, which
    says what happened.
    """
    from helixtrack_ros.io.bags import count_messages, list_topics, resolve_bag_path
    from helixtrack_ros.io.mcap_salvage import TruncatedBagError, mcap_files_if_damaged
    from helixtrack_ros.io.ros_types import DEFAULT_EVENT_TOPIC, READABLE_EVENT_TYPES
    topics = list_topics(path)
    try:
        name = choose_topic(path, topics, topic)
    except RecordingError:
        if topic is not None or topics or not mcap_files_if_damaged(resolve_bag_path(path)):
            raise
        name = DEFAULT_EVENT_TOPIC
    try:
        count = count_messages(path, name, READABLE_EVENT_TYPES)
    except TruncatedBagError:
        count = 0
    return name, topics.get(name, ''), count


def _first_packet(rec: Recording) -> list:
    """The first readable packet of a bag topic (empty if the bag ends before one; corrupt
    messages are said when the packets are read)."""
    from helixtrack_ros.io.mcap_salvage import TruncatedBagError
    it = rec.packets(on_corrupt=lambda line: None)
    try:
        return [next(it)]
    except (StopIteration, TruncatedBagError):
        return []
    finally:
        it.close()


class _RawSink:
    """A ``.raw`` writer with the bag writer's ``write`` (stamp and seq are not stored)."""

    def __init__(self, path: Path, encoding: str, width: int, height: int) -> None:
        from helixtrack_ros.io.raw_file import RawFileWriter
        self._writer = RawFileWriter(path, encoding, width, height)

    def __enter__(self) -> '_RawSink':  # noqa: D105
        self._writer.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:  # noqa: D105
        self._writer.__exit__(*exc)

    def write(self, stamp_ns: int, seq: int, payload: bytes, **_: Any) -> None:
        """Append the packet's words."""
        self._writer.write(payload)


def event_sink_path(out_dir: Path, fmt: str) -> Path:
    """Where :func:`open_event_sink` writes ``fmt``: ``out_dir/events`` or ``events.raw``."""
    if fmt not in SINK_FORMATS:
        raise ValueError(f'format must be one of {", ".join(SINK_FORMATS)}, got {fmt!r}')
    return out_dir / ('events' if fmt == 'rosbag2' else 'events.raw')


def open_event_sink(out_dir: Path, fmt: str, width: int, height: int) -> tuple[Path, Any, Any]:
    """Where and how a simulated stream is written: (path, writer, encoder).

    ``fmt``: ``'rosbag2'`` (``out_dir/events``, mcap, EVT 3.0 EventPackets),
    ``'raw-evt3'``, ``'raw-evt2'`` or ``'raw-evt21'`` (``out_dir/events.raw``). The writer is a
    context manager with ``write(stamp_ns, seq, payload, width=, height=)``;
    the encoder a fresh stateful one of the format's encoding.
    """
    from helixtrack_ros.codecs.evt2_encoder import Evt2Encoder
    from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
    path = event_sink_path(out_dir, fmt)
    if fmt == 'rosbag2':
        from helixtrack_ros.io.bag_writers import EventBagWriter
        return path, EventBagWriter(path), Evt3Encoder()
    from helixtrack_ros.codecs.evt21_encoder import Evt21Encoder
    encoding = fmt.split('-')[1]
    encoder = {'evt3': Evt3Encoder, 'evt2': Evt2Encoder, 'evt21': Evt21Encoder}[encoding]()
    return path, _RawSink(path, encoding, width, height), encoder
