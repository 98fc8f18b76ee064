# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Checks the EVT 2.0 and EVT 3.0 codec tests share (decoders against their naive
twins, random bytes, encode -> decode round trips), written once."""

from hypothesis import HealthCheck, settings
import numpy as np

from helixtrack_ros.codecs import DecodedPacket, make_decoder
from helixtrack_ros.core.events import EventArrays

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def pack(dtype: str, ws: tuple[int, ...]) -> bytes:
    """The words ``ws`` as bytes of ``dtype`` (e.g. ``'<u4'``)."""
    return np.array(ws, dtype).tobytes()


def as_tuples(pkt: DecodedPacket) -> tuple[list, list]:
    """The events and the triggers of a packet as lists of tuples."""
    ev = list(zip(*(a.tolist() for a in pkt.events), strict=True))
    tr = list(zip(pkt.trig_t_us.tolist(), pkt.trig_value.tolist(), pkt.trig_id.tolist(),
                  strict=True))
    return ev, tr


def assert_same(a: EventArrays, b: EventArrays) -> None:
    """Every field of the two event arrays is equal."""
    for f in EventArrays._fields:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def assert_matches_twin(dec, naive, data: bytes, bounds: list[int], big: bool,
                        lost: bool = False) -> None:
    """Decode ``data`` cut at the word-aligned ``bounds`` with both; same packets and counters.

    With ``lost`` both are told after every packet that packets were lost.
    """
    start = 0
    for stop in bounds:
        chunk = data[start:stop]
        assert as_tuples(dec.decode(chunk, is_bigendian=big)) == naive.decode(chunk, big)
        if lost:
            dec.resync()
            naive.resync()
        start = stop
    assert dec.counters == naive.counters


def assert_every_prefix_matches_twin(encoding: str, naive_cls, data: bytes, word_bytes: int,
                                     width: int, height: int) -> None:
    """A stream torn at every byte: kernel and twin agree (the torn word is lost)."""
    for cut in range(len(data) + 1):
        dec = make_decoder(encoding, width, height)
        naive = naive_cls(width, height)
        first, rest = data[:cut], data[cut:]
        skip = (word_bytes - cut % word_bytes) % word_bytes  # the torn word's remaining bytes
        got = [as_tuples(dec.decode(first)), as_tuples(dec.decode(rest[skip:]))]
        want = [naive.decode(first), naive.decode(rest[skip:])]
        assert got == want
        assert dec.counters == naive.counters


def decode_random_bytes(encoding: str, chunks: tuple[bytes, ...], big: bool, width: int,
                        height: int, word_bytes: int,
                        events_per_word: int) -> tuple[object, list[DecodedPacket]]:
    """Decode arbitrary bytes: events in bounds, times back only at counted clock restarts.

    Returns the decoder and its packets (one per chunk).
    """
    dec = make_decoder(encoding, width, height)
    pkts = []
    for chunk in chunks:
        resets = dec.counters['time_resets']
        pkt = dec.decode(chunk, is_bigendian=big)
        ev = pkt.events
        assert len(ev) <= events_per_word * (len(chunk) // word_bytes)
        assert np.all(ev.x < width) and np.all(ev.y < height) and np.all(ev.p <= 1)
        # time goes back only where the sensor clock restarted (a far-back TIME_HIGH),
        # and each such restart is counted
        back = int(np.count_nonzero(np.diff(ev.t_us) < 0))
        assert back <= dec.counters['time_resets'] - resets and np.all(ev.t_us >= 0)
        assert len(pkt.trig_t_us) == len(pkt.trig_value) == len(pkt.trig_id)
        pkts.append(pkt)
    assert dec.counters['words'] == sum(len(x) // word_bytes for x in chunks)
    return dec, pkts


def random_times(rng: np.random.Generator, n: int, t0: int, mean_dt: float,
                 gap_us: int) -> np.ndarray:
    """Non-decreasing times from ``t0``: bursts on shared timestamps, an optional silence."""
    dt = rng.geometric(1.0 / (1.0 + mean_dt), n) - 1
    if gap_us and n > 1:
        dt[n // 2] += gap_us
    if n:
        dt[0] = 0  # the stream starts at t0
    return t0 + np.cumsum(dt)


def assert_round_trip(encoder, encoding: str, size: tuple[int, int], ev: EventArrays,
                      n_trig: int, max_trig_id: int, cuts: list[float], seed: int,
                      wrap_bits: int) -> None:
    """Encode events and random triggers, decode them cut at word positions: all come back.

    The stream is clean: nothing is skipped, clamped or out of bounds, and the
    time wraps (every ``2**wrap_bits`` us) are counted.
    """
    rng = np.random.default_rng(seed)
    lo = int(ev.t_us[0]) if len(ev) else 0
    hi = int(ev.t_us[-1]) if len(ev) else 1000
    tt = np.sort(rng.integers(lo, hi + 1, n_trig))
    tv = rng.integers(0, 2, n_trig).astype(np.uint8)
    tid = rng.integers(0, max_trig_id + 1, n_trig).astype(np.uint8)
    payload = encoder.encode(ev, tt, tv, tid)
    word_bytes = encoder.FORMAT.word.itemsize
    assert len(payload) % word_bytes == 0
    # cut the word stream at arbitrary word positions
    n_words = len(payload) // word_bytes
    pos = sorted({int(c * n_words) * word_bytes for c in cuts})
    dec = make_decoder(encoding, *size)
    bounds = zip([0] + pos, pos + [len(payload)], strict=True)
    parts = [dec.decode(payload[a:b]) for a, b in bounds]
    assert_same(EventArrays.concatenate([p.events for p in parts]), ev)
    np.testing.assert_array_equal(np.concatenate([p.trig_t_us for p in parts]), tt)
    np.testing.assert_array_equal(np.concatenate([p.trig_value for p in parts]), tv)
    np.testing.assert_array_equal(np.concatenate([p.trig_id for p in parts]), tid)
    c = dec.counters
    assert c['events'] == len(ev) and c['triggers'] == n_trig
    assert c['out_of_bounds'] == c['skipped_unknown'] == c['before_time_high'] == 0
    assert c['time_backwards'] == c['time_clamped'] == 0
    assert c['time_wraps'] == (int(ev.t_us[-1]) >> wrap_bits if len(ev) else 0)


def assert_words_match_twin(encoding: str, naive_cls, dtype: str, ws: list, cuts: list,
                            big: bool, width: int, height: int, lost: bool) -> None:
    """The words ``ws`` (``dtype``, e.g. ``'u8'``) cut into packets near ``cuts``: kernel and
    twin agree (see :func:`assert_matches_twin`)."""
    data = np.array(ws, ('>' if big else '<') + dtype).tobytes()
    size = np.dtype(dtype).itemsize
    bounds = sorted({min(c - c % size, len(data)) for c in cuts}) + [len(data)]
    assert_matches_twin(make_decoder(encoding, width, height), naive_cls(width, height), data,
                        bounds, big, lost)


def assert_random_bytes_are_safe(encoding: str, data: bytes, big: bool, word_bytes: int,
                                 events_per_word: int) -> None:
    """Arbitrary bytes in four cuts: events in bounds, valid triggers, odd bytes counted."""
    chunks = (data, data[: len(data) // 3], data[1:], data[:7])
    dec, pkts = decode_random_bytes(encoding, chunks, big, 640, 480, word_bytes,
                                    events_per_word)
    for pkt in pkts:
        assert np.all(pkt.trig_id < 32) and np.all(pkt.trig_value <= 1)
    assert dec.counters['odd_bytes'] == sum(len(x) % word_bytes for x in chunks)


def given_words(words, max_size: int = 300, max_cut: int = 1200):
    """The hypothesis inputs of a word-level twin test (:func:`assert_words_match_twin`):
    lists of ``words``, cut points, byte order, sensor sizes from 64 x 32 up, lost packets."""
    from hypothesis import given
    from hypothesis import strategies as st
    return lambda test: FAST(given(
        ws=st.lists(words, max_size=max_size),
        cuts=st.lists(st.integers(0, max_cut), max_size=6), big=st.booleans(),
        w=st.sampled_from([64, 320, 2048]), h=st.sampled_from([32, 320]),
        lost=st.booleans())(test))
