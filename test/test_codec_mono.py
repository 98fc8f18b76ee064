# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The event_camera_msgs 'mono' encoding: layout, round trip, robustness."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.mono import encode_mono
from helixtrack_ros.core.events import EventArrays


def test_bit_layout_of_one_word():
    # p=1, y=719, x=1279, dt=123456 ns after a time base of 5 ms
    word = (1 << 63) | (719 << 48) | (1279 << 32) | 123456
    dec = make_decoder('mono', 1280, 720)
    pkt = dec.decode(np.array([word], '<u8').tobytes(), time_base=5_000_000)
    assert [a.tolist() for a in pkt.events] == [[5123], [1279], [719], [1]]
    assert len(pkt.trig_t_us) == 0
    ev = EventArrays(np.array([5123]), np.array([1279]), np.array([719]), np.array([1]))
    payload, tb = encode_mono(ev, time_base_ns=5_000_000 - 123)
    assert tb == 5_000_000 - 123
    assert int(np.frombuffer(payload, '<u8')[0]) == word - 123456 + 123000 + 123


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 500), big=st.booleans(),
       t0=st.integers(0, 10**12))
def test_round_trip(seed, n, big, t0):
    rng = np.random.default_rng(seed)
    t = t0 + np.sort(rng.integers(0, 4_000_000, n))
    ev = EventArrays(t.astype(np.int64), rng.integers(0, 1280, n).astype(np.uint16),
                     rng.integers(0, 720, n).astype(np.uint16),
                     rng.integers(0, 2, n).astype(np.uint8))
    payload, tb = encode_mono(ev, is_bigendian=big)
    dec = make_decoder('mono', 1280, 720)
    pkt = dec.decode(np.frombuffer(payload, np.uint8), is_bigendian=big, time_base=tb)
    for a, b in zip(pkt.events, ev, strict=True):
        np.testing.assert_array_equal(a, b)
    assert dec.counters['events'] == n and dec.counters['words'] == n


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=800), tb=st.integers(0, 2**62))
def test_random_bytes_never_break(data, tb):
    dec = make_decoder('mono', 640, 480)
    pkt = dec.decode(data, time_base=tb)
    assert len(pkt.events) <= len(data) // 8
    assert np.all(pkt.events.x < 640) and np.all(pkt.events.y < 480)
    assert np.all(np.diff(pkt.events.t_us) >= 0)
    c = dec.counters
    assert c['odd_bytes'] == len(data) % 8
    assert c['events'] + c['out_of_bounds'] == len(data) // 8


def test_out_of_bounds_clamp_and_errors():
    words = np.array([(5 << 48) | (700 << 32) | 2000, (1 << 48) | (3 << 32) | 1000,
                      (1 << 48) | (4 << 32) | 3000], '<u8')
    dec = make_decoder('mono', 640, 480)
    pkt = dec.decode(words.tobytes(), time_base=0)
    assert pkt.events.t_us.tolist() == [1, 3]
    dec2 = make_decoder('mono', 640, 480)
    pkt = dec2.decode(words[::-1].copy().tobytes())  # times 3, 1: second held at 3
    assert pkt.events.t_us.tolist() == [3, 3]
    assert dec2.counters['time_clamped'] == 1 and dec2.counters['out_of_bounds'] == 1
    with pytest.raises(ValueError, match='time_base'):
        dec.decode(b'', time_base=-1)
    ev = EventArrays(np.array([0, 5_000_000]), np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match='32'):
        encode_mono(ev)
    dec.reset()
    assert dec.counters['events'] == 0
