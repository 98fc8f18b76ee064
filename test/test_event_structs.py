# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""dvs_msgs / prophesee_event_msgs EventArray bags: read in place, tracked like the driver's."""

import csv
from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Ros2Writer

from helixtrack_ros.cli import main
from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.io import event_structs as es
from helixtrack_ros.io.bags import iter_event_packets
from helixtrack_ros.io.recordings import open_recording
from helixtrack_ros.io.ros_types import ros1_typestore, typestore

NS = 1_000_000_000
DVS = 'dvs_msgs/msg/EventArray'
PROPHESEE = 'prophesee_event_msgs/msg/EventArray'


def message(store, msgtype: str, stamp_ns: int, seq: int, frame_id: str, t_ns: np.ndarray,
            x: np.ndarray, y: np.ndarray, p: np.ndarray, size=(640, 480)):
    """A message object of ``msgtype`` (rosbags) with these events."""
    st = store.types
    pkg = msgtype.split('/')[0]
    time_t, event_t = st['builtin_interfaces/msg/Time'], st[f'{pkg}/msg/Event']
    kw = {'stamp': time_t(sec=stamp_ns // NS, nanosec=stamp_ns % NS), 'frame_id': frame_id}
    if 'seq' in st['std_msgs/msg/Header'].__dataclass_fields__:
        kw['seq'] = seq
    events = [event_t(x=int(a), y=int(b), ts=time_t(sec=int(t) // NS, nanosec=int(t) % NS),
                      polarity=bool(c)) for t, a, b, c in zip(t_ns, x, y, p)]
    return st[msgtype](header=st['std_msgs/msg/Header'](**kw), width=size[0], height=size[1],
                       events=events)


def serialized(ros1: bool, stamp_ns: int, seq: int, frame_id: str, t_ns: np.ndarray,
               x: np.ndarray, y: np.ndarray, p: np.ndarray, size=(640, 480)) -> bytes:
    """The bytes of a message with these events, written with numpy (fast, for big bags;
    checked against rosbags' serializer below)."""
    n = len(t_ns)
    sec, nsec = divmod(stamp_ns, NS)
    if ros1:
        fid = frame_id.encode()
        head = np.array([seq, sec, nsec, len(fid)], '<u4').tobytes() + fid
        parts = [(es.ROS1_EVENT, 0, 13, n)]
        body = bytearray(13 * n)
    else:
        fid = frame_id.encode() + b'\0'
        head = b'\x00\x01\x00\x00' + np.array([sec, nsec, len(fid)], '<u4').tobytes() + fid
        head += b'\0' * (-(len(head) - 4) % 4)
        parts = [(es.CDR_FIRST_EVENT, 0, 16, min(n, 1)), (es.CDR_EVENT, 14, 16, n - 1)]
        body = bytearray(max(0, 16 * n - 3))
    head += np.array([size[1], size[0], n], '<u4').tobytes()
    lo = 0
    for dtype, offset, stride, count in parts:
        if count <= 0:
            continue
        ev = np.ndarray((count,), dtype, body, offset, (stride,))
        for name, v in zip(('x', 'y', 'sec', 'nsec', 'p'), (x, y, t_ns // NS, t_ns % NS, p)):
            ev[name] = v[lo:lo + count]
        lo += count
    return head + bytes(body)


def random_events(rng, n: int, t0_ns: int):
    t = t0_ns + np.sort(rng.integers(0, 900_000_000, n))
    return t, rng.integers(0, 640, n), rng.integers(0, 480, n), rng.integers(0, 2, n)


@pytest.mark.parametrize('ros1', [True, False])
@pytest.mark.parametrize('n', [0, 1, 2, 37])
@pytest.mark.parametrize('frame_id', ['', 'c', 'cam0', 'event_camera'])
def test_struct_events_parse_as_rosbags_deserializes_them(ros1, n, frame_id):
    # rosbags' own deserializer is the twin; frame ids of every length mod 4 move the
    # CDR events' alignment
    store = ros1_typestore() if ros1 else typestore()
    rng = np.random.default_rng(n)
    t, x, y, p = random_events(rng, n, 1_700_000_000 * NS)
    msg = message(store, DVS, 1_700_000_001 * NS + 5, 42, frame_id, t, x, y, p)
    raw = store.serialize_ros1(msg, DVS) if ros1 else store.serialize_cdr(msg, DVS)
    assert bytes(raw) == serialized(ros1, 1_700_000_001 * NS + 5, 42, frame_id, t, x, y, p)
    got = es.parse_ros1(raw) if ros1 else es.parse_cdr(raw, 42)
    assert (got.stamp_ns, got.frame_id, got.seq, got.width, got.height) == (
        1_700_000_001 * NS + 5, frame_id, 42, 640, 480)
    ev = got.events
    assert ev['x'].tolist() == x.tolist() and ev['y'].tolist() == y.tolist()
    assert (ev['sec'].astype(np.int64) * NS + ev['nsec']).tolist() == t.tolist()
    assert ev['p'].tolist() == p.tolist()


@pytest.mark.parametrize('ros1', [True, False])
def test_a_message_cut_short_is_refused(ros1):
    store = ros1_typestore() if ros1 else typestore()
    t, x, y, p = random_events(np.random.default_rng(1), 10, 5 * NS)
    msg = message(store, DVS, 5 * NS, 1, 'cam', t, x, y, p)
    raw = bytes(store.serialize_ros1(msg, DVS) if ros1 else store.serialize_cdr(msg, DVS))
    with pytest.raises(ValueError, match='do not fit|bytes after'):
        (es.parse_ros1 if ros1 else lambda r: es.parse_cdr(r, 0))(raw[:-7])


def test_records_decode_to_the_message_events_in_sensor_time():
    store = typestore()
    rng = np.random.default_rng(3)
    reader = es.StructEventReader(ros1=False)
    dec = make_decoder('mono', 640, 480)
    t0 = 1_700_000_000 * NS + 250_000_000
    for k in range(3):
        t, x, y, p = random_events(rng, 50, t0 + k * NS)
        raw = store.serialize_cdr(message(store, DVS, t0 + k * NS, k, 'cam', t, x, y, p), DVS)
        rec = reader.record(raw, 0, k)
        assert rec.encoding == 'mono' and rec.seq == k
        ev = dec.decode(rec.events, time_base=rec.time_base).events
        # sensor time counts from the whole second before the stream's first event
        assert ev.t_us.tolist() == ((t - 1_700_000_000 * NS) // 1000).tolist()
        assert ev.x.tolist() == x.tolist() and ev.p.tolist() == p.tolist()


def test_a_message_longer_than_the_mono_offset_is_refused():
    store = typestore()
    t = np.array([10 * NS, 15 * NS])
    raw = store.serialize_cdr(message(store, DVS, 10 * NS, 0, '', t, t * 0, t * 0, t * 0), DVS)
    with pytest.raises(ValueError, match='spans 5.0 s'):
        es.StructEventReader(ros1=False).record(raw, 0, 0)


def write_struct_bag(packets: list, dest: Path, msgtype: str, ros1: bool, group: int = 1) -> Path:
    """The packets' events as struct-per-event EventArrays, stamped 1.7e9 s on (each
    message ``group`` packets, stamped at its last event)."""
    store = ros1_typestore() if ros1 else typestore()
    dec = make_decoder(packets[0].encoding, packets[0].width, packets[0].height)
    base = 1_700_000_000 * NS
    stamp = base
    if ros1:
        w = Ros1Writer(dest)
    else:
        w = Ros2Writer(dest, version=Ros2Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
    w.open()
    conn = w.add_connection('/dvs/events', msgtype, typestore=store)
    for k in range(0, len(packets), group):
        parts = [dec.decode(q.events).events for q in packets[k:k + group]]
        pkt = packets[k]
        ev = type(parts[0]).concatenate(parts)
        stamp = base + int(ev.t_us[-1]) * 1000 if len(ev) else stamp + 1
        seq = pkt.seq if group == 1 else k // group
        raw = serialized(ros1, stamp, seq, 'dvs', base + ev.t_us * 1000, ev.x, ev.y, ev.p,
                         (pkt.width, pkt.height))
        w.write(conn, stamp, raw)
    w.close()
    return dest


@pytest.mark.parametrize('msgtype,ros1', [(DVS, True), (PROPHESEE, False)])
def test_a_struct_event_bag_is_tracked_as_the_driver_bag(tmp_path, msgtype, ros1):
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.15', '--seed', '5',
                 '--out', str(tmp_path / 'sim')]) == 0
    bag = tmp_path / 'sim' / 'events'
    packets = list(iter_event_packets(bag))
    dest = write_struct_bag(packets, tmp_path / ('dvs.bag' if ros1 else 'dvs'), msgtype, ros1)
    rec = open_recording(dest)
    assert (rec.topic, rec.msgtype, rec.width, rec.height) == ('/dvs/events', msgtype, 1280, 720)
    params = str(tmp_path / 'sim' / 'params.yaml')
    rows = {}
    for name, path in (('ref', bag), ('dvs', dest)):
        # (outputs beside, not inside, the rosbag2 directory: track refuses that)
        out = tmp_path / f'{name}_out'
        assert main(['track', str(path), '--params', params, '--out', str(out)]) == 0
        rows[name] = [{k: v for k, v in r.items() if k != 'stamp_ns'}
                      for r in csv.DictReader((out / 'rpm.csv').open())]
    assert len(rows['ref']) == 150 and sum(r['state'] == 'TRACKING' for r in rows['ref']) > 100
    assert rows['dvs'] == rows['ref']   # every column but the stamps, exactly


def test_a_refused_message_does_not_set_the_time_origin():
    store = ros1_typestore()
    reader = es.StructEventReader(ros1=True)
    bad = np.array([0, 10 * NS])                     # spans 10 s: refused
    raw = store.serialize_ros1(message(store, DVS, 10 * NS, 0, '', bad, bad * 0, bad * 0,
                                       bad * 0), DVS)
    with pytest.raises(ValueError, match='spans'):
        reader.record(raw, 0, 0)
    t = np.array([1_700_000_000 * NS + 400_000_000])
    raw = store.serialize_ros1(message(store, DVS, int(t[0]), 1, '', t, t * 0, t * 0, t * 0),
                               DVS)
    assert reader.record(raw, 0, 1).time_base == 400_000_000
    assert reader.epoch_ns == 1_700_000_000 * NS


def test_events_before_the_time_origin_are_held_at_it():
    # a later message with events older than the stream's first whole second: before,
    # its time_base went negative and the whole packet was refused
    store = typestore()
    reader = es.StructEventReader(ros1=False)
    dec = make_decoder('mono', 640, 480)
    for k, t0 in enumerate((1_700_000_000 * NS + 10, 1_700_000_000 * NS - 5000)):
        t = np.array([t0, t0 + 3000])
        raw = store.serialize_cdr(message(store, DVS, t0, k, '', t, t * 0 + 1, t * 0, t * 0),
                                  DVS)
        rec = reader.record(raw, 0, k)
        assert rec.time_base >= 0
        ev = dec.decode(rec.events, time_base=rec.time_base).events
        assert len(ev) == 2 and ev.t_us.min() >= 0


def test_cdr_bytes_beyond_the_events_are_refused():
    store = typestore()
    t = np.array([5 * NS, 5 * NS + 1])
    raw = bytes(store.serialize_cdr(message(store, DVS, 5 * NS, 0, 'c', t, t * 0, t * 0, t * 0),
                                    DVS))
    assert len(es.parse_cdr(raw + b'\0\0\0', 0).events) == 2     # padding to 4 bytes
    with pytest.raises(ValueError, match='do not fit'):
        es.parse_cdr(raw + b'\0' * 8, 0)


def test_outputs_of_long_struct_messages_are_stamped_at_their_event_times(tmp_path):
    """The events carry ROS time: an output is stamped at the ROS time of its state. Before,
    the mapping took the header stamp (sent after a message's last event) for its first
    event's time, and 20 ms messages came out stamped 19 ms late (input review)."""
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.15', '--seed', '5',
                 '--out', str(tmp_path / 'sim')]) == 0
    packets = list(iter_event_packets(tmp_path / 'sim' / 'events'))
    dest = write_struct_bag(packets, tmp_path / 'dvs.bag', DVS, True, group=20)
    out = tmp_path / 'out'
    assert main(['track', str(dest), '--params', str(tmp_path / 'sim' / 'params.yaml'),
                 '--out', str(out)]) == 0
    rows = list(csv.DictReader((out / 'rpm.csv').open()))
    assert len(rows) == 8 and sum(r['state'] == 'TRACKING' for r in rows) >= 5
    base = 1_700_000_000 * NS
    late = [int(r['stamp_ns']) - (base + int(r['t_us']) * 1000) for r in rows]
    assert 0 <= min(late) and max(late) < 1000


def test_events_out_of_order_within_a_message_are_put_in_order():
    store = typestore()
    rng = np.random.default_rng(4)
    t, x, y, p = random_events(rng, 200, 1_700_000_000 * NS)
    shuffled = rng.permutation(200)
    raw = store.serialize_cdr(message(store, DVS, int(t[-1]), 0, 'cam', t[shuffled],
                                      x[shuffled], y[shuffled], p[shuffled]), DVS)
    rec = es.StructEventReader(ros1=False).record(raw, 0, 0)
    ev = make_decoder('mono', 640, 480).decode(rec.events, time_base=rec.time_base).events
    assert ev.t_us.tolist() == ((t - 1_700_000_000 * NS) // 1000).tolist()
    assert rec.stamp_ns == int(t[0])   # (the first event's ROS time, not the header's)


def test_a_topic_whose_type_changes_is_read_message_by_message(tmp_path, capsys):
    """EventPackets, then dvs EventArrays on the same topic (a second connection): each
    message is read by its own type; before, the dvs ones were read as EventPackets and
    skipped as corrupt (input review)."""
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.04', '--seed', '2',
                 '--out', str(tmp_path / 'sim')]) == 0
    packets = list(iter_event_packets(tmp_path / 'sim' / 'events'))
    store = typestore()
    st = store.types
    w = Ros2Writer(tmp_path / 'mixed', version=Ros2Writer.VERSION_LATEST,
                   storage_plugin=StoragePlugin.MCAP)
    w.open()
    first = w.add_connection('/event_camera/events', 'event_camera_msgs/msg/EventPacket',
                             typestore=store)
    later = w.add_connection('/event_camera/events', DVS, typestore=store)
    dec = make_decoder(packets[0].encoding, packets[0].width, packets[0].height)
    base = 1_700_000_000 * NS
    for k, pkt in enumerate(packets):
        ev = dec.decode(pkt.events).events
        if k < 20:
            head = st['std_msgs/msg/Header'](stamp=st['builtin_interfaces/msg/Time'](
                sec=pkt.stamp_ns // NS, nanosec=pkt.stamp_ns % NS), frame_id='cam')
            msg = st['event_camera_msgs/msg/EventPacket'](
                header=head, height=pkt.height, width=pkt.width, seq=pkt.seq,
                time_base=pkt.time_base, encoding=pkt.encoding, is_bigendian=False,
                events=np.frombuffer(bytes(pkt.events), np.uint8))
            w.write(first, pkt.stamp_ns, store.serialize_cdr(msg, msg.__msgtype__))
        else:
            stamp = base + int(ev.t_us[-1]) * 1000
            w.write(later, stamp, serialized(False, stamp, k, 'cam', base + ev.t_us * 1000,
                                             ev.x, ev.y, ev.p, (pkt.width, pkt.height)))
    w.close()
    corrupt = []
    got = list(iter_event_packets(tmp_path / 'mixed', on_corrupt=corrupt.append))
    assert not corrupt and len(got) == len(packets) == 40
    assert [r.encoding for r in got] == [packets[0].encoding] * 20 + ['mono'] * 20
    capsys.readouterr()
    main(['track', str(tmp_path / 'mixed'), '--params', str(tmp_path / 'sim' / 'params.yaml'),
          '--out', str(tmp_path / 'out')])
    # (the summary says what the format changed from and to)
    assert 'format changes 1 (the last: evt3 1280x720 -> mono 1280x720)' in capsys.readouterr().out


def _records(ros1: bool, messages, notes=None):
    """The records of (t_ns, x, y, size) messages, read as the bag readers read them."""
    reader = es.StructEventReader(ros1, notes.append if notes is not None else None)
    recs = []
    for k, (t, x, y, size) in enumerate(messages):
        t = np.asarray(t)
        raw = serialized(ros1, int(t.min()), k, 'dvs', t, np.asarray(x), np.asarray(y),
                         np.ones(len(t), int), size)
        recs.append(reader.record(raw, 0, k))
    return reader, recs


@pytest.mark.parametrize('ros1', [True, False])
def test_an_event_of_an_absurd_time_is_dropped_not_its_message(ros1):
    """One event of 2030 in a message made the message span 1.9e8 s: the whole message was
    skipped as corrupt (input review). Now that event alone is dropped, counted, said."""
    t0 = 1_700_000_000 * NS
    t = t0 + np.arange(50) * 20_000
    t[17] = 1_893_456_000 * NS                        # 2030-01-01 (CDR: a signed second)
    notes = []
    reader, (rec,) = _records(ros1, [(t, np.arange(50), np.arange(50), (640, 480))], notes)
    ev = make_decoder('mono', 640, 480).decode(rec.events, time_base=rec.time_base).events
    keep = np.arange(50) != 17
    assert ev.x.tolist() == np.arange(50)[keep].tolist()
    assert ev.t_us.tolist() == ((t[keep] - t0) // 1000).tolist()
    assert reader.events_dropped == 1 and len(notes) == 1
    assert notes[0].startswith('EventArray 0: 1 of its 50 events lie 1.93e+08 s from the')
    assert '2030-01-01 00:00:00 UTC' in notes[0] and 'the other 49 kept' in notes[0]
    half = t0 + np.array([0, 1, 100 * NS, 100 * NS + 1])   # not a few: refused as before
    with pytest.raises(ValueError, match='spans'):
        _records(ros1, [(half, [0] * 4, [0] * 4, (640, 480))])


def test_a_message_without_sensor_size_takes_the_stream_size():
    """width and height 0 (a driver that leaves them unset): every packet was refused
    ('width must be in 1..32768, got 0'). Now the stream's size from its other messages,
    else from the events (largest x and y + 1), grown if a later event lies beyond."""
    t0 = 1_700_000_000 * NS
    msg = [(t0 + k * NS // 10 + np.arange(3), [5, 99, 7], [3, 4, 59], (0, 0)) for k in range(4)]
    msg[2] = (msg[2][0], msg[2][1], msg[2][2], (346, 260))
    _, recs = _records(False, msg)
    notes = []
    sized = list(es.sized_records(recs, "'/dvs/events'", notes.append))
    assert [r.seq for r in sized] == [0, 1, 2, 3]            # in order, none held back
    assert {(r.width, r.height) for r in sized} == {(346, 260)}
    assert notes == ["EventArray messages on '/dvs/events' give no sensor size (width and "
                     "height 0): the 346x260 of the stream's other messages taken"]
    msg = [(t0 + k * NS // 10 + np.arange(3), [5, 99 + k, 7], [3, 4, 59], (0, 0))
           for k in range(es.SIZE_FROM_MESSAGES + 2)]
    msg[-1] = (msg[-1][0], [5, 300, 7], [3, 4, 70], (0, 0))
    _, recs = _records(True, msg)
    notes = []
    sized = list(es.sized_records(recs, "'/dvs/events'", notes.append))
    assert [(r.width, r.height) for r in sized[:es.SIZE_FROM_MESSAGES]] == \
        [(99 + es.SIZE_FROM_MESSAGES, 60)] * es.SIZE_FROM_MESSAGES
    assert [(r.width, r.height) for r in sized[-2:]] == [(300, 60), (301, 71)]
    assert len(notes) == 3 and 'x and y + 1' in notes[0] and 'beyond the 299x60' in notes[1]
    assert 'first 200 messages' in notes[0]


def test_an_unsized_bag_with_an_absurd_event_decodes_in_one_line_each(tmp_path, capsys):
    """The command line: each repair one warning line, every other event decoded, exit 0."""
    t0 = 1_700_000_000 * NS
    rng = np.random.default_rng(8)
    w = Ros1Writer(tmp_path / 'dvs.bag')
    w.open()
    conn = w.add_connection('/dvs/events', DVS, typestore=ros1_typestore())
    for k in range(5):
        t, x, y, p = random_events(rng, 400, t0 + k * NS)
        t[k * 10] = 4_102_444_800 * NS if k == 3 else t[k * 10]
        w.write(conn, int(t0 + k * NS), serialized(True, int(t0 + k * NS), k, 'dvs',
                                                   np.sort(t), x, y, p, (0, 0)))
    w.close()
    out = tmp_path / 'e.npz'
    assert main(['events', str(tmp_path / 'dvs.bag'), '-q', '-o', str(out)]) == 0
    captured = capsys.readouterr()
    assert '1999 events' in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 2 and 'EventArray 3: 1 of its 400 events' in err[0]   # (as read)
    assert '640x480 taken from the events of the first 5 messages' in err[1]
    with np.load(out) as d:
        assert (int(d['width']), int(d['height'])) == (int(d['x'].max()) + 1,
                                                       int(d['y'].max()) + 1)
