# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 2.1 decoder: word semantics, counters, robustness (numba kernel vs naive twin)."""

import codec_checks as checks
from codec_checks import as_tuples, pack
from hypothesis import strategies as st
import numpy as np
from reference.naive_evt21 import NaiveEvt21Decoder

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt21 import Evt21Decoder, swap_halves

W, H = 64, 32  # small sensor so that random words often fall out of bounds


def words(*ws: int) -> bytes:
    return pack('<u8', ws)


def th(v: int) -> int:
    return (0x8 << 60) | (v << 32)


def vec(x: int, y: int, valid: int, low: int = 0, p: int = 1) -> int:
    return (p << 60) | (low << 54) | (x << 43) | (y << 32) | valid


def trig(low: int, ident: int, value: int) -> int:
    return (0xA << 60) | (low << 54) | (ident << 40) | (value << 32)


def test_every_word_type():
    dec = make_decoder('EVT21', W, H)
    assert isinstance(dec, Evt21Decoder)
    ev, tr = as_tuples(dec.decode(words(
        vec(1, 1, 1), 0xE << 60,                       # before any TIME_HIGH: discarded
        th(3), vec(5, 6, 0b101, 7, 0),                 # t = 3 * 64 + 7: x 5 and 7
        vec(32, 31, (1 << 31) | 1, 8),                 # x 32 in, x 63 in
        vec(48, 2, 1 << 16, 8),                        # x 64: out of bounds (W = 64)
        trig(9, 17, 1),                                # id 17 (5 bits), rising
        (0xE << 60) | 1, (0xF << 60) | 2,              # OTHERS, CONTINUED
        0x2 << 60, 0x9 << 60,                          # reserved codes
        th(4), vec(2, 3, 1, 0, 1),
    )))
    assert ev == [(199, 5, 6, 0), (199, 7, 6, 0), (200, 32, 31, 1), (200, 63, 31, 1),
                  (256, 2, 3, 1)]
    assert tr == [(201, 1, 17)]
    c = dec.counters
    assert c['before_time_high'] == 2 and c['skipped_other'] == 2
    assert c['skipped_unknown'] == 2 and c['out_of_bounds'] == 1 and c['events'] == 5


def test_the_upper_half_first_order_is_the_same_stream_swapped():
    ws = np.array([th(3), vec(5, 6, 0b11, 7, 1)], '<u8')
    assert np.array_equal(swap_halves(swap_halves(ws)), ws)
    assert swap_halves(ws)[1] == (0b11 << 32) | (vec(5, 6, 0, 7, 1) >> 32)


_codes = st.sampled_from([0x0, 0x1, 0x1, 0x0, 0x8, 0x8, 0xA, 0xE, 0xF, 0x2, 0x9])
_word = st.builds(lambda c, v: (c << 60) | v, _codes, st.integers(0, (1 << 60) - 1))
_small_word = st.builds(lambda c, lo, x, y, m: (c << 60) | (lo << 54) | (x << 43) | (y << 32) | m,
                        _codes, st.integers(0, 63),
                        st.sampled_from([0, 1, 5, 32, 63, 64, 700, 2047]),
                        st.sampled_from([0, 1, 5, 31, 32, 700, 2047]),
                        st.integers(0, (1 << 32) - 1))


@checks.given_words(st.one_of(_word, _small_word), 200, 1600)
def test_kernel_matches_naive_twin(ws, cuts, big, w, h, lost):
    checks.assert_words_match_twin('evt21', NaiveEvt21Decoder, 'u8', ws, cuts, big, w, h, lost)


def test_truncated_valid_stream_every_prefix():
    rng = np.random.default_rng(5)
    body = [th(5), vec(1, 2, 0b1011, 3), vec(40, 20, 1 << 30, 4, 0), trig(5, 2, 1), th(6),
            vec(3, 3, 1, 1), (0xE << 60) | 1, vec(70, 1, 1, 9)]
    data = words(*(body + list(rng.choice(body, 40))))
    checks.assert_every_prefix_matches_twin('evt21', NaiveEvt21Decoder, data, 8, W, H)


def test_encoder_round_trip_keeps_every_event_in_order():
    from codec_checks import random_times

    from helixtrack_ros.codecs.evt21_encoder import Evt21Encoder
    from helixtrack_ros.core.events import EventArrays
    rng = np.random.default_rng(3)
    n = 5000
    t = random_times(rng, n, 100, 0.3, 0).astype(np.int64)     # many events per us
    x = rng.integers(0, 64, n).astype(np.uint16)
    x[::3] = np.minimum(x[1::3][:len(x[::3])], 63)            # runs and repeated pixels
    ev = EventArrays(t, x, rng.integers(0, 4, n).astype(np.uint16),
                     rng.integers(0, 2, n).astype(np.uint8))
    payload = Evt21Encoder().encode(ev)
    assert len(payload) < 8 * (n + n // 10)                    # vectors: fewer words than events
    got = make_decoder('evt21', W, H).decode(payload).events
    for f in ev._fields:
        np.testing.assert_array_equal(getattr(got, f), getattr(ev, f), err_msg=f)
