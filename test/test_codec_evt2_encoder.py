# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 2.0 encoder: encode -> decode identity (packets, wraps, gaps), stream shape, errors."""

from codec_checks import assert_round_trip, assert_same, random_times
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt2_encoder import TIME_HIGH_FILL_STEPS, Evt2Encoder
from helixtrack_ros.codecs.evt3_encoder import packetize
from helixtrack_ros.core.events import EventArrays

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
WRAP_BITS = 34
WRAP_US = 1 << WRAP_BITS


def make_stream(seed: int, n: int, t0: int, mean_dt: float, gap_us: int = 0,
                width: int = 640, height: int = 480) -> EventArrays:
    """Random events with bursts on shared timestamps and an optional silence."""
    rng = np.random.default_rng(seed)
    t = random_times(rng, n, t0, mean_dt, gap_us)
    return EventArrays(t.astype(np.int64),
                       rng.integers(0, width, n).astype(np.uint16),
                       rng.integers(0, height, n).astype(np.uint16),
                       rng.integers(0, 2, n).astype(np.uint8))


stream_args = st.fixed_dictionaries({
    'seed': st.integers(0, 2**32 - 1),
    'n': st.integers(0, 3000),
    't0': st.one_of(st.integers(0, 3_000_000), st.integers(WRAP_US - 40_000, WRAP_US - 1)),
    'mean_dt': st.sampled_from([0.0, 0.3, 2.0, 40.0, 5000.0]),
    'gap_us': st.sampled_from([0, 0, 3_000_000, 2 * 3600 * 10**6, 5 * 3600 * 10**6]),
})


@SETTINGS
@given(args=stream_args, n_trig=st.integers(0, 5), cuts=st.lists(st.floats(0, 1), max_size=8))
def test_encode_decode_identity(args, n_trig, cuts):
    assert_round_trip(Evt2Encoder(), 'evt2', (640, 480), make_stream(**args), n_trig, 31, cuts,
                      args['seed'] + 1, wrap_bits=WRAP_BITS)


@SETTINGS
@given(args=stream_args, packet_us=st.sampled_from([1, 50, 1000, 100_000]))
def test_packet_by_packet_equals_whole_stream(args, packet_us):
    ev = make_stream(**args)
    enc = Evt2Encoder()
    payloads = [enc.encode(ev.slice(a, b)) for a, b in packetize(ev.t_us, packet_us)]
    assert enc.last_t_us == (int(ev.t_us[-1]) if len(ev) else -1)
    assert b''.join(payloads) == Evt2Encoder().encode(ev)
    dec = make_decoder('evt2', 640, 480)
    got = EventArrays.concatenate([dec.decode(p).events for p in payloads] or
                                  [EventArrays.empty()])
    assert_same(got, ev)


def test_stream_shape_and_fill_words():
    ev = EventArrays(np.array([64 * 5 + 3, 64 * 5 + 3, 64 * 6], np.int64),
                     np.array([1, 2, 3], np.uint16), np.array([4, 5, 6], np.uint16),
                     np.array([1, 0, 1], np.uint8))
    w = np.frombuffer(Evt2Encoder().encode(ev), '<u4')
    assert [int(v) >> 28 for v in w] == [8, 1, 0, 8, 1]
    assert int(w[0]) & 0xFFFFFFF == 5 and (int(w[1]) >> 22) & 0x3F == 3
    # a silence longer than the fill step gets intermediate TIME_HIGH words
    t_gap = (2 * TIME_HIGH_FILL_STEPS + 7) * 64
    ev = EventArrays(np.array([0, t_gap], np.int64), np.zeros(2, np.uint16),
                     np.zeros(2, np.uint16), np.ones(2, np.uint8))
    w = np.frombuffer(Evt2Encoder().encode(ev), '<u4')
    assert sum(int(v) >> 28 == 8 for v in w) == 4
    dec = make_decoder('evt2', 640, 480)
    np.testing.assert_array_equal(dec.decode(w.tobytes()).events.t_us, [0, t_gap])


def test_encoder_refuses_bad_input():
    enc = Evt2Encoder()
    one = EventArrays(np.array([10], np.int64), np.array([1], np.uint16),
                      np.array([1], np.uint16), np.array([1], np.uint8))
    enc.encode(one)
    with pytest.raises(ValueError, match='non-decreasing'):
        enc.encode(EventArrays(np.array([9], np.int64), *one[1:]))
    with pytest.raises(ValueError, match='coordinates'):
        Evt2Encoder().encode(EventArrays(one.t_us, np.array([2048], np.uint16), *one[2:]))
    with pytest.raises(ValueError, match='trigger'):
        Evt2Encoder().encode(one, np.array([10]), np.array([2]))
    with pytest.raises(ValueError, match='elements'):
        Evt2Encoder().encode(one, np.array([10]), np.array([1, 1]))
    enc.reset()
    assert enc.last_t_us == -1
