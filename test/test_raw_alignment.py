# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Bytes inserted into or lost from a ``.raw`` file: the words are read on from the right grid."""

from collections import Counter
from pathlib import Path

from codec_checks import random_times
import numpy as np
import pytest

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt2_encoder import Evt2Encoder
from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
from helixtrack_ros.codecs.evt21 import swap_halves
from helixtrack_ros.codecs.evt21_encoder import Evt21Encoder
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io import raw_alignment as ra
from helixtrack_ros.io.raw_file import (
    RawFileWriter,
    iter_raw_packets,
    raw_header_text,
    read_raw_header,
)

ENCODERS = {'evt3': Evt3Encoder, 'evt2': Evt2Encoder, 'evt21': Evt21Encoder}


def naive_window_counts(words: np.ndarray, encoding: str, size=(2048, 2048)) -> np.ndarray:
    """The twin of the window kernel: unknown words per WINDOW words, word by word."""
    _, code_shift, unknown = ra.FORMATS[encoding]
    coords = {'evt21': (43, 32), 'evt21_swapped': (11, 0)}.get(encoding)
    bad = []
    for w in words.tolist():
        code = (w >> code_shift) & 0xF
        outside = coords is not None and code <= 1 and (
            (w >> coords[0]) & 0x7FF >= size[0] or (w >> coords[1]) & 0x7FF >= size[1])
        bad.append(int(unknown[code] or outside))
    pad = np.zeros(-(-words.size // ra.WINDOW) * ra.WINDOW, np.int64)
    pad[:words.size] = bad
    return pad.reshape(-1, ra.WINDOW).sum(axis=1)


@pytest.mark.parametrize('encoding', ['evt3', 'evt2', 'evt21', 'evt21_swapped'])
@pytest.mark.parametrize('n', [0, 1, 63, 64, 65, 1000])
def test_window_counts_match_their_twin(encoding, n):
    dtype = ra.FORMATS[encoding][0]
    rng = np.random.default_rng(n)
    words = (rng.integers(0, 1 << 32, n).astype(np.uint64) << np.uint64(32)
             | rng.integers(0, 1 << 32, n).astype(np.uint64)).astype(dtype)
    np.testing.assert_array_equal(ra.window_unknown_counts(words, encoding, (640, 480)),
                                  naive_window_counts(words, encoding, (640, 480)))


@pytest.mark.parametrize('threshold', [1, 2, 9])
def test_first_bad_window_matches_the_window_counts(threshold):
    words = np.zeros(1000, '<u2')
    rng = np.random.default_rng(threshold)
    words[rng.integers(0, 1000, 12)] = 0x9000          # unknown codes here and there
    counts = naive_window_counts(words, 'evt3')
    _, code_shift, unknown = ra.FORMATS['evt3']
    for j0 in range(counts.size + 1):
        want = next((j for j in range(j0, counts.size) if counts[j] >= threshold), -1)
        assert ra._first_bad_window(words, code_shift, unknown, ra._geometry('evt3', (64, 64)),
                                    ra.WINDOW, threshold, j0, counts.size) == want


def test_window_counts_refuse_words_of_the_other_width():
    with pytest.raises(ValueError, match='evt2 words must be'):
        ra.window_unknown_counts(np.zeros(4, '<u2'), 'evt2')


def write_stream(path: Path, encoding: str, seed: int = 4, roi: bool = False) -> bytes:
    """About 60k events over 0.2 s, as a .raw file, encoded 1 ms at a time; with ``roi``
    all in one 112 x 112 px area (a propeller's: few unknown codes on a wrong grid)."""
    rng = np.random.default_rng(seed)
    n = 60_000
    x0, y0, w, h = (544, 288, 112, 112) if roi else (0, 0, 1280, 720)
    ev = EventArrays(random_times(rng, n, 1000, 3.3, 0).astype(np.int64),
                     rng.integers(x0, x0 + w, n).astype(np.uint16),
                     rng.integers(y0, y0 + h, n).astype(np.uint16),
                     rng.integers(0, 2, n).astype(np.uint8))
    enc = ENCODERS[encoding]()
    with RawFileWriter(path, encoding, 1280, 720) as wr:
        for lo in range(0, n, 300):
            wr.write(enc.encode(EventArrays(ev.t_us[lo:lo + 300], ev.x[lo:lo + 300],
                                            ev.y[lo:lo + 300], ev.p[lo:lo + 300])))
    return path.read_bytes()


def read_events(path: Path, notices: list, chunk_bytes: int = 4096) -> Counter:
    """Every event of the file as (t, x, y, p)."""
    header = read_raw_header(path)
    dec = make_decoder(header.encoding, header.width, header.height)
    out = Counter()
    for pkt in iter_raw_packets(path, chunk_bytes=chunk_bytes, on_notice=notices.append):
        ev = dec.decode(pkt.events).events
        out.update(zip(ev.t_us.tolist(), ev.x.tolist(), ev.y.tolist(), ev.p.tolist()))
    return out


def damaged(clean: bytes, dest: Path, changes: list[tuple[int, int]]) -> Path:
    """``clean`` with n_bytes inserted (n > 0) or removed (n < 0) at each (at, n), last first."""
    data = bytearray(clean)
    for at, n_bytes in sorted(changes, reverse=True):
        if n_bytes > 0:
            data[at:at] = bytes(range(0xB1, 0xB1 + n_bytes))
        else:
            del data[at:at - n_bytes]
    dest.write_bytes(bytes(data))
    return dest


def assert_only_beside_damage(ref: Counter, got: Counter, n_damage: int = 1) -> None:
    """Events wrong or missing lie within a TIME_HIGH period of each damage, and are few.

    The few words beside the damage are dropped; a time word among them leaves the
    events up to the next one (EVT 3.0: at most 4096 us) at the time before.
    """
    n_ref = sum(ref.values())
    wrong, missing = got - ref, ref - got
    t_off = sorted(e[0] for e in (wrong + missing).elements())
    if t_off:
        spans = np.diff(t_off)
        assert np.sum(spans > 8192) < n_damage, (wrong, missing)   # clustered per damage
    assert sum(wrong.values()) + sum(missing.values()) < 0.01 * n_ref * n_damage


@pytest.mark.parametrize('encoding,n_bytes', [('evt3', 1), ('evt3', 3), ('evt3', -1),
                                              ('evt2', 1), ('evt2', 2), ('evt2', 3),
                                              ('evt2', -2), ('evt2', 6), ('evt21', 3),
                                              ('evt21', -4), ('evt21', 9)])
@pytest.mark.parametrize('where', [0.31, 0.77])
@pytest.mark.parametrize('roi', [False, True])
def test_bytes_inserted_or_lost_cost_only_the_events_beside_them(tmp_path, encoding, n_bytes,
                                                                  where, roi):
    clean = write_stream(tmp_path / 'clean.raw', encoding, roi=roi)
    bad = damaged(clean, tmp_path / 'damaged.raw', [(int(len(clean) * where), n_bytes)])
    notices = []
    ref, got = read_events(tmp_path / 'clean.raw', []), read_events(bad, notices)
    assert len(notices) == 1 and 'read on from byte' in notices[0]
    assert sum(ref.values()) > 50_000
    assert_only_beside_damage(ref, got)


def test_events_in_one_area_shifted_anywhere_lose_no_more(tmp_path):
    # events in one small area show few unknown codes on a wrong grid (a tenth, not a
    # third): the damage must be placed where it began, not where it became plain
    clean = write_stream(tmp_path / 'clean.raw', 'evt3', roi=True)
    ref = read_events(tmp_path / 'clean.raw', [])
    for at in np.random.default_rng(7).integers(1000, len(clean) - 1000, 12).tolist():
        notices = []
        got = read_events(damaged(clean, tmp_path / 'damaged.raw', [(at, 1)]), notices)
        assert len(notices) == 1, at
        assert_only_beside_damage(ref, got)


@pytest.mark.parametrize('chunk_bytes', [1, 7, 64, 4096])
def test_damage_is_found_whatever_the_reads(tmp_path, chunk_bytes):
    clean = write_stream(tmp_path / 'clean.raw', 'evt3')
    ref = read_events(tmp_path / 'clean.raw', [], chunk_bytes)
    offset = read_raw_header(tmp_path / 'clean.raw').data_offset
    # just before a read boundary, and in the last words of the file
    for at in (offset + 40 * 4096 - 32, len(clean) - 600):
        notices = []
        got = read_events(damaged(clean, tmp_path / 'damaged.raw', [(at, 1)]), notices,
                          chunk_bytes)
        assert len(notices) == 1, at
        assert_only_beside_damage(ref, got)


def test_damage_every_few_kilobytes_is_repaired_each_time(tmp_path):
    clean = write_stream(tmp_path / 'clean.raw', 'evt3')
    ref = read_events(tmp_path / 'clean.raw', [], 1 << 16)
    changes = [(at, 1) for at in range(20_000, len(clean) - 2000, 9000)]
    notices = []
    got = read_events(damaged(clean, tmp_path / 'damaged.raw', changes), notices, 1 << 16)
    assert len(notices) == len(changes)
    assert_only_beside_damage(ref, got, len(changes))


def test_a_block_of_random_bytes_is_not_realigned(tmp_path):
    # overwritten, not shifted: no grid is clean in it, so it is left to the decoder
    clean = tmp_path / 'clean.raw'
    write_stream(clean, 'evt3')
    data = bytearray(clean.read_bytes())
    at = len(data) // 2
    data[at:at + 4000] = np.random.default_rng(1).integers(0, 256, 4000, np.uint8).tobytes()
    bad = tmp_path / 'damaged.raw'
    bad.write_bytes(bytes(data))
    notices = []
    read_events(bad, notices)
    assert notices == []


def test_a_random_block_then_a_shift_is_realigned_after_the_block(tmp_path):
    # (decoded without the pipeline, the block's random TIME_HIGH words would move the
    # clock of every later event; the intake rolls them back: test_recordings)
    clean = write_stream(tmp_path / 'clean.raw', 'evt3')
    data = bytearray(clean)
    at = len(data) // 2
    data[at:at + 4000] = np.random.default_rng(1).integers(0, 256, 4000, np.uint8).tobytes()
    data.insert(at + 6000, 0xB1)
    bad = tmp_path / 'damaged.raw'
    bad.write_bytes(bytes(data))
    notices = []
    words = b''.join(bytes(p.events) for p in iter_raw_packets(bad, chunk_bytes=4096,
                                                                on_notice=notices.append))
    assert len(notices) == 1
    # the words after the inserted byte are the clean file's, on their grid
    assert words.endswith(clean[at + 6000 + 64:])


def test_a_clean_stream_is_read_as_it_is():
    rng = np.random.default_rng(2)
    n = 20_000
    ev = EventArrays(random_times(rng, n, 0, 5.0, 0).astype(np.int64),
                     rng.integers(0, 640, n).astype(np.uint16),
                     rng.integers(0, 480, n).astype(np.uint16),
                     rng.integers(0, 2, n).astype(np.uint8))
    for encoding, enc in ENCODERS.items():
        data = bytes(enc().encode(ev))
        n_words = len(data) // ra.FORMATS[encoding][0].itemsize
        assert ra.window_unknown_counts(np.frombuffer(data, ra.FORMATS[encoding][0]),
                                        encoding).max() == 0
        assert ra.find_realignment(data, 0, encoding, False) == (n_words, -1)
        assert ra.find_realignment(data, 0, encoding, True) == (n_words - ra.HOLD_BACK, -1)


def _evt21_file(path: Path, words: np.ndarray, imx636: bool, legacy_header: bool = False):
    head = raw_header_text('evt21', 1280, 720)
    if legacy_header:
        head = head.replace(b'width=1280', b'width=1280;endianness=legacy')
    body = swap_halves(words) if imx636 else words
    path.write_bytes(head + body.astype('<u8').tobytes())
    return path


@pytest.mark.parametrize('imx636', [False, True])
@pytest.mark.parametrize('start', ['quiet', 'low_bits', 'tiny'])
def test_evt21_word_order_is_told_from_the_time_words(tmp_path, imx636, start):
    # read the wrong way, an IMX636 TIME_HIGH is an event at (0, 0) and a one-event mask
    # in bits 0..27 a known code: both orders showed no unknown code and whole won
    th = lambda h: (8 << 60) | (h << 32)                              # noqa: E731
    ev = lambda h, x, bit: (1 << 60) | (3 << 54) | (x << 43) | (100 << 32) | (1 << bit)  # noqa: E731,E501
    if start == 'quiet':      # 320 ms without events, then events
        ws = [th(h) for h in range(5000)] + [ev(4999, 64, b) for b in range(20)]
    elif start == 'low_bits':
        ws = [w for h in range(1000) for w in (th(h), ev(h, 64, h % 28))]
    else:
        ws = [th(7), ev(7, 64, 0), ev(7, 96, 5)]
    path = _evt21_file(tmp_path / 'e.raw', np.array(ws, np.uint64), imx636)
    dec = make_decoder('evt21', 1280, 720)
    n = sum(len(dec.decode(p.events).events) for p in iter_raw_packets(path))
    assert n == sum(1 for w in ws if w >> 60 == 1)
    assert dec.counters['skipped_unknown'] == 0


def test_evt21_legacy_header_means_upper_half_first(tmp_path):
    ws = np.array([(8 << 60) | (5 << 32), (1 << 60) | (64 << 43) | (100 << 32) | 0b1011],
                  np.uint64)
    path = _evt21_file(tmp_path / 'e.raw', ws, imx636=True, legacy_header=True)
    assert read_raw_header(path).options['endianness'] == 'legacy'
    dec = make_decoder('evt21', 1280, 720)
    got = [e for p in iter_raw_packets(path) for e in zip(*dec.decode(p.events).events)]
    assert [(int(x), int(y)) for _, x, y, _ in got] == [(64, 100), (65, 100), (67, 100)]


def test_evt21_upper_half_first_is_repaired_too(tmp_path):
    clean = write_stream(tmp_path / 'whole.raw', 'evt21', roi=True)
    offset = read_raw_header(tmp_path / 'whole.raw').data_offset
    imx = clean[:offset] + swap_halves(np.frombuffer(clean[offset:], '<u8')).astype(
        '<u8').tobytes()
    (tmp_path / 'clean.raw').write_bytes(imx)
    ref = read_events(tmp_path / 'clean.raw', [])
    notices = []
    got = read_events(damaged(imx, tmp_path / 'damaged.raw', [(len(imx) // 2, 5)]), notices)
    assert len(notices) == 1
    assert_only_beside_damage(ref, got)
