# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 2.0 decoder: word semantics, counters, robustness (numba kernel vs naive twin).

Random bytes are also decoded as EVT 2.1, which shares the kernel.
"""

import codec_checks as checks
from codec_checks import FAST, as_tuples, pack
from hypothesis import given
from hypothesis import strategies as st
import numpy as np
import pytest
from reference.naive_evt2 import NaiveEvt2Decoder

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt2 import Evt2Decoder

W, H = 64, 32  # small sensor so that random words often fall out of bounds


def words(*ws: int) -> bytes:
    return pack('<u4', ws)


def th(v: int) -> int:
    return (0x8 << 28) | v


def cd(x: int, y: int, low: int = 0, p: int = 1) -> int:
    return (p << 28) | (low << 22) | (x << 11) | y


def trig(low: int, ident: int, value: int) -> int:
    return (0xA << 28) | (low << 22) | (ident << 8) | value


def test_registry():
    dec = make_decoder('EVT2', 320, 320)
    assert isinstance(dec, Evt2Decoder) and dec.encoding == 'evt2'
    for bad in ((0, 320), (4096, 320), (320.0, 320)):
        with pytest.raises(ValueError, match='width|height'):
            make_decoder('evt2', *bad)
    with pytest.raises(TypeError, match='uint8'):
        dec.decode(np.zeros(4, np.uint16))


def test_every_word_type():
    dec = make_decoder('evt2', W, H)
    ev, tr = as_tuples(dec.decode(words(
        cd(1, 1), 0xE0000000,                       # before any TIME_HIGH: discarded
        th(3), cd(5, 6, 7, 0), cd(63, 31, 8, 1),    # t = 3 * 64 + low
        trig(9, 17, 1),                             # id 17 (5 bits), rising
        0xE0000001, 0xF0000002,                     # OTHERS, CONTINUED
        0x20000000, 0x90000000, 0xB0000000,         # reserved codes
        cd(64, 0, 10), cd(0, 32, 10),               # out of bounds (W = 64, H = 32)
        th(4), cd(2, 3, 0, 1),
    ), time_base=123_456_789_000))
    assert ev == [(199, 5, 6, 0), (200, 63, 31, 1), (256, 2, 3, 1)]
    assert tr == [(201, 1, 17)]
    c = dec.counters
    assert c['before_time_high'] == 2 and c['skipped_other'] == 2
    assert c['skipped_unknown'] == 3 and c['out_of_bounds'] == 2
    assert c['events'] == 3 and c['triggers'] == 1 and c['words'] == 15 and c['packets'] == 1


def test_state_carried_across_packets_and_reset():
    dec = make_decoder('evt2', W, H)
    dec.decode(words(th(2)))
    ev, _ = as_tuples(dec.decode(words(cd(4, 5, 1))))
    assert ev == [(129, 4, 5, 1)]
    dec.reset()
    assert dec.counters['events'] == 0
    assert as_tuples(dec.decode(words(cd(4, 5, 1))))[0] == []
    assert dec.counters['before_time_high'] == 1


def test_34_bit_wrap_backward_glitch_and_clock_restart():
    top = (1 << 28) - 1
    dec = make_decoder('evt2', W, H)
    ev, _ = as_tuples(dec.decode(words(
        th(top - 1), cd(1, 1, 5),
        th(top), cd(2, 1, 0), cd(3, 1, 1),
        th(top - 1), cd(4, 1, 63),   # one step back: a glitch, held at the latest time
        th(0), cd(5, 1, 2),          # the 34-bit wrap
        th(1), cd(6, 1, 1), cd(7, 1, 0),  # low bits back inside one TIME_HIGH: held
        th(2), cd(8, 1, 3))))
    w34 = 1 << 34
    assert [e[0] for e in ev] == [(top - 1) * 64 + 5, top * 64, top * 64 + 1, top * 64 + 1,
                                  w34 + 2, w34 + 65, w34 + 65, w34 + 131]
    c = dec.counters
    assert c['time_wraps'] == 1 and c['time_backwards'] == 1 and c['time_clamped'] == 2
    assert c['time_resets'] == 0
    # 2003 steps (128 ms) back: the clock restarted, times decrease there
    ev, _ = as_tuples(dec.decode(words(th(top - 2000), cd(1, 1, 0))))
    assert ev == [(w34 + (2 - 2003) * 64, 1, 1, 1)]
    assert dec.counters['time_resets'] == 1 and dec.counters['time_wraps'] == 1


def test_resync_skips_until_the_next_time_high():
    dec = make_decoder('evt2', W, H)
    dec.decode(words(th(10), cd(1, 1, 3)))
    dec.resync()
    ev, _ = as_tuples(dec.decode(words(cd(2, 2, 4), cd(3, 3, 5), th(12), cd(4, 4, 6))))
    assert ev == [(12 * 64 + 6, 4, 4, 1)]
    assert dec.counters['resync_skipped'] == 2 and dec.counters['before_time_high'] == 0
    # lost packets across the wrap: the time keeps going forward
    dec.resync()
    ev, _ = as_tuples(dec.decode(words(th(1), cd(5, 5, 0))))
    assert ev == [((1 << 34) + 64, 5, 5, 1)] and dec.counters['time_wraps'] == 1


def test_odd_bytes_big_endian_and_snapshot():
    dec = make_decoder('evt2', W, H)
    body = [th(1), cd(3, 4, 2, 0)]
    ev, _ = as_tuples(dec.decode(np.array(body, '>u4').tobytes() + b'\x01\x02',
                                 is_bigendian=True))
    assert ev == [(66, 3, 4, 0)]
    assert dec.counters['odd_bytes'] == 2 and dec.counters['words'] == 2
    snap = dec.snapshot()
    dec.decode(words(th(1000)))
    dec.restore(snap)
    assert as_tuples(dec.decode(words(cd(1, 1, 9))))[0] == [(73, 1, 1, 1)]


_codes = st.sampled_from([0x0, 0x1, 0x1, 0x0, 0x8, 0x8, 0xA, 0xE, 0xF, 0x2, 0x9])
_word = st.builds(lambda c, v: (c << 28) | v, _codes, st.integers(0, (1 << 28) - 1))
_small_word = st.builds(lambda c, lo, x, y: (c << 28) | (lo << 22) | (x << 11) | y, _codes,
                        st.integers(0, 63), st.sampled_from([0, 1, 5, 63, 64, 700, 2047]),
                        st.sampled_from([0, 1, 5, 31, 32, 700, 2047]))


@checks.given_words(st.one_of(_word, _small_word), 300, 1200)
def test_kernel_matches_naive_twin(ws, cuts, big, w, h, lost):
    checks.assert_words_match_twin('evt2', NaiveEvt2Decoder, 'u4', ws, cuts, big, w, h, lost)


@pytest.mark.parametrize('encoding,word_bytes,per_word', [('evt2', 4, 1), ('evt21', 8, 32)])
@FAST
@given(data=st.binary(max_size=4000), big=st.booleans())
def test_random_bytes_never_break(encoding, word_bytes, per_word, data, big):
    checks.assert_random_bytes_are_safe(encoding, data, big, word_bytes, per_word)


def test_truncated_valid_stream_every_prefix():
    rng = np.random.default_rng(5)
    body = [th(5), cd(1, 2, 3), cd(40, 20, 4, 0), trig(5, 2, 1), th(6), cd(3, 3, 1),
            0xE0000001, 0xF0000002, cd(70, 1, 9)]
    data = words(*(body + list(rng.choice(body, 60))))
    checks.assert_every_prefix_matches_twin('evt2', NaiveEvt2Decoder, data, 4, W, H)


def test_long_payload_in_chunks(monkeypatch):
    rng = np.random.default_rng(2)
    n = 5000
    cols = zip(rng.integers(0, W, n), rng.integers(0, H, n), np.sort(rng.integers(0, 64, n)))
    ws = [th(0)] + [cd(int(x), int(y), int(lo)) for x, y, lo in cols]
    ws[2500:2500] = [th(1)]
    data = words(*ws)
    whole = make_decoder('evt2', W, H)
    a = as_tuples(whole.decode(data))
    monkeypatch.setattr(Evt2Decoder, '_CHUNK_WORDS', 333)
    small = make_decoder('evt2', W, H)
    assert as_tuples(small.decode(data)) == a
    assert small.counters == whole.counters and whole.counters['events'] == n
