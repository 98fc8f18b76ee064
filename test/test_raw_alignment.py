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
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io import raw_alignment as ra
from helixtrack_ros.io.raw_file import RawFileWriter, iter_raw_packets, read_raw_header

ENCODERS = {'evt3': Evt3Encoder, 'evt2': Evt2Encoder}


def naive_window_counts(words: np.ndarray, encoding: str) -> np.ndarray:
    """The twin of the window kernel: unknown codes per WINDOW words, by numpy."""
    _, code_shift, unknown = ra.FORMATS[encoding]
    bad = unknown[(words.astype(np.int64) >> code_shift) & 0xF]
    pad = np.zeros(-(-words.size // ra.WINDOW) * ra.WINDOW, np.int64)
    pad[:words.size] = bad
    return pad.reshape(-1, ra.WINDOW).sum(axis=1)


@pytest.mark.parametrize('encoding', ['evt3', 'evt2'])
@pytest.mark.parametrize('n', [0, 1, 63, 64, 65, 1000])
def test_window_counts_match_their_numpy_twin(encoding, n):
    dtype = ra.FORMATS[encoding][0]
    words = np.random.default_rng(n).integers(0, 1 << (8 * dtype.itemsize), n).astype(dtype)
    np.testing.assert_array_equal(ra.window_unknown_counts(words, encoding),
                                  naive_window_counts(words, encoding))


def test_window_counts_refuse_words_of_the_other_width():
    with pytest.raises(ValueError, match='evt2 words must be'):
        ra.window_unknown_counts(np.zeros(4, '<u2'), 'evt2')


def write_stream(path: Path, encoding: str, seed: int = 4) -> None:
    """About 60k events over 0.2 s, as a .raw file, encoded 1 ms at a time."""
    rng = np.random.default_rng(seed)
    n = 60_000
    ev = EventArrays(random_times(rng, n, 1000, 3.3, 0).astype(np.int64),
                     rng.integers(0, 1280, n).astype(np.uint16),
                     rng.integers(0, 720, n).astype(np.uint16),
                     rng.integers(0, 2, n).astype(np.uint8))
    enc = ENCODERS[encoding]()
    with RawFileWriter(path, encoding, 1280, 720) as w:
        for lo in range(0, n, 300):
            w.write(enc.encode(EventArrays(ev.t_us[lo:lo + 300], ev.x[lo:lo + 300],
                                           ev.y[lo:lo + 300], ev.p[lo:lo + 300])))


def read_events(path: Path, notices: list) -> Counter:
    """Every event of the file as (t, x, y, p), read in 4 kB chunks."""
    header = read_raw_header(path)
    dec = make_decoder(header.encoding, header.width, header.height)
    out = Counter()
    for pkt in iter_raw_packets(path, chunk_bytes=4096, on_notice=notices.append):
        ev = dec.decode(pkt.events).events
        out.update(zip(ev.t_us.tolist(), ev.x.tolist(), ev.y.tolist(), ev.p.tolist()))
    return out


@pytest.mark.parametrize('encoding,n_bytes', [('evt3', 1), ('evt3', 3), ('evt3', -1),
                                              ('evt2', 1), ('evt2', 2), ('evt2', 3),
                                              ('evt2', -2), ('evt2', 6)])
@pytest.mark.parametrize('where', [0.31, 0.77])
def test_bytes_inserted_or_lost_cost_only_the_events_beside_them(tmp_path, encoding,
                                                                  n_bytes, where):
    clean = tmp_path / 'clean.raw'
    write_stream(clean, encoding)
    data = bytearray(clean.read_bytes())
    at = int(len(data) * where)
    if n_bytes > 0:
        data[at:at] = bytes(range(0xB1, 0xB1 + n_bytes))
    else:
        del data[at:at - n_bytes]
    damaged = tmp_path / 'damaged.raw'
    damaged.write_bytes(bytes(data))
    notices = []
    ref, got = read_events(clean, []), read_events(damaged, notices)
    assert len(notices) == 1 and 'read on from byte' in notices[0]
    n_ref = sum(ref.values())
    assert n_ref > 50_000
    # the few words beside the damage are dropped; a time word among them leaves the
    # events up to the next one (at most a TIME_HIGH period) at the previous time
    wrong, missing = got - ref, ref - got
    t_off = [e[0] for e in wrong + missing] or [0]
    assert max(t_off) - min(t_off) < 2 * 4096, (wrong, missing, notices)
    assert sum(wrong.values()) + sum(missing.values()) < 0.01 * n_ref


def test_a_block_of_random_bytes_is_not_realigned(tmp_path):
    # overwritten, not shifted: no grid is clean in it, so it is left to the decoder
    clean = tmp_path / 'clean.raw'
    write_stream(clean, 'evt3')
    data = bytearray(clean.read_bytes())
    at = len(data) // 2
    data[at:at + 4000] = np.random.default_rng(1).integers(0, 256, 4000, np.uint8).tobytes()
    damaged = tmp_path / 'damaged.raw'
    damaged.write_bytes(bytes(data))
    notices = []
    read_events(damaged, notices)
    assert notices == []


def test_a_clean_stream_is_read_as_it_is():
    rng = np.random.default_rng(2)
    n = 20_000
    ev = EventArrays(random_times(rng, n, 0, 5.0, 0).astype(np.int64),
                     rng.integers(0, 640, n).astype(np.uint16),
                     rng.integers(0, 480, n).astype(np.uint16),
                     rng.integers(0, 2, n).astype(np.uint8))
    for encoding, enc in ENCODERS.items():
        data = bytes(enc().encode(ev))
        size = ra.FORMATS[encoding][0].itemsize
        n_words = len(data) // size
        assert ra.window_unknown_counts(np.frombuffer(data, ra.FORMATS[encoding][0]),
                                        encoding).max() == 0
        assert ra.find_realignment(data, n_words, encoding, True) == (n_words, n_words * size)
