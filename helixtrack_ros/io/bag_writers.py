# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""rosbag2 writers with ``rosbags``: event packets in, tracker outputs out.

:class:`EventBagWriter` writes EventPackets (or EventArrays) such as
simulated streams; :class:`ResultBagWriter` writes the tracker outputs with
the topics and types the node publishes. Split from
:mod:`helixtrack_ros.io.bags` (one concept per module).
"""

from pathlib import Path
import re
import shutil
import struct
from typing import Any

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer

from helixtrack_ros.core.health_text import health_statuses
from helixtrack_ros.io.cdr_patch import PatchableCdr, sentinels
from helixtrack_ros.io.ros_types import (
    DEFAULT_EVENT_TOPIC,
    EVENT_PACKET_TYPE,
    EVENT_TYPES,
    message_typestore,
)

_STORAGES = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}
_NAME_RE = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')
_NS_PER_S = 1_000_000_000


_MCAP_MESSAGE = struct.Struct('<BQHIQQ')   # opcode, record length, channel, seq, times
#: the most distinct health messages kept serialized (every state of 8 rotors stays below)
_MAX_HEALTH_CACHED = 4096


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

    def __init__(self, path: 'str | Path', storage: str, single_file: bool = False) -> None:
        if storage not in _STORAGES:
            raise ValueError(f'storage must be one of {", ".join(_STORAGES)}, got {storage!r}')
        if single_file and storage != 'mcap':
            raise ValueError('a single-file bag must be MCAP')
        self.path = Path(path)
        if self.path.exists():
            raise FileExistsError(f'output bag exists already: {self.path}')
        # rosbags writes a directory; a single file is written in one beside the path
        # and moved out of it on close
        self._bag_dir = (self.path.with_name(f'.{self.path.name}.part') if single_file
                         else self.path)
        if single_file and self._bag_dir.exists():   # left by a run that was killed
            shutil.rmtree(self._bag_dir)
        self._writer = Writer(self._bag_dir, version=Writer.VERSION_LATEST,
                              storage_plugin=_STORAGES[storage])
        self._conns: dict[str, Any] = {}
        self._store = message_typestore()
        self._open = False
        self._path_kind: str | None = None

    def open(self) -> None:
        """Create the bag (called by ``with``)."""
        if not self._open:
            self._writer.open()
            self._open = True

    def close(self) -> None:
        """Finish the bag and write its metadata (called by ``with``).

        A single-file bag that cannot be finished (a full disk) is removed: an
        unfinished MCAP is no bag, and its hidden folder was left behind (review).
        """
        if self._open:
            self._open = False
            try:
                self._writer.close()
            except BaseException:
                if self._bag_dir != self.path:
                    shutil.rmtree(self._bag_dir, ignore_errors=True)
                raise
            if self._bag_dir != self.path:
                (inner,) = self._bag_dir.glob('*.mcap')
                inner.replace(self.path)
                shutil.rmtree(self._bag_dir)

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
    """Write EventPacket (or EventArray) messages to a new bag.

    Parameters
    ----------
    path : str or pathlib.Path
        Bag directory to create (must not exist).
    topic : str
        Topic name.
    storage : str
        ``'mcap'`` or ``'sqlite3'``.
    msgtype : str
        ``event_camera_msgs/msg/EventPacket`` (the default) or
        ``event_array_msgs/msg/EventArray`` (same fields, older drivers).

    Examples
    --------
    >>> with EventBagWriter('out_bag') as w:            # doctest: +SKIP
    ...     w.write(stamp_ns, seq, payload)
    """

    def __init__(self, path: 'str | Path', topic: str = DEFAULT_EVENT_TOPIC,
                 storage: str = 'mcap', msgtype: str = EVENT_PACKET_TYPE) -> None:
        if msgtype not in EVENT_TYPES:
            raise ValueError(f'msgtype must be one of {", ".join(EVENT_TYPES)}, got {msgtype!r}')
        super().__init__(path, storage)
        self.topic = topic
        self.msgtype = msgtype

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
        cls = self._store.types[self.msgtype]
        msg = cls(header=self._header(stamp_ns, frame_id), height=int(height), width=int(width),
                  seq=int(seq), time_base=int(time_base), encoding=str(encoding),
                  is_bigendian=False, events=data)
        self._write(self.topic, self.msgtype, msg,
                    stamp_ns if log_time_ns is None else log_time_ns)


class ResultBagWriter(_BagWriterBase):
    """Write the tracker outputs with the node's topics and types.

    Topics (``ns`` = namespace):

    - ``<ns>/rotors`` sensor_msgs/msg/JointState: name = rotor names,
      position = shaft phase [rad], velocity = shaft angular speed [rad/s],
      effort empty;
    - ``<ns>/<rotor>/rpm`` std_msgs/msg/Float64: shaft RPM;
    - ``<ns>/<rotor>/rpm_std`` std_msgs/msg/Float64: its standard deviation (rotors
      given one);
    - ``<ns>/<rotor>/homography`` std_msgs/msg/Float64MultiArray: H (3x3,
      row-major; dims ``rows`` size 3 stride 9, ``cols`` size 3 stride 3);
    - ``/diagnostics`` diagnostic_msgs/msg/DiagnosticArray.

    Parameters
    ----------
    path : str or pathlib.Path
        Bag directory to create (must not exist), or with ``single_file`` the
        ``.mcap`` file.
    namespace : str
        Topic prefix.
    storage : str
        ``'mcap'`` or ``'sqlite3'``.
    frame_id : str
        Header frame id.
    single_file : bool
        Write one self-contained MCAP file (schemas included; what Foxglove
        opens directly) instead of a rosbag2 directory.
    """

    def __init__(self, path: 'str | Path', namespace: str = '/helixtrack',
                 storage: str = 'mcap', frame_id: str = 'event_camera',
                 single_file: bool = False) -> None:
        super().__init__(path, storage, single_file)
        ns = '/' + namespace.strip('/')
        self.namespace = '' if ns == '/' else ns
        self.frame_id = frame_id
        self._templates: dict[str, PatchableCdr] = {}
        self._topics: dict[str, str] = {}     # rotor name -> its topic prefix (name checked)
        #: JointState bytes by rotor names; health DiagnosticArray bytes by (names, states)
        self._joint: dict[tuple[str, ...], PatchableCdr] = {}
        self._health: dict[tuple, PatchableCdr] = {}

    def _patchable(self, msgtype: str, make: Any, n_doubles: int) -> PatchableCdr:
        """CDR bytes of a message whose only varying part is ``n_doubles`` float64s.

        Serialising through rosbags costs tens of microseconds per message;
        the rpm and homography messages have a fixed layout, so their bytes
        are made once and the numbers patched in (same bytes as rosbags).
        """
        tpl = self._templates.get(msgtype)
        if tpl is None:
            marks = np.asarray(sentinels(n_doubles), np.float64)
            tpl = PatchableCdr(bytes(self._store.serialize_cdr(make(marks), msgtype)), n_doubles)
            self._templates[msgtype] = tpl
        return tpl

    def write_packet_outputs(self, stamp_ns: int, rotors: 'list[dict]') -> None:
        """Write the outputs of one processed packet.

        Parameters
        ----------
        stamp_ns : int
            ROS time of the outputs [ns] (header stamp and log time).
        rotors : list of dict
            One dict per rotor with keys ``name``, ``phase_rad``,
            ``omega_rad_s`` (shaft angular speed), ``rpm_shaft``, ``homography`` (3x3)
            and optionally ``rpm_shaft_std``.
        """
        rpm_cdr = self._patchable('std_msgs/msg/Float64', self._make_float64, 1)
        hom_cdr = self._patchable('std_msgs/msg/Float64MultiArray', self._make_matrix, 9)
        names, phase, omega = [], [], []
        for r in rotors:
            name = str(r['name'])
            base = self._topics.get(name)
            if base is None:
                if not _NAME_RE.match(name):
                    raise ValueError(f'rotor name {name!r} is not a valid ROS name token')
                base = self._topics[name] = f'{self.namespace}/{name}'
            hom = np.asarray(r['homography'], dtype=np.float64)
            if hom.shape != (3, 3):
                raise ValueError(f'homography of {name!r} must be 3x3, got shape {hom.shape}')
            names.append(name)
            phase.append(float(r['phase_rad']))
            omega.append(float(r['omega_rad_s']))
            self._write_raw(f'{base}/rpm', 'std_msgs/msg/Float64',
                            rpm_cdr.fill((float(r['rpm_shaft']),)), stamp_ns)
            if 'rpm_shaft_std' in r:
                self._write_raw(f'{base}/rpm_std', 'std_msgs/msg/Float64',
                                rpm_cdr.fill((float(r['rpm_shaft_std']),)), stamp_ns)
            self._write_raw(f'{base}/homography', 'std_msgs/msg/Float64MultiArray',
                            hom_cdr.fill(hom.ravel().tolist()), stamp_ns)
        self._write_raw(f'{self.namespace}/rotors', 'sensor_msgs/msg/JointState',
                        self._joint_cdr(names).fill(phase + omega, stamp_ns), stamp_ns)

    def _joint_cdr(self, names: 'list[str]') -> PatchableCdr:
        """The JointState of these rotors serialized once (numbers and stamp patched in)."""
        key = tuple(names)
        joint = self._joint.get(key)
        if joint is None:
            marks = np.asarray(sentinels(2 * len(names)), np.float64)
            js = self._store.types['sensor_msgs/msg/JointState'](
                header=self._header(0, self.frame_id), name=list(names),
                position=marks[:len(names)], velocity=marks[len(names):],
                effort=np.empty(0, np.float64))
            raw = self._store.serialize_cdr(js, 'sensor_msgs/msg/JointState')
            joint = self._joint[key] = PatchableCdr(bytes(raw), len(marks), has_header=True)
        return joint

    def _make_float64(self, values: np.ndarray) -> Any:
        return self._store.types['std_msgs/msg/Float64'](data=float(values[0]))

    def _make_matrix(self, values: np.ndarray) -> Any:
        st = self._store.types
        dim = st['std_msgs/msg/MultiArrayDimension']
        layout = st['std_msgs/msg/MultiArrayLayout'](
            dim=[dim(label='rows', size=3, stride=9), dim(label='cols', size=3, stride=3)],
            data_offset=0)
        return st['std_msgs/msg/Float64MultiArray'](layout=layout, data=values.copy())

    def write_health(self, stamp_ns: int, names: 'list[str]',
                     states: 'list[tuple[int, int]]') -> None:
        """Write the per-packet ``<ns>/health`` message of rotors ``names`` in (state, cause)
        ``states``: what :meth:`write_diagnostics` writes for ``health_statuses``, each
        distinct message serialized once and only its stamp written per packet."""
        key = (tuple(names), tuple(states))
        cdr = self._health.get(key)
        if cdr is None:
            if len(self._health) > _MAX_HEALTH_CACHED:
                self._health.clear()
            msg = self._diagnostic_array(0, health_statuses(names, states))
            cdr = PatchableCdr(bytes(self._store.serialize_cdr(
                msg, 'diagnostic_msgs/msg/DiagnosticArray')), 0, has_header=True)
            self._health[key] = cdr
        self._write_raw(f'{self.namespace}/health', 'diagnostic_msgs/msg/DiagnosticArray',
                        cdr.fill((), stamp_ns), stamp_ns)

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
        self._write(topic, 'diagnostic_msgs/msg/DiagnosticArray',
                    self._diagnostic_array(stamp_ns, statuses), stamp_ns)

    def _diagnostic_array(self, stamp_ns: int, statuses: 'list[dict]') -> Any:
        """A DiagnosticArray message object of ``statuses`` (see :meth:`write_diagnostics`)."""
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
        return st['diagnostic_msgs/msg/DiagnosticArray'](
            header=self._header(stamp_ns, self.frame_id), status=out)
