# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Every kind of input (issue #14): Metavision .raw (EVT 2.0/3.0), EventArray bags (ROS 2
and ROS 1), kind and topic detection, bad files, and sensor sizes end to end.
"""

import csv
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from rosbags.rosbag2 import Reader, StoragePlugin, Writer

from helixtrack_ros.cli import main
from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt2_encoder import Evt2Encoder
from helixtrack_ros.codecs.evt21 import swap_halves
from helixtrack_ros.io.bags import (
    EVENT_ARRAY_TYPE,
    EventBagWriter,
    iter_event_packets,
    typestore,
)
from helixtrack_ros.io.raw_file import (
    RawFileError,
    RawFileWriter,
    TruncatedRawError,
    iter_raw_packets,
    raw_header_text,
    read_raw_header,
)
from helixtrack_ros.io.recordings import open_recording
from helixtrack_ros.io.ros1_bags import Ros1EventBagWriter

DATA = Path(__file__).parent / 'data'
REAL_BAG = DATA / 'test_data_evt3_trigger'
REF = DATA / 'test_data_evt3_trigger.ref_decoded.npz'


def one_line(err: str) -> str:
    """The only non-empty line of ``err`` (fails on tracebacks and on several lines)."""
    assert 'Traceback' not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def copy_packets(packets: list, dest: Path, kind: str) -> Path:
    """The packets written as a .raw file ('raw'), or a ROS 2 / ROS 1 EventArray bag."""
    first = packets[0]
    if kind == 'raw':
        with RawFileWriter(dest, first.encoding, first.width, first.height) as w:
            for p in packets:
                w.write(p.events.tobytes())
        return dest
    writer = (EventBagWriter(dest, msgtype=EVENT_ARRAY_TYPE) if kind == 'ros2_array'
              else Ros1EventBagWriter(dest))
    with writer as w:
        for p in packets:
            w.write(p.stamp_ns, p.seq, p.events, width=p.width, height=p.height,
                    encoding=p.encoding)
    return dest


# ---------------------------------------------------------------------- real EVT 3.0 data
@pytest.fixture(scope='module')
def real_packets():
    return list(iter_event_packets(REAL_BAG))


@pytest.mark.parametrize('kind,name', [('raw', 'real.raw'), ('ros2_array', 'real_array'),
                                       ('ros1', 'real.bag')])
def test_the_real_recording_rewritten_decodes_to_the_reference(real_packets, kind, name,
                                                               tmp_path, capsys):
    path = copy_packets(real_packets, tmp_path / name, kind)
    rec = open_recording(path)
    assert (rec.width, rec.height) == (1280, 720)
    out = tmp_path / 'e.npz'
    assert main(['events', str(path), '--out', str(out)]) == 0
    capsys.readouterr()
    got, ref = np.load(out), np.load(REF)
    for a, b in (('t_us', 't'), ('x', 'x'), ('y', 'y'), ('p', 'p'), ('trig_t_us', 'trig_t'),
                 ('trig_value', 'trig_value'), ('trig_id', 'trig_id')):
        assert np.array_equal(got[a], ref[b]), a


def test_raw_packets_do_not_depend_on_the_read_chunks(real_packets, tmp_path):
    path = copy_packets(real_packets, tmp_path / 'real.raw', 'raw')
    whole = list(iter_raw_packets(path))
    for chunk in (64, 1000, 4098):
        parts = list(iter_raw_packets(path, chunk_bytes=chunk))
        assert [len(p.events) for p in parts] == [len(p.events) for p in whole]
    # about 1 ms of sensor time per packet, each starting with its first event's time
    dec = make_decoder('evt3', 1280, 720)
    spans = []
    for p in whole:
        t = dec.decode(p.events).events.t_us
        if len(t):
            spans.append(int(t[-1] - t[0]))
            assert p.stamp_ns == int(t[0]) * 1000
    assert max(spans) < 1000 and np.median(spans) > 900


# ---------------------------------------------------------------------- simulated scene
@pytest.fixture(scope='module')
def scenes(tmp_path_factory):
    """One 0.3 s scene as rosbag2 EventPackets, .raw EVT 3.0, 2.0 and 2.1, ROS 1 EventArray."""
    root = tmp_path_factory.mktemp('scenes')
    paths = {}
    for fmt in ('rosbag2', 'raw-evt3', 'raw-evt21'):
        assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.3', '--seed',
                     '5', '--format', fmt, '--out', str(root / fmt)]) == 0
    paths['rosbag2'] = root / 'rosbag2' / 'events'
    paths['raw-evt3'] = root / 'raw-evt3' / 'events.raw'
    paths['raw-evt21'] = root / 'raw-evt21' / 'events.raw'
    packets = list(iter_event_packets(paths['rosbag2']))
    paths['ros1'] = copy_packets(packets, root / 'scene.bag', 'ros1')
    # EVT 2.0: the same events (decoded from the bag), encoded packet by packet
    dec, enc = make_decoder('evt3', 1280, 720), Evt2Encoder()
    paths['raw-evt2'] = root / 'scene_evt2.raw'
    with RawFileWriter(paths['raw-evt2'], 'evt2', 1280, 720) as w:
        for p in packets:
            w.write(enc.encode(dec.decode(p.events).events))
    # EVT 2.1 as an IMX636 stores it: the upper half of each word first
    head = read_raw_header(paths['raw-evt21'])
    data = paths['raw-evt21'].read_bytes()
    paths['raw-evt21-imx636'] = root / 'scene_evt21_imx636.raw'
    paths['raw-evt21-imx636'].write_bytes(data[:head.data_offset] + swap_halves(
        np.frombuffer(data[head.data_offset:], '<u8')).astype('<u8').tobytes())
    return root, paths


def _rows(path: Path) -> list[dict]:
    rows = list(csv.DictReader(path.open()))
    for r in rows:
        del r['stamp_ns']
    return rows


def test_every_format_of_a_scene_tracks_the_same(scenes, tmp_path, capsys):
    root, paths = scenes
    params = str(root / 'rosbag2' / 'params.yaml')
    results = {}
    for kind, path in paths.items():
        assert main(['track', str(path), '--params', params, '--out',
                     str(tmp_path / kind)]) == 0, kind
        results[kind] = _rows(tmp_path / kind / 'rpm.csv')
    capsys.readouterr()
    ref = results.pop('rosbag2')
    assert len(ref) == 300 and sum(r['state'] == 'TRACKING' for r in ref) > 250
    for kind, rows in results.items():
        assert rows == ref, kind   # every column but the header stamps, exactly


def test_truncated_raw_file_keeps_the_whole_packets_and_exits_3(scenes, tmp_path, capsys):
    _, paths = scenes
    data = paths['raw-evt3'].read_bytes()
    cut = tmp_path / 'cut.raw'
    start = read_raw_header(paths['raw-evt3']).data_offset
    cut.write_bytes(data[:start + (len(data) - start) // 4 * 2 + 1])   # inside a 16-bit word
    got = []
    with pytest.raises(TruncatedRawError) as exc:
        got.extend(iter_raw_packets(cut))
    assert exc.value.messages_read == len(got) > 100
    assert main(['events', str(cut), '--out', str(tmp_path / 'e.npz')]) == 3
    line = one_line(capsys.readouterr().err)
    assert 'cut short' in line and '1 byte(s) into a 2-byte word' in line


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize('head,words', [
    (b'', 'no Metavision RAW header'),
    (b'% format HISTO3D;height=720;width=1280\n% end\n', "unsupported event format 'HISTO3D'"),
    (b'% evt 4.0\n% end\n', 'unsupported event format'),
    (b'% evt 3.0\n% end\n', 'no sensor size'),
    (b'% date 2024-01-01 00:00:00\n% end\n', 'names no event format'),
    (b'% format EVT3;height=720;width=99999\n% end\n', 'bad sensor width'),
])
def test_bad_raw_headers_are_one_line_and_exit_2(head, words, tmp_path, capsys):
    path = tmp_path / 'bad.raw'
    path.write_bytes(head + b'\x00\x80' * 64)
    with pytest.raises(RawFileError):
        read_raw_header(path)
    for cmd in ('events', 'track', 'detect'):
        out = tmp_path / ('o.yaml' if cmd == 'detect' else 'o.npz' if cmd == 'events' else 'o')
        assert main([cmd, str(path), '--out', str(out)]) == 2
        assert words in one_line(capsys.readouterr().err), cmd


def test_the_header_is_read_from_its_lines(tmp_path):
    path = tmp_path / 'a.raw'
    path.write_bytes(b'% date 2023-03-29 16:37:38\n% evt 2.0\n% geometry 640x480\n'
                     b'% serial_number 00050423\n% end\n' + b'%\x00\x00\x80')
    h = read_raw_header(path)
    assert (h.encoding, h.width, h.height) == ('evt2', 640, 480)
    assert h.data_offset == path.stat().st_size - 4   # a data word starting with '%' is data
    assert h.date_ns == 1680107858 * 10**9
    assert raw_header_text('evt3', 346, 260).startswith(b'% evt 3.0\n% format EVT3;height=260;')


def _bag_with_topics(path: Path, topics: list[str]) -> Path:
    w = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
    w.open()
    for t in topics:
        w.add_connection(t, 'event_camera_msgs/msg/EventPacket', typestore=typestore())
    w.close()
    return path


def test_empty_bags_and_unknown_files_are_one_line_and_exit_2(tmp_path, capsys):
    empty2 = _bag_with_topics(tmp_path / 'empty', [])
    empty1 = tmp_path / 'empty.bag'
    from rosbags.rosbag1 import Writer as Writer1
    w1 = Writer1(empty1)
    w1.open()
    w1.close()
    other = tmp_path / 'notes.pdf'
    other.write_text('hello')
    text = tmp_path / 'notes.txt'      # read as text events: a line of words is no header
    text.write_text('hello')
    for path, words in ((empty2, 'no event topic'), (empty1, 'no event topic'),
                        (other, 'not a known recording'), (text, 'expected four named t')):
        assert main(['track', str(path), '--out', str(tmp_path / 'o')]) == 2
        assert words in one_line(capsys.readouterr().err), path


def test_a_bag_with_two_event_topics_needs_topic(real_packets, tmp_path, capsys):
    path = tmp_path / 'two'
    with EventBagWriter(path, topic='/left/events') as w:
        for p in real_packets[:3]:
            w.write(p.stamp_ns, p.seq, p.events)
    two = _bag_with_topics(tmp_path / 'two_b', ['/left/events', '/right/events'])
    assert main(['events', str(two), '--out', str(tmp_path / 'e.npz')]) == 2
    line = one_line(capsys.readouterr().err)
    assert '/left/events, /right/events' in line and '--topic' in line
    assert main(['events', str(path), '--out', str(tmp_path / 'e.npz')]) == 0   # the only one
    assert main(['events', str(two), '--topic', '/right/events', '--out',
                 str(tmp_path / 'e2.npz')]) == 1   # named, and empty: nothing decoded
    capsys.readouterr()


# ---------------------------------------------------------------------- sensor sizes
@pytest.mark.parametrize('size', ['346x260', '640x480', '1280x720'])
def test_any_sensor_size_end_to_end(size, tmp_path, capsys):
    from helixtrack_ros.debug_image import render_debug_image
    width, height = (int(v) for v in size.split('x'))
    scene = tmp_path / 'scene'
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.3', '--seed', '2',
                 '--size', size, '--format', 'raw-evt3', '--out', str(scene)]) == 0
    raw = scene / 'events.raw'
    assert (read_raw_header(raw).width, read_raw_header(raw).height) == (width, height)
    assert main(['detect', str(raw), '--out', str(tmp_path / 'det.yaml')]) == 0
    assert main(['track', str(raw), '--out', str(tmp_path / 'tr')]) == 0   # detects itself
    capsys.readouterr()
    rows = list(csv.DictReader((tmp_path / 'tr' / 'rpm.csv').open()))
    late = [float(r['rpm']) for r in rows if r['state'] == 'TRACKING'
            and int(r['t_us']) > 150_000]
    assert len(late) > 100 and abs(np.mean(late) - 10_000) < 10
    last = rows[-1]
    H = np.array([float(last[f'h{i}{j}']) for i in range(3) for j in range(3)]).reshape(3, 3)
    center = H[:2, 2] / H[2, 2]
    assert 0 < center[0] < width and 0 < center[1] < height
    events = make_decoder('evt3', width, height).decode(
        np.concatenate([p.events for p in iter_raw_packets(raw)][-20:])).events
    img = render_debug_image(width, height, [(events.x, events.y, events.p)],
                             [SimpleNamespace(homography=H, rpm_shaft=float(last['rpm']),
                                              level=0)], 'rgb8')
    assert img.shape == (height, width, 3)
    assert (img != 128).any(axis=-1).mean() > 0.001


@pytest.mark.parametrize('kind', ['raw-evt3', 'raw-evt2'])
def test_a_raw_file_with_a_block_of_garbage_is_tracked_on_after_it(scenes, tmp_path, kind):
    # 20 kB of random bytes over the data a third of the way in (a bad sector): the
    # packets' times come from the same words, so the header stamps are no witness of a
    # leap; the random TIME_HIGH words must move neither the decoder's clock nor the
    # one that cuts the file into packets and stamps them
    root, paths = scenes
    data = bytearray(paths[kind].read_bytes())
    at = len(data) // 3
    data[at:at + 20_000] = np.random.default_rng(3).integers(0, 256, 20_000, np.uint8).tobytes()
    bad = tmp_path / 'bad.raw'
    bad.write_bytes(bytes(data))
    assert main(['track', str(bad), '--params', str(root / 'rosbag2' / 'params.yaml'),
                 '--out', str(tmp_path / 'out')]) == 0
    rows = list(csv.DictReader((tmp_path / 'out' / 'rpm.csv').open()))
    t_us = np.array([int(r['t_us']) for r in rows])
    rpm = np.array([float(r['rpm']) for r in rows])
    assert t_us.max() < 300_000                      # no time beyond the stream's
    assert max(int(r['stamp_ns']) for r in rows) < 300_000_000   # (the file has no date)
    before = np.nanmedian(rpm[(t_us > 50_000) & (t_us < 90_000)])
    after = rpm[(t_us > 200_000) & np.isfinite(rpm)]
    assert len(after) >= 2                           # the stream after the block is tracked
    assert np.all(np.abs(after / before - 1.0) < 0.01)


@pytest.mark.parametrize('kind', ['raw-evt3', 'raw-evt2'])
def test_a_raw_file_with_a_byte_inserted_is_tracked_as_the_clean_one(scenes, tmp_path, kind,
                                                                     capsys):
    # one stray byte puts every later word on the wrong grid; before, the rest of the
    # file decoded as unknown codes and the command ended with "cut short"
    root, paths = scenes
    data = bytearray(paths[kind].read_bytes())
    data.insert(len(data) // 3, 0x5A)
    bad = tmp_path / 'bad.raw'
    bad.write_bytes(bytes(data))
    params = str(root / 'rosbag2' / 'params.yaml')
    assert main(['track', str(paths[kind]), '--params', params, '--out',
                 str(tmp_path / 'clean')]) == 0
    capsys.readouterr()
    assert main(['track', str(bad), '--params', params, '--out', str(tmp_path / 'out')]) == 0
    err = capsys.readouterr().err
    assert err.count('word grid') == 1 and 'cut short' not in err
    clean, rows = _rows(tmp_path / 'clean' / 'rpm.csv'), _rows(tmp_path / 'out' / 'rpm.csv')
    assert len(rows) == len(clean) == 300
    rpm = np.array([float(r['rpm']) for r in rows])
    rpm_clean = np.array([float(r['rpm']) for r in clean])
    assert np.array_equal(np.isnan(rpm), np.isnan(rpm_clean))
    ok = np.isfinite(rpm)
    assert np.all(np.abs(rpm[ok] / rpm_clean[ok] - 1.0) < 1e-3)


def bag_with_garbage(src: Path, dest: Path, n_bad: int, garbage: bytes) -> Path:
    """A copy of the rosbag2 ``src`` (mcap) with message ``n_bad`` replaced by ``garbage``."""
    w = Writer(dest, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
    w.open()
    with Reader(src) as r:
        conn = w.add_connection(r.connections[0].topic, r.connections[0].msgtype,
                                typestore=typestore())
        for n, (_, t_ns, raw) in enumerate(r.messages()):
            w.write(conn, t_ns, garbage if n == n_bad else raw)
    w.close()
    return dest


@pytest.mark.parametrize('kind', ['rosbag2', 'ros1'])
def test_a_corrupt_message_in_a_bag_is_skipped_and_the_rest_tracked(scenes, tmp_path, kind,
                                                                   capsys):
    # before, the first message that did not deserialize ended the run (exit 2) and
    # everything after it was lost
    root, paths = scenes
    packets = list(iter_event_packets(paths['rosbag2']))
    garbage = b'\x00\x01\x00\x00' + b'\xff' * 7
    bad = tmp_path / ('bad' if kind == 'rosbag2' else 'bad.bag')
    if kind == 'rosbag2':
        bag_with_garbage(paths['rosbag2'], bad, 100, garbage)
    else:
        with Ros1EventBagWriter(bad) as w:
            for p in packets:
                if p.seq == 100:
                    w._writer.write(w._conn, p.stamp_ns, garbage[4:])
                    continue
                w.write(p.stamp_ns, p.seq, p.events, width=p.width, height=p.height,
                        encoding=p.encoding)
    assert main(['track', str(bad), '--params', str(root / 'rosbag2' / 'params.yaml'),
                 '--out', str(tmp_path / 'out')]) == 0
    err = capsys.readouterr().err
    assert err.count('warning: corrupt') == 1 and ' 100 on ' in err and 'skipped' in err
    rows = list(csv.DictReader((tmp_path / 'out' / 'rpm.csv').open()))
    t_us = np.array([int(r['t_us']) for r in rows])
    # every packet but the corrupt one, and those the decoder drops until the next
    # TIME_HIGH word tells it the time again (EVT 3.0: at most 4.1 ms)
    missing = sorted(set(range(999, 300_000, 1000)) - set(t_us.tolist()))
    assert missing[0] == 100_999 and missing[-1] < 100_999 + 4096
    rpm = np.array([float(r['rpm']) for r in rows])
    before = np.nanmedian(rpm[(t_us > 50_000) & (t_us < 95_000)])
    after = rpm[t_us > 150_000]
    assert np.isfinite(after).all() and np.all(np.abs(after / before - 1.0) < 0.01)


def test_a_corrupt_first_message_is_skipped_too(scenes, tmp_path, capsys):
    # open_recording reads the first packet for the sensor size: a corrupt one there
    # ended the run with exit 2 before
    root, paths = scenes
    bad = bag_with_garbage(paths['rosbag2'], tmp_path / 'bad', 0,
                           b'\x00\x01\x00\x00' + b'\xff' * 7)
    assert main(['track', str(bad), '--params', str(root / 'rosbag2' / 'params.yaml'),
                 '--out', str(tmp_path / 'out')]) == 0
    err = capsys.readouterr().err
    assert err.count('warning: corrupt') == 1 and ' 0 on ' in err
    assert len(list(csv.DictReader((tmp_path / 'out' / 'rpm.csv').open()))) >= 295


def _shift_time_high(data: bytes, offset: int, kind: str, steps: int) -> bytes:
    """``data`` with every TIME_HIGH word in its second half moved on by ``steps`` (modular)."""
    dtype, code, bits = ('<u2', 12, 12) if kind == 'raw-evt3' else ('<u4', 28, 28)
    w = np.frombuffer(data, dtype, offset=offset).astype(np.int64)
    at = np.nonzero((w >> code) == 0x8)[0]
    at = at[at >= w.shape[0] // 2]
    mask = (1 << bits) - 1
    w[at] = (w[at] & ~mask) | ((w[at] + steps) & mask)
    return data[:offset] + w.astype(dtype).tobytes()


@pytest.mark.parametrize('kind', ['raw-evt3', 'raw-evt2'])
def test_a_raw_time_jump_of_half_the_range_is_cut_into_packets_on_both_sides(scenes, tmp_path,
                                                                             kind):
    # a step of exactly half the TIME_HIGH range reads as a step back past the stream's
    # start, which the decoders take as it stands (a restart); the cutter read it as a
    # negative time, took every later event for "no packet open yet", and so left the rest
    # of the file in packets of 2^20 words that the tracker dropped as corrupt
    root, paths = scenes
    bits = 12 if kind == 'raw-evt3' else 28
    head = read_raw_header(paths[kind])
    clean = list(iter_raw_packets(paths[kind]))
    bad = tmp_path / 'jump.raw'
    bad.write_bytes(_shift_time_high(paths[kind].read_bytes(), head.data_offset, kind,
                                     1 << (bits - 1)))
    jumped = list(iter_raw_packets(bad))
    assert sum(len(p.events) for p in jumped) == sum(len(p.events) for p in clean)
    # until two more TIME_HIGH words confirm the far step (8 ms in EVT 3.0) the cutter holds
    # its old time, so those few milliseconds go in one or two packets; the rest is cut in 1 ms
    assert len(jumped) >= len(clean) - 10
    sizes = sorted(len(p.events) for p in jumped)
    assert sizes[-3] <= 2 * max(len(p.events) for p in clean)


def test_the_events_of_corrupt_packets_dropped_are_counted(scenes, tmp_path, capsys):
    # the packets around a leap of 8.4 s are dropped as corrupt until the leap persists:
    # the summary says how many events they held (before, only how many packets)
    root, paths = scenes
    head = read_raw_header(paths['raw-evt3'])
    bad = tmp_path / 'jump.raw'
    data = _shift_time_high(paths['raw-evt3'].read_bytes(), head.data_offset, 'raw-evt3',
                            1 << 11)
    bad.write_bytes(data)
    words = np.frombuffer(data, np.uint8, offset=head.data_offset)
    total = len(make_decoder('evt3', 1280, 720).decode(words).events.t_us)
    assert main(['track', str(bad), '--params', str(root / 'rosbag2' / 'params.yaml'),
                 '--out', str(tmp_path / 'out'), '-q']) == 0
    out = capsys.readouterr().out
    tracked = int(out.split(' events in ')[0].split()[-1])
    said = [line for line in out.splitlines() if line.startswith('also: ')]
    assert said and 'packets corrupt' in said[0], out
    dropped = int(said[0].split('packets corrupt ')[1].split('(')[1].split()[0])
    assert 0 < dropped <= total - tracked
