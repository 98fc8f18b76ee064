# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Text files of events (Metavision CSV, UZH-RPG events.txt, DV's CSV): tracked as the bag."""

import re

from cli_scenes import rotor_rows, simulated
import numpy as np
import pytest

from helixtrack_ros.cli import main
from helixtrack_ros.io.npz_events import read_npz_events
from helixtrack_ros.io.recordings import open_recording
from helixtrack_ros.io.text_events import TextEventsError, iter_text_packets, read_text_events


@pytest.fixture(scope='module')
def scene_events(tmp_path_factory):
    """A 0.1 s lone rotor: its folder and its decoded events."""
    scene = simulated(tmp_path_factory, 'lone_constant', 0.1, 6)
    npz = scene / 'e.npz'
    assert main(['events', str(scene / 'events'), '-o', str(npz)]) == 0
    return scene, read_npz_events(npz)[0]


def _write(path, header: str, columns, fmt, delimiter=','):
    with open(path, 'w') as fh:
        fh.write(header)
        np.savetxt(fh, np.column_stack(columns), fmt=fmt, delimiter=delimiter)


@pytest.mark.parametrize('layout', ['metavision', 'rpg', 'dv'])
def test_a_text_file_of_the_events_tracks_as_the_bag(scene_events, tmp_path, layout):
    """Each layout, its own way of saying the size, order and unit, gives the bag's rows."""
    scene, ev = scene_events
    t, x, y, p = ev.t_us, ev.x, ev.y, ev.p
    if layout == 'metavision':     # x,y,p,t in us after %geometry
        path = tmp_path / 'cd.csv'
        _write(path, '%geometry:1280,720\n', (x, y, p, t), '%d')
    elif layout == 'rpg':          # "width height", then t [s] x y p
        path = tmp_path / 'events.txt'
        _write(path, '1280 720\n', (t * 1e-6, x, y, p), ['%.6f', '%d', '%d', '%d'], ' ')
    else:                          # names, polarity as -1/1, sensor size from % lines
        path = tmp_path / 'dv.csv'
        _write(path, '% Width 1280\n% Height 720\ntimestamp,x,y,polarity\n',
               (t, x, y, 2 * p.astype(int) - 1), '%d')
    text = read_text_events(path)
    assert (text.width, text.height) == (1280, 720) and not text.notices
    assert np.array_equal(text.events.t_us, t) and np.array_equal(text.events.p, p)
    assert rotor_rows(path, scene, tmp_path / 'o') == rotor_rows(scene / 'events', scene,
                                                                 tmp_path / 'bag')


def test_quoted_column_names_and_windows_line_ends_are_read(tmp_path):
    (tmp_path / 'q.csv').write_bytes(b'"timestamp";"x";"y";"polarity"\r\n'
                                     b'10;1;2;1\r\n20;3;4;0\r\n')
    text = read_text_events(tmp_path / 'q.csv')
    assert text.events.t_us.tolist() == [10, 20] and text.events.p.tolist() == [1, 0]
    assert text.events.x.tolist() == [1, 3] and (text.width, text.height) == (4, 5)


def test_a_time_column_named_in_microseconds_keeps_its_fractions_as_such(tmp_path):
    """(Formats review: t_us of 12345.678 were read as seconds, 400,000 s of sensor time.)"""
    (tmp_path / 'f.csv').write_text('x,y,p,t_us\n1,2,1,12345.678\n3,4,0,12346.2\n'
                                    '5,6,1,13000.5\n')
    text = read_text_events(tmp_path / 'f.csv')
    assert text.events.t_us.tolist() == [12346, 12346, 13000]
    assert text.events.p.tolist() == [1, 0, 1]


def test_seconds_since_the_epoch_keep_microseconds(tmp_path):
    t_s = 1468939993.0 + np.array([0.000001, 0.000002, 0.5])
    _write(tmp_path / 'e.txt', '', (t_s, [1, 2, 3], [4, 5, 6], [1, 0, 1]),
           ['%.9f', '%d', '%d', '%d'], ' ')
    text = read_text_events(tmp_path / 'e.txt')
    assert text.events.t_us.tolist() == [1468939993000001, 1468939993000002, 1468939993500000]
    assert (text.width, text.height) == (4, 7)      # from the events


def test_unsorted_events_are_sorted_and_said(tmp_path):
    rng = np.random.default_rng(3)
    t = np.sort(rng.integers(0, 5000, 2000))
    t[100], t[101] = t[101] + 7, t[100]               # one pair swapped and apart
    _write(tmp_path / 'u.csv', '', (rng.integers(0, 64, 2000), rng.integers(0, 48, 2000),
                                    rng.integers(0, 2, 2000), t), '%d')
    notes = []
    pkts = list(iter_text_packets(tmp_path / 'u.csv', on_notice=notes.append))
    assert sum(len(pk.events) // 8 for pk in pkts) == 2000
    assert len(notes) == 1 and 'sorted by time' in notes[0]


@pytest.mark.parametrize('text, message', [
    ('0,1,2,3\n5,6,x,8\n', "line 2: '5,6,x,8' is not an event"),
    ('%geometry:64,48\n1,2,0,10\n1,2,0\n', "line 3: '1,2,0' is not an event"),
    ('t,x,y,brightness\n1,2,3,4\n', 'expected four named t'),
    ('1,2,5,10\n3,4,6,11\n', 'cannot tell which column is the time'),
    ('t,x,y,p\n-5,1,2,1\n3,4,5,0\n', 'sensor times lie within'),
    ('t,x,y,p\n5,1.5,2,1\n', 'x must be whole pixel numbers'),
    ('t,x,y,p\nnan,1,2,1\n', '1 time(s) are not numbers'),
    ('hello\n', "'hello' is neither events nor column names"),
    ('\x01' * 70_000, 'line 1 is longer than 65536 bytes'),          # a binary file
    ('1,2,0,5\n' + '7' * 70_000, "line 2: '777"),
])
def test_a_bad_text_file_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    path = tmp_path / 'bad.csv'
    path.write_text(text)
    with pytest.raises(TextEventsError, match=re.escape(message)):
        read_text_events(path)
    assert main(['track', str(path), '-o', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err
    assert 'Traceback' not in err and message in err and len(err.strip().splitlines()) == 1


def test_a_text_file_without_events_exits_1(tmp_path, capsys):
    for text in ('', 't,x,y,p\n'):
        path = tmp_path / 'none.txt'
        path.write_text(text)
        assert main(['track', str(path), '-q', '-o', str(tmp_path / 'o')]) == 1
        assert f'no rotor tracked: no event in {path}' in capsys.readouterr().err


def test_a_file_without_events_has_no_made_up_size(tmp_path, capsys):
    """An empty CSV (no line, or names only) or npz: no size (before: a 1 x 1 sensor, which
    ``events`` wrote into its npz); ``detect`` says there is no event and exits 1 without
    a parameter file (before: exit 2, 'no events at 0 s')."""
    none = np.empty(0, np.int64)
    np.savez(tmp_path / 'none.npz', t_us=none, x=none, y=none, p=none)
    (tmp_path / 'empty.csv').write_text('')
    (tmp_path / 'names.csv').write_text('t,x,y,p\n')
    for name in ('empty.csv', 'names.csv', 'none.npz'):
        path = tmp_path / name
        rec = open_recording(path)
        assert (rec.width, rec.height) == (None, None), name
        assert main(['events', str(path), '-q', '-o', str(tmp_path / 'e.npz')]) == 1
        with np.load(tmp_path / 'e.npz') as d:
            assert (int(d['width']), int(d['height'])) == (0, 0) and not len(d['t_us'])
        capsys.readouterr()
        params = tmp_path / 'p.yaml'
        assert main(['detect', str(path), '-q', '-o', str(params)]) == 1, name
        err = capsys.readouterr().err.strip()
        assert err == f'helixtrack: no event in {path}: nothing to detect, no parameter file ' \
            'written', name
        assert not params.exists()


def _sensor_times(n: int = 5000):
    """Times of a busy sensor in microseconds (some equal), and pixels."""
    rng = np.random.default_rng(9)
    t = np.sort(rng.integers(0, 200_000, n))
    return t, rng.integers(0, 64, n), rng.integers(0, 48, n), rng.integers(0, 2, n)


@pytest.mark.parametrize('header, offset_ns, why', [
    ('t,x,y,p\n', 0, 'steps between events are all whole multiples of 1000'),
    ('', 0, 'steps between events are all whole multiples of 1000'),   # x,y,p,t unnamed
    ('ts,x,y,p\n', 1_700_000_000_123_456_789, 'is over 143 years in microseconds'),
])
def test_nanosecond_times_are_read_as_such_and_said(tmp_path, capsys, header, offset_ns, why):
    """Event times in nanoseconds were read as microseconds: 0.2 s of events took 200 s to
    track, without a word; since the epoch, they were refused as beyond 143 years."""
    t, x, y, p = _sensor_times()
    columns = (t * 1000 + offset_ns, x, y, p) if header else (x, y, p, t * 1000 + offset_ns)
    _write(tmp_path / 'ns.csv', header, columns, '%d')
    text = read_text_events(tmp_path / 'ns.csv')
    assert np.array_equal(text.events.t_us, t + offset_ns // 1000)
    assert len(text.notices) == 1 and why in text.notices[0]
    assert 'name the time column t_us' in text.notices[0]
    assert main(['events', str(tmp_path / 'ns.csv'), '-q', '-o', str(tmp_path / 'e.npz')]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith('warning: the times are nanoseconds')


def test_microseconds_that_may_be_are_not_taken_for_nanoseconds(tmp_path):
    """A name with a unit is kept to; too few steps, or one step of other than whole
    thousands, leaves the times microseconds."""
    t, x, y, p = _sensor_times()
    _write(tmp_path / 'us.csv', 't_us,x,y,p\n', (t * 1000, x, y, p), '%d')   # named: us
    _write(tmp_path / 'ns.csv', 'timestamp_ns,x,y,p\n', (t * 1000 + 7, x, y, p), '%d')
    _write(tmp_path / 'few.csv', 't,x,y,p\n', (t[:900] * 1000, x[:900], y[:900], p[:900]),
           '%d')
    odd = t * 1000
    odd[2500] += 1
    _write(tmp_path / 'odd.csv', 't,x,y,p\n', (odd, x, y, p), '%d')
    for name, expected in (('us.csv', t * 1000), ('ns.csv', t), ('few.csv', t[:900] * 1000),
                           ('odd.csv', odd)):
        text = read_text_events(tmp_path / name)
        assert np.array_equal(text.events.t_us, expected) and not text.notices, name


def test_damaged_lines_are_left_out_and_said_once(tmp_path, capsys):
    """One bad line in many, a file cut mid-line, a fractional time among whole
    microseconds and a UTF-8 BOM each refused the file or read it as seconds (review)."""
    rng = np.random.default_rng(5)
    n = 3000
    t = np.sort(rng.integers(0, 100_000, n))
    lines = [f'{x},{y},{p},{tt}' for x, y, p, tt in zip(rng.integers(0, 64, n),
             rng.integers(0, 48, n), rng.integers(0, 2, n), t)]
    good = np.ones(n, bool)
    good[[10, 700, 2000]] = False
    lines[10], lines[700] = 'garbage,,x', lines[700].rsplit(',', 1)[0] + ',1.5'
    lines[2000] = lines[2000][:5]
    path = tmp_path / 'd.csv'
    path.write_bytes(b'\xef\xbb\xbf%geometry:64,48\n' + '\n'.join(lines).encode())
    text = read_text_events(path)
    assert np.array_equal(text.events.t_us, t[good]) and (text.width, text.height) == (64, 48)
    assert len(text.notices) == 2
    assert '2 line(s) are not events' in text.notices[1] and "line 12: 'garbage,,x'" in \
        text.notices[1]
    assert '1 event(s) have a time with a fraction (the first 1.5)' in text.notices[0]
    path.write_text('1,2,0,5\n1,2,0\n3,4,1,6\nx\n')         # half the lines: refused
    with pytest.raises(TextEventsError, match=r"line 2: '1,2,0' is not an event.*2 of 4"):
        read_text_events(path)


def test_microseconds_under_a_seconds_header_are_refused(tmp_path, capsys):
    """Found by a review: a ``t_s`` column holding whole microseconds read as a 33-hour
    recording and tracked for minutes; a few whole seconds in a real file still read."""
    n = 2000
    t = np.sort(np.random.default_rng(1).integers(0, 100_000, n))
    _write(tmp_path / 'us.csv', 'x,y,p,t_s\n', (np.arange(n) % 64, np.arange(n) % 48,
                                                 np.arange(n) % 2, t), '%d')
    message = 'microseconds? name the time column t_us'
    with pytest.raises(TextEventsError, match=re.escape(message)):
        read_text_events(tmp_path / 'us.csv')
    assert main(['track', str(tmp_path / 'us.csv'), '-q', '-o', str(tmp_path / 'o')]) == 2
    assert message in capsys.readouterr().err
    # seconds with fractions, a whole second among them: read
    secs = np.round(t * 1e-6, 6)
    secs[0] = 0.0
    cols = (np.arange(n) % 64, np.arange(n) % 48, np.arange(n) % 2, secs)
    _write(tmp_path / 's.csv', 'x,y,p,t_s\n', cols, ['%d', '%d', '%d', '%.6f'])
    assert len(read_text_events(tmp_path / 's.csv').events) == n


@pytest.mark.parametrize('line', ['%geometry:-3,-3', '%geometry:nan,inf', '% Width 99999999999',
                                  '%geometry:0,0'])
def test_a_size_line_that_gives_no_size_is_said(tmp_path, line):
    """Found by a review: such lines were ignored silently (the size came from the events
    without a word, or a width of 99999999999 was taken)."""
    n = 500
    _write(tmp_path / 'g.csv', line + '\n', (np.arange(n) % 64, np.arange(n) % 48,
                                             np.arange(n) % 2, np.arange(n) * 10), '%d')
    got = read_text_events(tmp_path / 'g.csv')
    assert (got.width, got.height) == (64, 48)
    assert any('gives no sensor size (whole numbers 1..65535): the size comes from the events'
               in note for note in got.notices), got.notices
    _write(tmp_path / 'ok.csv', '%geometry:100,80\n', (np.arange(n) % 64, np.arange(n) % 48,
                                                       np.arange(n) % 2, np.arange(n) * 10), '%d')
    ok = read_text_events(tmp_path / 'ok.csv')
    assert (ok.width, ok.height) == (100, 80) and not ok.notices


def test_a_compressed_text_file_is_refused_with_what_to_do(tmp_path, capsys):
    """(Formats review: a .csv.gz was "not a known recording", and gzip bytes named .csv
    were printed back as a line that is no event.)"""
    import gzip
    data = gzip.compress(b'x,y,p,t\n1,2,1,10\n3,4,0,20\n')
    (tmp_path / 'e.csv.gz').write_bytes(data)
    (tmp_path / 'gz.csv').write_bytes(data)
    assert main(['track', str(tmp_path / 'e.csv.gz'), '-o', str(tmp_path / 'o1')]) == 2
    assert 'a compressed file (.gz): decompress it first' in capsys.readouterr().err
    assert main(['track', str(tmp_path / 'gz.csv'), '-o', str(tmp_path / 'o2')]) == 2
    err = capsys.readouterr().err
    assert 'gzip-compressed: decompress it first' in err and '\\x1f' not in err
