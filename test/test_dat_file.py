# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Prophesee DAT files: header, events, the 32-bit time's wrap, packets, the command line."""

from cli_scenes import rotor_rows, simulated
import numpy as np
import pytest

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.bags import iter_event_packets
from helixtrack_ros.io.dat_file import iter_dat_packets, read_dat_header, write_dat
from helixtrack_ros.io.raw_file import RawFileError, TruncatedRawError


def _events(n: int, seed: int = 0, t0: int = 0) -> EventArrays:
    rng = np.random.default_rng(seed)
    t = t0 + np.sort(rng.integers(0, 5000, n)).astype(np.int64)
    return EventArrays(t, rng.integers(0, 1280, n).astype(np.uint16),
                       rng.integers(0, 720, n).astype(np.uint16),
                       rng.integers(0, 2, n).astype(np.uint8))


def _decoded(path, notes=None) -> EventArrays:
    dec, parts = None, []
    for pkt in iter_dat_packets(path, on_notice=None if notes is None else notes.append):
        assert pkt.encoding == 'mono' and (pkt.width, pkt.height) == (1280, 720)
        dec = dec or make_decoder('mono', pkt.width, pkt.height)
        parts.append(dec.decode(pkt.events, time_base=pkt.time_base).events)
    return EventArrays.concatenate(parts)


def test_events_come_back_in_1_ms_packets(tmp_path):
    ev = _events(20_000)
    write_dat(tmp_path / 'a.dat', ev, 1280, 720)
    head = read_dat_header(tmp_path / 'a.dat')
    assert (head.width, head.height, head.n_events, head.tail_bytes) == (1280, 720, 20_000, 0)
    got = _decoded(tmp_path / 'a.dat')
    for k in ('t_us', 'x', 'y', 'p'):
        assert np.array_equal(getattr(got, k), getattr(ev, k)), k
    pkts = list(iter_dat_packets(tmp_path / 'a.dat'))
    assert [p.seq for p in pkts] == list(range(len(pkts))) and 4 <= len(pkts) <= 6
    stamps = [p.stamp_ns for p in pkts]
    assert stamps == sorted(stamps) and stamps[0] > 1.7e18    # the header's date


def test_the_32_bit_time_wraps_into_a_longer_time(tmp_path):
    """Times go on past 2**32 us (71.6 min); the file stores them modulo 2**32."""
    ev = _events(5000, t0=(1 << 32) - 2500)
    path = tmp_path / 'w.dat'
    wrapped = EventArrays(ev.t_us % (1 << 32), ev.x, ev.y, ev.p)
    write_dat(path, wrapped, 1280, 720)
    assert np.array_equal(_decoded(path).t_us, ev.t_us)


def test_a_time_far_ahead_is_left_out_not_read_as_a_wrap(tmp_path):
    """One damaged time 66 min ahead: read as a wrap, every later event would be 71.6 min
    late (adversarial review)."""
    ev = _events(5000)
    path = tmp_path / 'far.dat'
    k = 2500
    write_dat(path, EventArrays(*(np.insert(a, k, v) for a, v in zip(
        ev, (4_000_000_000, 5, 5, 1)))), 1280, 720)
    notes: list[str] = []
    got = _decoded(path, notes)
    for name in ('t_us', 'x', 'y', 'p'):
        assert np.array_equal(getattr(got, name), getattr(ev, name)), name
    assert len(notes) == 1 and f'from event {k}' in notes[0] and 'left out' in notes[0]


@pytest.mark.parametrize('case', ['first', 'behind', 'chunk_end'])
def test_damaged_times_anywhere_are_left_out_not_read_as_wraps(tmp_path, monkeypatch, case):
    """The first event's time, a time far behind once the recording is past 2**31 us, and
    a damaged time at the end of a read chunk were each still read as a wrap (review)."""
    import helixtrack_ros.io.dat_file as dat
    t0 = 3_000_000_000 if case == 'behind' else 0
    ev = _events(3000, t0=t0)
    k = {'first': 0, 'behind': 1500, 'chunk_end': 999}[case]
    bad_t = 5 if case == 'behind' else 3_500_000_000
    if case == 'chunk_end':
        monkeypatch.setattr(dat, '_CHUNK', 1000)
    path = tmp_path / f'{case}.dat'
    write_dat(path, EventArrays(*(np.insert(a, k, v) for a, v in zip(
        ev, (bad_t, 5, 5, 1)))), 1280, 720)
    notes: list[str] = []
    got = _decoded(path, notes)
    for name in ('t_us', 'x', 'y', 'p'):
        assert np.array_equal(getattr(got, name), getattr(ev, name)), name
    assert len(notes) == 1 and f'from event {k}' in notes[0] and 'left out' in notes[0]


@pytest.mark.parametrize('case', ['10 s ahead', 'bit 31', '0.5 s back'])
def test_a_short_run_away_and_back_is_left_out(tmp_path, case):
    """One time 10 s late held the rest of a recording at that time, and times with bit 31
    flipped (a step of 2**31 minus a few us) were read as 35 min of gap (review)."""
    ev = _events(6000, t0=1_000_000)
    t = ev.t_us.copy()
    at = [2000, 4000, 4001] if case == 'bit 31' else [3000]
    t[at] = {'10 s ahead': t[at] + 10_000_000, 'bit 31': t[at] | 1 << 31,
             '0.5 s back': t[at] - 500_000}[case]
    path = tmp_path / 'away.dat'
    write_dat(path, EventArrays(t, ev.x, ev.y, ev.p), 1280, 720)
    notes: list[str] = []
    got = _decoded(path, notes)
    keep = np.ones(6000, bool)
    keep[at] = False
    for name in ('t_us', 'x', 'y', 'p'):
        assert np.array_equal(getattr(got, name), getattr(ev, name)[keep]), name
    assert [n.split(' from')[0] for n in notes] == (
        ['1 event(s)', '2 event(s)'] if case == 'bit 31' else ['1 event(s)'])
    assert all('left out as damaged times' in n for n in notes)


def test_a_jump_that_stays_is_a_gap_and_a_run_across_the_wrap_keeps_it(tmp_path):
    """A gap of 10 s is kept (and a run back at the end is left out); a damaged time just
    before the wrap is left out and the wrap still counted."""
    ev = _events(3000)
    t = ev.t_us + np.where(np.arange(3000) >= 1000, 10_000_000, 0)
    t[-1] = 5                                               # a run back at the end
    path = tmp_path / 'gap.dat'
    write_dat(path, EventArrays(t, ev.x, ev.y, ev.p), 1280, 720)
    notes: list[str] = []
    assert np.array_equal(_decoded(path, notes).t_us, t[:-1])
    assert len(notes) == 1 and 'from event 2999' in notes[0]
    wrapped = _events(3000, t0=(1 << 32) - 2500)
    t = wrapped.t_us % (1 << 32)
    k = int(np.flatnonzero(t < 1 << 31)[0]) - 1             # the last time before the wrap
    t[k] = 123_456_789
    write_dat(path, EventArrays(t, wrapped.x, wrapped.y, wrapped.p), 1280, 720)
    keep = np.arange(3000) != k
    assert np.array_equal(_decoded(path, notes).t_us, wrapped.t_us[keep])


def test_events_out_of_time_order_are_sorted_and_said(tmp_path):
    ev = _events(5000)
    path = tmp_path / 'shuffled.dat'
    order = np.arange(5000)
    order[1000:1500] = order[1000:1500][::-1]
    write_dat(path, EventArrays(*(a[order] for a in ev)), 1280, 720)
    notes: list[str] = []
    got = _decoded(path, notes)
    assert np.array_equal(got.t_us, ev.t_us)
    rows = sorted(zip(*(a.tolist() for a in got)))
    assert rows == sorted(zip(*(a.tolist() for a in ev)))
    assert len(notes) == 1 and 'sorted by time' in notes[0]
    assert 'from event 1001' in notes[0] or 'from event 1000' in notes[0]


def test_a_header_without_size_takes_it_from_the_events(tmp_path):
    ev = _events(1000)
    path = tmp_path / 's.dat'
    write_dat(path, ev, 1280, 720)
    data = path.read_bytes().replace(b'% Width 1280\n', b'').replace(b'% Height 720\n', b'')
    path.write_bytes(data)
    head = read_dat_header(path)
    assert (head.width, head.height) == (int(ev.x.max()) + 1, int(ev.y.max()) + 1)


@pytest.mark.parametrize('change, message', [
    (lambda d: d.replace(bytes([12, 8]), bytes([14, 8]), 1), 'only CD events'),
    (lambda d: d[d.index(bytes([12, 8])):], 'not a DAT file'),
])
def test_a_file_of_other_events_or_no_header_is_refused(tmp_path, change, message):
    path = tmp_path / 'x.dat'
    write_dat(path, _events(100), 1280, 720)
    path.write_bytes(change(path.read_bytes()))
    with pytest.raises(RawFileError, match=message):
        read_dat_header(path)


def test_a_cut_file_gives_its_whole_events_then_says_so(tmp_path):
    path = tmp_path / 'c.dat'
    write_dat(path, _events(3000), 1280, 720)
    path.write_bytes(path.read_bytes()[:-3])
    got = []
    with pytest.raises(TruncatedRawError, match='5 bytes into an event'):
        for pkt in iter_dat_packets(path):
            got.append(pkt)
    assert sum(len(p.events) // 8 for p in got) == 2999


def test_track_of_a_dat_file_equals_track_of_the_bag(tmp_path_factory, tmp_path):
    """The same events as a DAT file and as the driver's bag give the same rotor rows
    (the stamps aside: the DAT file's come from its date)."""
    scene = simulated(tmp_path_factory, 'lone_constant', 0.1, 5)
    parts, dec = [], None
    for pkt in iter_event_packets(scene / 'events'):
        dec = dec or make_decoder(pkt.encoding, pkt.width, pkt.height)
        parts.append(dec.decode(pkt.events).events)
    write_dat(tmp_path / 'scene.dat', EventArrays.concatenate(parts), 1280, 720)
    bag = rotor_rows(scene / 'events', scene, tmp_path / 'bag')
    assert rotor_rows(tmp_path / 'scene.dat', scene, tmp_path / 'dat') == bag
    assert len(bag) == 100
