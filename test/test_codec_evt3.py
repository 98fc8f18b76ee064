# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 3.0 decoder: word semantics, counters, robustness (numba kernel vs naive twin)."""

import codec_checks as checks
from codec_checks import FAST, as_tuples, pack
from hypothesis import given
from hypothesis import strategies as st
import numpy as np
import pytest
from reference.naive_evt3 import NaiveEvt3Decoder

from helixtrack_ros.codecs import (
    SUPPORTED_ENCODINGS,
    UnsupportedEncodingError,
    make_decoder,
)

W, H = 64, 32  # small sensor so that random words often fall out of bounds


def words(*ws: int) -> bytes:
    return pack('<u2', ws)


def th(v: int) -> int:
    return 0x8000 | v


def tl(v: int) -> int:
    return 0x6000 | v


def ay(v: int) -> int:
    return 0x0000 | v


def ax(v: int, p: int = 1) -> int:
    return 0x2000 | (p << 11) | v


def test_registry_and_errors():
    assert SUPPORTED_ENCODINGS == ('evt3', 'evt2', 'evt21', 'libcaer', 'libcaer_cmp', 'mono')
    assert make_decoder('EVT3', 1280, 720).encoding == 'evt3'
    with pytest.raises(UnsupportedEncodingError,
                       match='evt3, evt2, evt21, libcaer, libcaer_cmp, mono') as err:
        make_decoder('evt4', 1280, 720)
    assert isinstance(err.value, ValueError)
    for bad in ((0, 720), (1280, 4096), (1280.0, 720)):
        with pytest.raises(ValueError, match='width|height'):
            make_decoder('evt3', *bad)
    dec = make_decoder('evt3', 1280, 720)
    with pytest.raises(TypeError, match='uint8'):
        dec.decode(np.zeros(4, np.uint16))
    with pytest.raises(TypeError, match='bytes'):
        dec.decode('abcd')


def test_every_word_type():
    dec = make_decoder('evt3', W, H)
    pkt = dec.decode(words(
        ay(3), ax(1),                       # before any TIME_HIGH: discarded
        th(1), tl(5), ay(2), ax(7, 0),      # t = 4096 + 5
        0x3000 | (1 << 11) | 10,            # VECT_BASE_X x=10 p=1
        0x4000 | 0b100000000101,            # VECT_12: x 10, 12, 21
        0x5000 | 0b10000001,                # VECT_8: x 22, 29 (base 22)
        0x7001, 0xE0FF, 0xF123,             # CONTINUED_4, OTHERS, CONTINUED_12
        0x9000, 0x1000, 0xB000,             # reserved codes
        0xA000 | (3 << 8) | 1,              # EXT_TRIGGER id 3 value 1
        tl(9), 0x3000 | 60,                 # VECT_BASE_X x=60 p=0
        0x4000 | 0b1111,                    # x 60..63 in, none out (W = 64)
        0x5000 | 0b1,                       # x 72: out of bounds
        ay(40), ax(1),                      # y 40 >= H: out of bounds
    ))
    ev, tr = as_tuples(pkt)
    t0, t1 = 4096 + 5, 4096 + 9
    assert ev == [(t0, 7, 2, 0), (t0, 10, 2, 1), (t0, 12, 2, 1), (t0, 21, 2, 1),
                  (t0, 22, 2, 1), (t0, 29, 2, 1),
                  (t1, 60, 2, 0), (t1, 61, 2, 0), (t1, 62, 2, 0), (t1, 63, 2, 0)]
    assert tr == [(t0, 1, 3)]
    c = dec.counters
    assert c['before_time_high'] == 2
    assert c['skipped_other'] == 3 and c['skipped_unknown'] == 3
    assert c['out_of_bounds'] == 2
    assert c['events'] == 10 and c['triggers'] == 1 and c['words'] == 22


def test_no_row_or_base_yet_drops_events():
    dec = make_decoder('evt3', W, H)
    ev, _ = as_tuples(dec.decode(words(th(0), tl(1), ax(3), 0x4000 | 1, ay(1), ax(4))))
    assert ev == [(1, 4, 1, 1)]
    assert dec.counters['out_of_bounds'] == 2


def test_state_carried_across_packets_and_reset():
    dec = make_decoder('evt3', W, H)
    dec.decode(words(th(2), tl(7), ay(5), 0x3000 | (1 << 11) | 4))
    ev, _ = as_tuples(dec.decode(words(0x4000 | 0b11, ax(9, 0))))
    t = 2 * 4096 + 7
    assert ev == [(t, 4, 5, 1), (t, 5, 5, 1), (t, 9, 5, 0)]
    dec.reset()
    assert dec.counters['events'] == 0
    ev, _ = as_tuples(dec.decode(words(ay(5), ax(1))))
    assert ev == [] and dec.counters['before_time_high'] == 2


def test_wrap_and_backward_glitch():
    dec = make_decoder('evt3', W, H)
    ev, _ = as_tuples(dec.decode(words(
        th(4094), tl(0), ay(0), ax(1),
        th(4095), tl(10), ax(2),
        th(4094), tl(20), ax(3),   # small backward step: a glitch, held at the last time
        th(4095), tl(30), ax(4),
        th(0), tl(5), ax(5),       # the 24-bit wrap
        th(1), tl(0), ax(6),
    )))
    ts = [e[0] for e in ev]
    w24 = 1 << 24
    assert ts == [4094 * 4096, 4095 * 4096 + 10, 4095 * 4096 + 10, 4095 * 4096 + 30,
                  w24 + 5, w24 + 4096]
    c = dec.counters
    assert c['time_backwards'] == 1 and c['time_wraps'] == 1 and c['time_clamped'] == 2


def test_backward_glitch_across_wrap_boundary():
    dec = make_decoder('evt3', W, H)
    ev, _ = as_tuples(dec.decode(words(
        th(4095), tl(0), ay(0), ax(1), th(1), tl(0), ax(2),
        th(4095), tl(100), ax(3),  # back across the wrap: not a second wrap
        th(2), tl(0), ax(4))))
    w24 = 1 << 24
    assert [e[0] for e in ev] == [4095 * 4096, w24 + 4096, w24 + 4096, w24 + 2 * 4096]
    assert dec.counters['time_wraps'] == 1


def test_odd_trailing_byte_counted():
    dec = make_decoder('evt3', W, H)
    ev, _ = as_tuples(dec.decode(words(th(0), tl(3), ay(1), ax(2)) + b'\x07'))
    assert ev == [(3, 2, 1, 1)]
    assert dec.counters['odd_bytes'] == 1 and dec.counters['words'] == 4
    assert len(dec.decode(b'').events) == 0
    assert len(dec.decode(b'\x01').events) == 0
    assert dec.counters['odd_bytes'] == 2


# words biased towards meaningful types, with random payloads
_codes = st.sampled_from([0x0, 0x2, 0x2, 0x3, 0x4, 0x4, 0x5, 0x6, 0x6, 0x8, 0x8, 0xA,
                          0x7, 0xE, 0xF, 0x9, 0x1])
_word = st.builds(lambda c, v: (c << 12) | v, _codes, st.integers(0, 0xFFF))
_small_word = st.builds(lambda c, v: (c << 12) | v, _codes,
                        st.sampled_from([0, 1, 2, 5, 31, 63, 64, 100, 0x800 | 3, 0xFFF,
                                         0xF00, 0x7FF]))


@FAST
@given(ws=st.lists(st.one_of(_word, _small_word), max_size=300),
       cuts=st.lists(st.integers(0, 600), max_size=6), big=st.booleans(),
       w=st.sampled_from([W, 1280, 2048]), h=st.sampled_from([H, 720]))
def test_kernel_matches_naive_twin(ws, cuts, big, w, h):
    data = np.array(ws, '>u2' if big else '<u2').tobytes()
    # the odd byte is dropped, not carried: cut on words
    bounds = [b - b % 2 for b in sorted({min(c, len(data)) for c in cuts})] + [len(data)]
    checks.assert_matches_twin(make_decoder('evt3', w, h), NaiveEvt3Decoder(w, h), data,
                               bounds, big)


@FAST
@given(data=st.binary(max_size=2000), big=st.booleans())
def test_random_bytes_never_break(data, big):
    chunks = (data, data[: len(data) // 3], data[1:])
    checks.decode_random_bytes('evt3', chunks, big, 1280, 720, 2, 12)


def test_decoder_accepts_large_all_vector_packet():
    # the worst case for the output bound: every word a full VECT_12
    body = [th(0), tl(1), ay(3), 0x3000] + [0x4FFF] * 5000
    dec = make_decoder('evt3', 2048, 16)
    pkt = dec.decode(words(*body))
    assert len(pkt.events) == 2048
    np.testing.assert_array_equal(pkt.events.x, np.arange(2048))
    assert dec.counters['out_of_bounds'] == 5000 * 12 - 2048


def test_truncated_valid_stream_every_prefix():
    rng = np.random.default_rng(11)
    body = [th(5), tl(1), ay(3), ax(4), 0x3000 | 8, 0x4000 | 0xA5A, 0x5000 | 0x81,
            0xA000 | 0x301, th(6), tl(2), ay(30), ax(60, 0), 0xE001, 0xF002]
    data = words(*(body + list(rng.choice(body, 40))))
    checks.assert_every_prefix_matches_twin('evt3', NaiveEvt3Decoder, data, 2, W, H)


def test_far_backward_step_is_a_clock_restart_not_a_clamp():
    dec = make_decoder('evt3', W, H)
    ev, _ = as_tuples(dec.decode(words(
        th(100), tl(0), ay(0), ax(1),
        th(99), tl(0), ax(2),      # one step back: a glitch, held
        th(3), tl(7), ax(3),       # 97 steps back (0.4 s): the clock restarted
        th(4), tl(0), ax(4))))
    assert [e[0] for e in ev] == [100 * 4096, 100 * 4096, 3 * 4096 + 7, 4 * 4096]
    c = dec.counters
    assert c['time_resets'] == 1 and c['time_backwards'] == 2



@pytest.mark.parametrize('encoding', ['evt3', 'mono'])
def test_decoding_into_a_batch_buffer_gives_the_same_events_back_to_back(encoding):
    from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
    from helixtrack_ros.codecs.mono import encode_mono
    from helixtrack_ros.core.events import EventArrays, EventBuffer
    rng = np.random.default_rng(3)
    n = 3000
    ev = EventArrays(np.sort(rng.integers(0, 5000, n)).astype(np.int64),
                     rng.integers(0, W, n).astype(np.uint16),
                     rng.integers(0, H, n).astype(np.uint16),
                     rng.integers(0, 2, n).astype(np.uint8))
    parts = [ev.slice(a, b) for a, b in ((0, 700), (700, 701), (701, 1900), (1900, n))]
    enc = Evt3Encoder()
    payloads = [encode_mono(q, 0)[0] if encoding == 'mono' else enc.encode(q) for q in parts]
    plain = make_decoder(encoding, W, H)
    expected = [plain.decode(pl).events for pl in payloads]
    # room for 12 events per word: decoded in place; everything fits after decoding;
    # the last packet does not fit; nothing fits
    for capacity in (100_000, n, 2000, 0):
        into = make_decoder(encoding, W, H)
        buf = EventBuffer(capacity)
        got = [into.decode(pl, out=buf).events for pl in payloads]
        for g, e in zip(got, expected):
            for a, b in zip(g, e):
                np.testing.assert_array_equal(a, b)
        joined = buf.joined(got)
        if capacity >= n:
            # one view over the whole batch, no copy
            assert joined is not None and np.shares_memory(joined.t_us, got[0].t_us)
            np.testing.assert_array_equal(joined.t_us, ev.t_us)
        else:
            assert joined is None
    # a refused packet is taken back: the next one follows the packet before it
    buf = EventBuffer(n)
    dec = make_decoder(encoding, W, H)
    first = dec.decode(payloads[0], out=buf).events
    mark = buf.n
    dec.decode(payloads[2], out=buf)
    buf.truncate(mark)
    second = dec.decode(payloads[1], out=buf).events
    assert buf.joined([first, second]) is not None
    assert buf.joined([second, first]) is None
    # reusable only once no view is left
    assert buf.in_use()
    del first, second
    assert not buf.in_use()
