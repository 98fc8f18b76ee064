# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 3.0 encoder: encode -> decode identity, stream shape, packetize."""

from codec_checks import assert_round_trip, assert_same, random_times
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from reference.naive_evt3 import NaiveEvt3Decoder

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
from helixtrack_ros.core.events import EventArrays

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
WRAP_BITS = 24
WRAP_US = 1 << WRAP_BITS


def make_stream(seed: int, n: int, t0: int, mean_dt: float, run_frac: float,
                width: int = 1280, height: int = 720, gap_us: int = 0) -> EventArrays:
    """Random sensor-like events: bursts on shared timestamps, row runs, optional gap."""
    rng = np.random.default_rng(seed)
    t = random_times(rng, n, t0, mean_dt, gap_us)  # t0 < 2**24: a decoder starts in epoch 0
    y = rng.integers(0, height, n)
    x = rng.integers(0, width, n)
    p = rng.integers(0, 2, n)
    run = rng.random(n) < run_frac  # continue the previous event's row run
    run[:1] = False
    for i in np.flatnonzero(run):
        t[i] = t[i - 1]
        y[i] = y[i - 1]
        p[i] = p[i - 1]
        x[i] = min(x[i - 1] + rng.integers(1, 14), width - 1)
    t = np.maximum.accumulate(t)
    return EventArrays(t.astype(np.int64), x.astype(np.uint16), y.astype(np.uint16),
                       p.astype(np.uint8))


stream_args = st.fixed_dictionaries({
    'seed': st.integers(0, 2**32 - 1),
    'n': st.integers(0, 3000),
    't0': st.one_of(st.integers(0, 3_000_000), st.integers(WRAP_US - 40_000, WRAP_US - 1)),
    'mean_dt': st.sampled_from([0.0, 0.3, 2.0, 40.0, 5000.0]),
    'run_frac': st.sampled_from([0.0, 0.5, 0.9]),
    'gap_us': st.sampled_from([0, 0, 3_000_000, 9_000_000, 20_000_000, 40_000_000]),
})


@SETTINGS
@given(args=stream_args, n_trig=st.integers(0, 5), cuts=st.lists(st.floats(0, 1), max_size=8))
def test_encode_decode_identity(args, n_trig, cuts):
    assert_round_trip(Evt3Encoder(), 'evt3', (1280, 720), make_stream(**args), n_trig, 15,
                      cuts, args['seed'] + 1, wrap_bits=WRAP_BITS)


@SETTINGS
@given(args=stream_args, packet_us=st.sampled_from([1, 50, 1000, 100_000]),
       max_events=st.sampled_from([None, 1, 7, 500]))
def test_stateful_packets_decode_like_one_stream(args, packet_us, max_events):
    ev = make_stream(**args)
    enc = Evt3Encoder()
    dec = make_decoder('evt3', 1280, 720)
    ranges = packetize(ev.t_us, packet_us, max_events)
    out = [dec.decode(enc.encode(ev.slice(a, b))).events for a, b in ranges]
    assert_same(EventArrays.concatenate(out), ev)


@settings(max_examples=40, deadline=None)
@given(args=stream_args)
def test_encoded_stream_agrees_with_naive_twin(args):
    args = dict(args, n=min(args['n'], 400))
    ev = make_stream(**args)
    payload = Evt3Encoder().encode(ev)
    naive_ev, _ = NaiveEvt3Decoder(1280, 720).decode(payload)
    assert naive_ev == list(zip(*(a.tolist() for a in ev), strict=True))


def test_stream_looks_like_imx636():
    ev = make_stream(3, 20000, 1000, 0.3, 0.8)
    payload = Evt3Encoder().encode(ev, np.array([int(ev.t_us[100])]))
    w = np.frombuffer(payload, '<u2')
    codes = np.bincount(w >> 12, minlength=16)
    assert w[0] >> 12 == 0x8  # starts with TIME_HIGH
    assert codes[0x3] > 0 and codes[0x4] > 0 and codes[0x5] > 0 and codes[0x2] > 0
    assert codes[0xA] == 1
    assert codes[[0x1, 0x7, 0x9, 0xB, 0xC, 0xD, 0xE, 0xF]].sum() == 0
    # TIME_LOW follows every TIME_HIGH (no filler needed in this stream)
    assert np.all(w[np.flatnonzero(w >> 12 == 0x8) + 1] >> 12 == 0x6)
    # vectors save words: fewer words than 3 per event
    assert len(w) < 3 * len(ev)


def test_long_silence_writes_filler_time_high():
    ev = EventArrays(np.array([10, 30_000_010], np.int64), np.array([1, 2], np.uint16),
                     np.array([3, 4], np.uint16), np.array([1, 0], np.uint8))
    payload = Evt3Encoder().encode(ev)
    w = np.frombuffer(payload, '<u2')
    assert np.count_nonzero(w >> 12 == 0x8) >= 1 + 30_000_000 // (1024 * 4096)
    dec = make_decoder('evt3', 1280, 720)
    assert_same(dec.decode(payload).events, ev)
    assert dec.counters['time_wraps'] == 1


def test_encoder_validates_input():
    enc = Evt3Encoder()
    one = EventArrays(np.array([5], np.int64), np.array([1], np.uint16),
                      np.array([1], np.uint16), np.array([1], np.uint8))
    with pytest.raises(ValueError, match='non-decreasing'):
        enc.encode(EventArrays(np.array([5, 4]), one.x.repeat(2), one.y.repeat(2),
                               one.p.repeat(2)))
    with pytest.raises(ValueError, match='>= 0'):
        enc.encode(EventArrays(np.array([-1]), one.x, one.y, one.p))
    with pytest.raises(ValueError, match='1-D'):
        enc.encode(EventArrays(one.t_us, one.x.repeat(2), one.y, one.p))
    with pytest.raises(ValueError, match='< 2048'):
        enc.encode(EventArrays(one.t_us, np.array([2048]), one.y, one.p))
    with pytest.raises(ValueError, match='trigger'):
        enc.encode(one, np.array([5]), np.array([2]))
    enc.encode(one)
    assert enc.last_t_us == 5
    with pytest.raises(ValueError, match='previous packet'):
        enc.encode(EventArrays(np.array([4]), one.x, one.y, one.p))
    enc.reset()
    assert enc.last_t_us == -1
    assert len(enc.encode(EventArrays.empty())) == 0


def test_packetize_like_driver():
    t = np.array([0, 10, 999, 1000, 1001, 5000, 5000, 5000, 7000], np.int64)
    assert packetize(t, 1000) == [(0, 3), (3, 5), (5, 8), (8, 9)]
    assert packetize(t, 1000, max_events=2) == [(0, 2), (2, 4), (4, 5), (5, 7), (7, 8),
                                                (8, 9)]
    assert packetize(np.empty(0, np.int64)) == []
    with pytest.raises(ValueError):
        packetize(t, 0)


def test_encoder_refuses_negative_coordinates():
    """A negative column used to wrap silently into a valid one when cast to uint16."""
    one = EventArrays(np.array([5], np.int64), np.array([-65535]), np.array([1], np.uint16),
                      np.array([1], np.uint8))
    with pytest.raises(ValueError, match='coordinates'):
        Evt3Encoder().encode(one)
