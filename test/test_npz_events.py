# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""numpy .npz files of events: what ``helixtrack events`` writes, tracked back."""

import re

from cli_scenes import rotor_rows, simulated
import numpy as np
import pytest

from helixtrack_ros.cli import main
from helixtrack_ros.io.npz_events import NpzEventsError, iter_npz_packets, read_npz_events


def test_events_written_by_the_events_command_track_as_the_bag(tmp_path_factory, tmp_path,
                                                               capsys):
    """``events`` keeps the sensor size; ``track`` of its file gives the bag's rotor rows
    (the stamps aside) and no stamp set aside (a first stamp of 0 would be one)."""
    scene = simulated(tmp_path_factory, 'lone_constant', 0.1, 6)
    assert main(['events', str(scene / 'events'), '-o', str(tmp_path / 'e.npz')]) == 0
    ev, width, height = read_npz_events(tmp_path / 'e.npz')
    assert (width, height) == (1280, 720) and len(ev) > 100_000
    capsys.readouterr()
    bag = rotor_rows(scene / 'events', scene, tmp_path / 'bag')
    assert rotor_rows(tmp_path / 'e.npz', scene, tmp_path / 'npz') == bag
    assert len(bag) == 100 and 'stamp jumps' not in capsys.readouterr().out


def test_unsorted_events_are_sorted_and_the_size_comes_from_them(tmp_path):
    rng = np.random.default_rng(2)
    t = rng.integers(0, 3000, 500)
    np.savez(tmp_path / 'u.npz', t_us=t, x=rng.integers(0, 300, 500),
             y=rng.integers(0, 200, 500), p=rng.integers(0, 2, 500))
    ev, width, height = read_npz_events(tmp_path / 'u.npz')
    assert np.array_equal(ev.t_us, np.sort(t))
    assert (width, height) == (int(ev.x.max()) + 1, int(ev.y.max()) + 1)
    pkts = list(iter_npz_packets(tmp_path / 'u.npz'))
    assert sum(len(p.events) // 8 for p in pkts) == 500 and pkts[0].stamp_ns >= 1


def _savez(path, **change):
    arrays = {'t_us': np.arange(3), 'x': np.arange(3), 'y': np.arange(3), 'p': np.ones(3)}
    np.savez(path, **{**arrays, **change})


def _ns_in_t_us(path):
    t = np.repeat(np.arange(2000) * 1000, 2) + 5000    # busy: two events per microsecond
    n = len(t)
    np.savez(path, t_us=t, x=np.zeros(n), y=np.zeros(n), p=np.ones(n))


def test_times_in_nanoseconds_are_read_from_t_ns(tmp_path):
    t = np.repeat(np.arange(2000) * 1000, 2) + 5000
    n = len(t)
    np.savez(tmp_path / 'ns.npz', t_ns=t + 999, x=np.zeros(n), y=np.zeros(n), p=np.ones(n))
    ev, _, _ = read_npz_events(tmp_path / 'ns.npz')
    assert np.array_equal(ev.t_us, t // 1000)
    us = t.copy()
    us[7] += 1        # one step of other than whole thousands: may be microseconds
    np.savez(tmp_path / 'us.npz', t_us=us, x=np.zeros(n), y=np.zeros(n), p=np.ones(n))
    assert np.array_equal(read_npz_events(tmp_path / 'us.npz')[0].t_us, us)
    np.savez(tmp_path / 'both.npz', t_us=t, t_ns=t, x=np.zeros(n), y=np.zeros(n),
             p=np.ones(n))
    with pytest.raises(NpzEventsError, match='both t_us and t_ns arrays'):
        read_npz_events(tmp_path / 'both.npz')


def test_polarity_minus_one_is_off_as_in_text_files(tmp_path):
    """(Formats review: -1 was read as ON, every event ON, without a word.)"""
    rng = np.random.default_rng(4)
    n = 2000
    t, x, y = np.sort(rng.integers(0, 5000, n)), rng.integers(0, 90, n), rng.integers(0, 60, n)
    p01 = rng.integers(0, 2, n)
    np.savez(tmp_path / 'pm1.npz', t_us=t, x=x, y=y, p=2 * p01 - 1)
    np.savez(tmp_path / 'b.npz', t_us=t, x=x, y=y, p=p01.astype(bool))
    for name in ('pm1.npz', 'b.npz'):
        assert np.array_equal(read_npz_events(tmp_path / name)[0].p, p01), name


def _coarse(path, scale):
    t = np.sort(np.random.default_rng(5).integers(0, 400_000, 20_000))
    t[-1] = 400_000
    n = len(t)
    np.savez(path, t_us=t / scale, x=np.zeros(n), y=np.zeros(n), p=np.ones(n))


@pytest.mark.parametrize('write, message', [
    # found by the formats review: seconds or milliseconds under t_us were floored, every
    # event at a few times, and the run ended "no rotor detected: give --params"
    (lambda p: _coarse(p, 1e6), 't_us cannot be microseconds (20000 events within 0.4 us'),
    (lambda p: _coarse(p, 1e3), 't_us cannot be microseconds (they run over 400 us only, '
     'most with a fraction)'),
    (lambda p: np.savez(p, t_us=np.arange(3), x=np.arange(3)), 'no y, p array'),
    (lambda p: np.savez(p, t_us=np.arange(3), x=np.arange(3), y=np.arange(2),
                        p=np.arange(3)), 'one length'),
    (lambda p: p.write_bytes(b'not a zip'), 'not a numpy .npz file (not a zip archive)'),
    # found by the adversarial review: tracebacks, or 75 % of the events refused one by one
    (lambda p: _savez(p, width=np.array([640, 480])), 'width must be one number'),
    (lambda p: _savez(p, t_us=np.array([0.0, np.nan, 2.0])), '1 time(s) that are not numbers'),
    (lambda p: _savez(p, t_us=np.array([0, 1, 1 << 62])), 'sensor times lie within'),
    (lambda p: _savez(p, t_us=np.array([-300, 1, 2])), 'shift them to start at 0'),
    (lambda p: _savez(p, t_us=np.array([0, 1, 2]) + 0j), 'must hold real numbers'),
    # nanoseconds in t_us: read as microseconds, 0.2 s of events took 200 s to track
    (lambda p: _savez(p, t_us=np.arange(3) + 1_700_000_000_000_000_000),
     't_us holds nanoseconds, not microseconds (the latest, 1.7e+18, is over 143 years'),
    (lambda p: _ns_in_t_us(p), 't_us holds nanoseconds, not microseconds (the 1999 steps '
     'between events are all whole multiples of 1000): save them as t_ns'),
    # found by a review: cast to uint16, inventing events (a CSV file refuses them)
    (lambda p: _savez(p, x=np.array([1.0, np.nan, 2.0])),
     'x must be whole pixel numbers 0..65535, got 1 other value(s), e.g. nan'),
    (lambda p: _savez(p, y=np.array([1.0, 2.5, 3.0])),
     'y must be whole pixel numbers 0..65535, got 1 other value(s), e.g. 2.5'),
    (lambda p: _savez(p, x=np.array([-3, 1, 2], np.int8)),
     'x must be whole pixel numbers 0..65535, got 1 other value(s), e.g. -3'),
    (lambda p: _savez(p, p=np.array([0.0, np.nan, 1.0])), 'p holds 1 value(s) that are no number'),
])
def test_a_bad_npz_file_is_one_line(tmp_path, capsys, write, message):
    path = tmp_path / 'bad.npz'
    write(path)
    with pytest.raises(NpzEventsError, match=re.escape(message)):
        read_npz_events(path)
    assert main(['track', str(path), '-o', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err
    assert 'Traceback' not in err and message in err


def test_a_chunk_directory_out_of_time_order_is_refused(tmp_path):
    t = np.arange(0, 20_000, 10)
    n = len(t)
    for k, start in enumerate((10_000, 0)):      # (the second chunk starts before the first)
        np.savez(tmp_path / f'events_{k:06d}.npz', t_us=t + start, x=np.zeros(n, int),
                 y=np.zeros(n, int), p=np.ones(n, int), width=64, height=48)
    with pytest.raises(NpzEventsError, match='not one recording in order'):
        list(iter_npz_packets(tmp_path))
