# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Word alignment of ``.raw`` data: where it is lost, and the byte shift that restores it.

Bytes inserted into or dropped from a recording (a bad copy, a recorder that
lost part of a USB transfer) put every later word on the wrong byte grid.
Read that way, the words carry codes the format never uses (EVT 3.0: 0x1,
0x9, 0xB-0xD; EVT 2.0: ten of sixteen) in about a third of them or more,
while the sensor's own stream carries none. So a window of words with many
unknown codes marks the damage, and the one shift of 1 to ``size - 1`` bytes
after which the words are clean again restores the stream. A block of random
bytes (data overwritten, not shifted) has no clean shift and is left to the
decoder, which counts it as corrupt.
"""

import numpy as np

from helixtrack_ros.core.jit import kernel

#: words per window looked at
WINDOW = 64
#: unknown codes in a window that mark the grid as lost (an aligned stream has 0)
BAD_IN_WINDOW = 8
#: words read after the damage on each candidate shift
PROBE = 512
#: unknown codes a candidate shift may show in its probe (1 %)
PROBE_TOLERANCE = PROBE // 100

_EVT3_KNOWN = (0x0, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0xA, 0xE, 0xF)
_EVT2_KNOWN = (0x0, 0x1, 0x8, 0xA, 0xE, 0xF)


def _unknown_table(known: tuple[int, ...]) -> np.ndarray:
    table = np.ones(16, np.uint8)
    table[list(known)] = 0
    return table


#: encoding -> (word dtype, bit where the 4-bit code starts, 1 for each unknown code)
FORMATS = {'evt3': (np.dtype('<u2'), 12, _unknown_table(_EVT3_KNOWN)),
           'evt2': (np.dtype('<u4'), 28, _unknown_table(_EVT2_KNOWN))}


@kernel
def _window_unknown_counts(words, code_shift, unknown, window, out):
    """Count the words with an unknown code in each ``window`` words (the last may be short)."""
    for j in range(out.shape[0]):
        c = 0
        for k in range(j * window, min((j + 1) * window, words.shape[0])):
            c += unknown[(np.int64(words[k]) >> code_shift) & 0xF]
        out[j] = c


def window_unknown_counts(words: np.ndarray, encoding: str) -> np.ndarray:
    """Unknown codes per :data:`WINDOW` words of ``words`` (the last window may be short)."""
    dtype, code_shift, unknown = FORMATS[encoding]
    if words.dtype != dtype:
        raise ValueError(f'{encoding} words must be {dtype}, not {words.dtype}')
    out = np.empty(-(-words.shape[0] // WINDOW), np.int64)
    _window_unknown_counts(words, code_shift, unknown, WINDOW, out)
    return out


def _unknown(words: np.ndarray, encoding: str) -> np.ndarray:
    _, code_shift, unknown = FORMATS[encoding]
    return unknown[(words.astype(np.int64) >> code_shift) & 0xF].astype(bool)


def clean_shift(data: 'bytes | memoryview', at_byte: int, encoding: str) -> int:
    """The shift (1 to size - 1 bytes) after ``at_byte`` whose words are clean; 0: none.

    ``data`` must hold at least :data:`PROBE` words after ``at_byte`` + size.
    """
    dtype, _, _ = FORMATS[encoding]
    best, best_bad = 0, PROBE_TOLERANCE + 1
    for shift in range(1, dtype.itemsize):
        start = at_byte + shift
        words = np.frombuffer(data, dtype, PROBE, start)
        bad = int(_unknown(words, encoding).sum())
        if bad < best_bad:
            best, best_bad = shift, bad
    return best


def _shifted_clean_from(data: 'bytes | memoryview', lo: int, first: int, shift: int,
                        encoding: str) -> int:
    """First k >= ``lo`` from which the shifted grid's words before ``first`` are known."""
    dtype, _, _ = FORMATS[encoding]
    size = dtype.itemsize
    count = min(first - lo, (len(data) - shift) // size - lo)
    words = np.frombuffer(data, dtype, count, lo * size + shift)
    unknown = np.flatnonzero(_unknown(words, encoding))
    return lo + int(unknown[-1]) + 1 if unknown.size else lo


def find_realignment(data: 'bytes | memoryview', n_words: int, encoding: str,
                     more_follows: bool) -> tuple[int, int]:
    """Where the first ``n_words`` words of ``data`` lose their grid, and where they go on.

    Returns ``(keep, resume)``: the words before index ``keep`` are on the grid,
    and the stream goes on at byte ``resume``. Between the last unknown code on
    the new grid and the first on the old, either grid's words may be the
    damage's: both are dropped, a few words. ``resume == keep * size``: no
    shift; with ``keep < n_words`` the damage lies too near the end to test,
    so read again from ``keep`` once more data follow (only when
    ``more_follows``).
    """
    dtype, _, _ = FORMATS[encoding]
    size = dtype.itemsize
    words = np.frombuffer(data, dtype, n_words)
    counts = window_unknown_counts(words, encoding)
    for j in np.flatnonzero(counts >= BAD_IN_WINDOW).tolist():
        lo = max(0, (j - 1) * WINDOW)
        first = lo + int(np.argmax(_unknown(words[lo:(j + 1) * WINDOW], encoding)))
        if (first + 1 + PROBE) * size > len(data):
            if more_follows:
                return first, first * size
            break
        shift = clean_shift(data, first * size, encoding)
        if shift:
            return (_shifted_clean_from(data, lo, first, shift, encoding),
                    first * size + shift)
    return n_words, n_words * size
