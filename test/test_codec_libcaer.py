# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""libcaer and libcaer_cmp decoders: word semantics, rollover, counters, robustness."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.libcaer import LibcaerCmpDecoder, LibcaerDecoder
from helixtrack_ros.codecs.libcaer_encoder import encode_libcaer, encode_libcaer_cmp
from helixtrack_ros.core.events import EventArrays, EventBuffer

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
W, H = 64, 32
TB = 1_700_000_000_000_000_123  # a time base [ns] with a sub-microsecond part
TB_US = TB // 1000
ROLL = 1 << 31


def caer(*evs: tuple) -> bytes:
    """libcaer payload of (x, y, p, ts[, valid]) tuples."""
    out = np.empty((len(evs), 2), '<u4')
    for i, e in enumerate(evs):
        x, y, p, ts = e[:4]
        valid = e[4] if len(e) > 4 else 1
        out[i] = ((x << 17) | (y << 2) | (p << 1) | valid, ts)
    return out.tobytes()


def cmpw(*ws: int) -> bytes:
    return np.array(ws, '<u2').tobytes()


def as_list(pkt):
    return list(zip(*(a.tolist() for a in pkt.events), strict=True))


def test_registry_and_geometry():
    assert isinstance(make_decoder('libcaer', 640, 480), LibcaerDecoder)
    assert isinstance(make_decoder('LIBCAER_CMP', 640, 480), LibcaerCmpDecoder)
    with pytest.raises(ValueError, match='width'):
        make_decoder('libcaer', 4096, 480)
    with pytest.raises(ValueError, match='time_base'):
        make_decoder('libcaer', 64, 32).decode(b'', time_base=-1)


def test_libcaer_fields_rollover_and_drops():
    dec = make_decoder('libcaer', W, H)
    pkt = dec.decode(caer(
        (3, 4, 1, ROLL - 5),
        (63, 31, 0, ROLL - 1),
        (1, 1, 1, 2),               # the 31-bit counter rolled over
        (2, 2, 1, 7, 0),            # not marked valid: skipped
        (64, 0, 1, 8), (0, 32, 1, 8),  # out of bounds
        (5, 5, 0, 1),               # a small step back: held
    ) + np.array([1, 0x80000000], '<u4').tobytes() + b'\x09', time_base=TB)
    assert as_list(pkt) == [(TB_US + ROLL - 5, 3, 4, 1), (TB_US + ROLL - 1, 63, 31, 0),
                            (TB_US + ROLL + 2, 1, 1, 1), (TB_US + ROLL + 2, 5, 5, 0)]
    c = dec.counters
    assert c['time_wraps'] == 1 and c['time_backwards'] == 1 and c['time_clamped'] == 1
    assert c['skipped_other'] == 1 and c['skipped_unknown'] == 1 and c['out_of_bounds'] == 2
    assert c['words'] == 8 and c['odd_bytes'] == 1 and c['events'] == 4
    # the next packet starts with its own time base; no rollover carried over
    assert as_list(dec.decode(caer((1, 2, 0, 3)), time_base=TB + ROLL * 1000)) == [
        (TB_US + ROLL + 3, 1, 2, 0)]


def test_libcaer_time_floor_and_restart():
    dec = make_decoder('libcaer', W, H)
    dec.decode(caer((1, 1, 1, 1000)), time_base=TB)
    # a packet a little earlier is held; far earlier is a restarted clock
    assert as_list(dec.decode(caer((1, 1, 1, 990)), time_base=TB))[0][0] == TB_US + 1000
    assert as_list(dec.decode(caer((1, 1, 1, 5)), time_base=TB - 10**9))[0][0] == \
        TB_US - 10**6 + 5
    c = dec.counters
    assert c['time_clamped'] == 1 and c['time_resets'] == 1
    snap = dec.snapshot()
    dec.decode(caer((1, 1, 1, 10**6)), time_base=TB)
    dec.restore(snap)
    dec.resync()  # nothing to forget
    assert as_list(dec.decode(caer((1, 1, 1, 6)), time_base=TB - 10**9))[0][0] == \
        TB_US - 10**6 + 6


def test_cmp_every_word_type():
    dec = make_decoder('libcaer_cmp', W, H)
    pkt = dec.decode(cmpw(
        0x3000 | 5,                  # ADDR_Y before any ADDR_X: no column, dropped
        0x2000 | 7,                  # ADDR_X 7
        0x3000 | (1 << 11) | 5,      # event (7, 5) ON at time_base
        0x1000 | 10,                 # TIME_LOW 10
        0x4000 | 8,                  # VECT_BASE_Y 8, OFF
        0x5000 | 0b10000101,         # rows 8, 10, 15
        0x5000 | 0b1,                # base moved by 8: row 16
        0x0000 | 2,                  # TIME_HIGH 2
        0x2000 | 64,                 # ADDR_X out of the sensor
        0x3000 | 1,                  # dropped
        0x2000 | 1, 0x4000 | (1 << 11) | 24, 0x5000 | 0xFF,  # rows 24..31 in, none out
        0x6000, 0x7123, 0xF000,      # codes no driver sends
    ), time_base=TB)
    t1 = TB_US + 10
    t2 = TB_US + 2 * 4096 + 10
    assert as_list(pkt) == [(TB_US, 7, 5, 1), (t1, 7, 8, 0), (t1, 7, 10, 0), (t1, 7, 15, 0),
                            (t1, 7, 16, 0)] + [(t2, 1, y, 1) for y in range(24, 32)]
    c = dec.counters
    assert c['out_of_bounds'] == 2 and c['skipped_unknown'] == 3 and c['events'] == 13
    # the next packet starts afresh: no column yet, time 0 after its own time base
    assert as_list(dec.decode(cmpw(0x3000 | 1, 0x2000 | 2, 0x3000 | 1),
                              time_base=TB + 10**8)) == [(TB_US + 10**5, 2, 1, 0)]
    assert dec.counters['out_of_bounds'] == 3


def test_cmp_time_high_is_absolute_and_a_step_back_is_held():
    dec = make_decoder('libcaer_cmp', W, H)
    ev = as_list(dec.decode(cmpw(
        0x2000 | 1, 0x0000 | 4095, 0x3000 | 1,   # 16.77 s after time_base
        0x0000 | 4094, 0x3000 | 2,               # a step back (4 ms): held
        0x0000 | 4095, 0x1000 | 7, 0x3000 | 3), time_base=0))
    assert [e[0] for e in ev] == [4095 * 4096, 4095 * 4096, 4095 * 4096 + 7]
    c = dec.counters
    assert c['time_backwards'] == 1 and c['time_clamped'] == 1 and c['time_resets'] == 0
    with pytest.raises(ValueError, match='2\\*\\*24'):
        encode_libcaer_cmp(EventArrays(np.array([0, 1 << 24], np.int64),
                                       *(np.zeros(2, d) for d in (np.uint16, np.uint16,
                                                                  np.uint8))))


def _random_events(seed: int, n: int, width: int = 640, height: int = 480) -> EventArrays:
    rng = np.random.default_rng(seed)
    t = 5_000_000 + np.cumsum(rng.geometric(0.6, n) - 1)
    x = rng.integers(0, width, n)
    y = rng.integers(0, height, n)
    runs = rng.random(n) < 0.5  # same time, column, polarity and a row just below
    runs[:1] = False
    p = rng.integers(0, 2, n)
    for i in np.flatnonzero(runs):
        t[i], x[i], p[i] = t[i - 1], x[i - 1], p[i - 1]
        y[i] = min(y[i - 1] + rng.integers(1, 4), height - 1)
    return EventArrays(t.astype(np.int64), x.astype(np.uint16), y.astype(np.uint16),
                       p.astype(np.uint8))


@FAST
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 2000), big=st.booleans(),
       gap=st.sampled_from([0, 5000, 10_000_000]), tb_sub=st.integers(0, 999))
def test_round_trips(seed, n, big, gap, tb_sub):
    ev = _random_events(seed, n)
    if gap and n > 1:
        ev = EventArrays(ev.t_us + np.where(np.arange(n) >= n // 2, gap, 0), *ev[1:])
    for enc, name in ((encode_libcaer, 'libcaer'), (encode_libcaer_cmp, 'libcaer_cmp')):
        dec = make_decoder(name, 640, 480)
        base = None if n == 0 else int(ev.t_us[0]) * 1000 + tb_sub - (1000 if tb_sub else 0)
        payload, tb = enc(ev, base, is_bigendian=big)
        got = dec.decode(payload, big, tb).events
        for a, b in zip(got, ev, strict=True):
            np.testing.assert_array_equal(a, b)
        assert dec.counters['time_clamped'] == dec.counters['skipped_unknown'] == 0


@pytest.mark.parametrize('name', ['libcaer', 'libcaer_cmp'])
def test_decoding_into_a_batch_buffer_and_in_chunks(name, monkeypatch):
    ev = _random_events(3, 4000, W, H)
    enc = encode_libcaer if name == 'libcaer' else encode_libcaer_cmp
    parts = [ev.slice(a, b) for a, b in ((0, 700), (700, 701), (701, 4000))]
    payloads = [enc(q) for q in parts]
    plain = make_decoder(name, W, H)
    expected = [plain.decode(p, False, tb).events for p, tb in payloads]
    for capacity in (100_000, 4000, 0):
        buf = EventBuffer(capacity)
        dec = make_decoder(name, W, H)
        got = [dec.decode(p, False, tb, out=buf).events for p, tb in payloads]
        for g, e in zip(got, expected, strict=True):
            for a, b in zip(g, e, strict=True):
                np.testing.assert_array_equal(a, b)
        assert (buf.joined(got) is not None) == (capacity >= 4000)
    monkeypatch.setattr(type(plain), '_CHUNK_WORDS', 97)
    small = make_decoder(name, W, H)
    got = EventArrays.concatenate([small.decode(p, False, tb).events for p, tb in payloads])
    np.testing.assert_array_equal(got.t_us, ev.t_us)
    np.testing.assert_array_equal(got.y, ev.y)
    assert small.counters == plain.counters


@FAST
@given(data=st.binary(max_size=4000), big=st.booleans(),
       tb=st.integers(0, 2**63 - 1), name=st.sampled_from(['libcaer', 'libcaer_cmp']))
def test_random_bytes_never_break(data, big, tb, name):
    dec = make_decoder(name, 346, 260)
    per_word = 8 if name == 'libcaer' else 2
    for chunk in (data, data[: len(data) // 3], data[1:], data[:9]):
        resets = dec.counters['time_resets']
        ev = dec.decode(chunk, is_bigendian=big, time_base=tb).events
        assert len(ev) <= (len(chunk) // per_word) * (1 if name == 'libcaer' else 8)
        assert np.all(ev.x < 346) and np.all(ev.y < 260) and np.all(ev.p <= 1)
        back = int(np.count_nonzero(np.diff(ev.t_us) < 0))
        assert back <= dec.counters['time_resets'] - resets
    c = dec.counters
    chunks = (data, data[: len(data) // 3], data[1:], data[:9])
    assert c['words'] == sum(len(x) // per_word for x in chunks)
    assert c['odd_bytes'] == sum(len(x) % per_word for x in chunks)
    assert c['packets'] == 4
