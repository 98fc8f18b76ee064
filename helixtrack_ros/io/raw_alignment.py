# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Word alignment of ``.raw`` data: where it is lost, and the byte shift that restores it.

Bytes inserted into or dropped from a recording (a bad copy, a recorder that
lost part of a USB transfer) put every later word on the wrong byte grid.
Read that way, the words carry codes the format never uses (EVT 3.0: 0x1,
0x9, 0xB-0xD; EVT 2.0: ten of sixteen): a third of them for events spread
over the sensor, a tenth or less for events in one small area. The sensor's
own stream carries none, so a window of words with a few unknown codes marks
the damage; it began after the last window before it without any. The one
shift of 1 to ``size - 1`` bytes after which the words are clean again
restores the stream. A block of random bytes (data overwritten, not
shifted) has no clean shift and is left to the decoder, which counts it as
corrupt. EVT 2.1 words on a wrong grid mostly carry a known code, but few
an event inside the sensor, so an event word outside it counts as unknown
too; a shift is taken only when no other looks clean.
"""

import numpy as np

from helixtrack_ros.codecs.evt21 import swap_halves
from helixtrack_ros.core.jit import kernel, kernel_inline

#: words per window looked at
WINDOW = 64
#: unknown codes in a window that mark the grid as lost (an aligned stream has 0)
BAD_IN_WINDOW = 2
#: words read after the damage on each candidate shift (fewer at the end of a file)
PROBE = 512
#: the fewest words a shift is judged on (the very end of a file)
PROBE_MIN = 32
#: words held back at the end of a read while more data follow, so that damage
#: near the end of a read is judged with the words after it
HOLD_BACK = PROBE + 2 * WINDOW

_EVT3_KNOWN = (0x0, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0xA, 0xE, 0xF)
_EVT2_KNOWN = (0x0, 0x1, 0x8, 0xA, 0xE, 0xF)


def _unknown_table(known: tuple[int, ...]) -> np.ndarray:
    table = np.ones(16, np.uint8)
    table[list(known)] = 0
    return table


#: word format as stored -> (word dtype, bit where the 4-bit code starts, 1 for each
#: unknown code); EVT 2.1 words come whole (GenX320) or upper half first (IMX636)
FORMATS = {'evt3': (np.dtype('<u2'), 12, _unknown_table(_EVT3_KNOWN)),
           'evt2': (np.dtype('<u4'), 28, _unknown_table(_EVT2_KNOWN)),
           'evt21': (np.dtype('<u8'), 60, _unknown_table(_EVT2_KNOWN)),
           'evt21_swapped': (np.dtype('<u8'), 28, _unknown_table(_EVT2_KNOWN))}
#: EVT 2.1 as stored -> bits of an event word's x and y. On a wrong grid most EVT 2.1
#: words carry a known code (it lands in an event mask's zero bytes), but few an x and
#: y inside the sensor: an event word outside it counts as unknown too.
_COORDS = {'evt21': (43, 32), 'evt21_swapped': (11, 0)}


@kernel_inline
def _is_unknown(w, code_shift, unknown, x_at, y_at, width, height):
    """1 if word w has an unknown code or is an event word with x (bits from ``x_at``) or y
    (from ``y_at``) outside the sensor; branch-free (no sensor check: width, height 2**30)."""
    code = (w >> code_shift) & 0xF
    outside = (((w >> x_at) & 0x7FF) >= width) | (((w >> y_at) & 0x7FF) >= height)
    return unknown[code] | (np.uint8(code <= 1) & np.uint8(outside))


@kernel_inline
def _count_unknown(words, lo, hi, code_shift, unknown, x_at, y_at, width, height):
    """The unknown words (:func:`_is_unknown`) among ``words[lo:hi]``."""
    c = 0
    for k in range(lo, hi):
        c += _is_unknown(np.int64(words[k]), code_shift, unknown, x_at, y_at, width, height)
    return c


@kernel
def _window_unknown_counts(words, code_shift, unknown, geo, window, out):
    """Count the unknown words in each ``window`` words (the last may be short); ``geo``:
    x bit, y bit, width, height (:func:`_geometry`)."""
    for j in range(out.shape[0]):
        out[j] = _count_unknown(words, j * window, min((j + 1) * window, words.shape[0]),
                                code_shift, unknown, geo[0], geo[1], geo[2], geo[3])


@kernel
def _first_bad_window(words, code_shift, unknown, geo, window, threshold, j0, n_windows):
    """The first window j in j0 .. n_windows - 1 with >= ``threshold`` unknown words; -1: none."""
    for j in range(j0, n_windows):
        if _count_unknown(words, j * window, min((j + 1) * window, words.shape[0]),
                          code_shift, unknown, geo[0], geo[1], geo[2], geo[3]) >= threshold:
            return j
    return -1


@kernel
def _unknown_flags(words, code_shift, unknown, geo, out):
    """out[k] = 1 where word k is unknown (:func:`_is_unknown`)."""
    for k in range(words.shape[0]):
        out[k] = _is_unknown(np.int64(words[k]), code_shift, unknown, geo[0], geo[1], geo[2],
                             geo[3])


def _geometry(encoding: str, size: tuple[int, int]) -> np.ndarray:
    """The ``geo`` of :func:`_window_unknown_counts` for a stored format and (width, height)."""
    if encoding not in _COORDS:
        return np.array([0, 0, 1 << 30, 1 << 30], np.int64)
    return np.array([*_COORDS[encoding], size[0], size[1]], np.int64)


def window_unknown_counts(words: np.ndarray, encoding: str,
                          size: tuple[int, int] = (2048, 2048)) -> np.ndarray:
    """Unknown words per :data:`WINDOW` words of ``words`` (the last window may be short);
    EVT 2.1 event words outside a sensor of ``size`` (width, height) count too."""
    dtype, code_shift, unknown = FORMATS[encoding]
    if words.dtype != dtype:
        raise ValueError(f'{encoding} words must be {dtype}, not {words.dtype}')
    out = np.empty(-(-words.shape[0] // WINDOW), np.int64)
    _window_unknown_counts(words, code_shift, unknown, _geometry(encoding, size), WINDOW, out)
    return out


def stored_format(encoding: str, data: 'bytes | memoryview', legacy: bool = False) -> str:
    """How ``encoding``'s words are stored, judged on the first words of ``data``.

    Only EVT 2.1 has a choice: whole 64-bit words (GenX320), or their upper
    32 bits first (IMX636; ``legacy``: the header says so, as Metavision
    writes ``endianness=legacy``). Else the order that reads more TIME_HIGH
    words with their unused lower 32 bits zero wins (read the other way, a
    TIME_HIGH is an event at (0, 0)); on a tie, the one with fewer unknown
    codes; then whole words.
    """
    if encoding != 'evt21':
        return encoding
    if legacy:
        return 'evt21_swapped'
    whole = np.frombuffer(data, '<u8', min(len(data) // 8, 4096))
    swapped = swap_halves(whole)
    scores = []
    for words in (whole, swapped):
        n_time_high = int(np.count_nonzero(((words >> np.uint64(60)) == 8)
                                           & ((words & np.uint64(0xFFFFFFFF)) == 0)))
        scores.append((n_time_high, -int(window_unknown_counts(words, 'evt21').sum())))
    return 'evt21_swapped' if scores[1] > scores[0] else 'evt21'


def _unknown(words: np.ndarray, encoding: str, size: tuple[int, int] = (2048, 2048)
             ) -> np.ndarray:
    """Which words are unknown (:func:`_is_unknown`), as booleans."""
    _, code_shift, unknown = FORMATS[encoding]
    out = np.empty(words.shape[0], np.uint8)
    _unknown_flags(words, code_shift, unknown, _geometry(encoding, size), out)
    return out.view(bool)


def clean_shift(data: 'bytes | memoryview', at_byte: int, encoding: str, n_probe: int,
                sensor: tuple[int, int] = (2048, 2048)) -> int:
    """The shift (1 to size - 1 bytes) after ``at_byte`` whose next ``n_probe`` words are
    clean (at most 1 % unknown) while every other shift's are not (over 5 %); 0: none.

    ``data`` must hold ``n_probe`` words after ``at_byte`` + size.
    """
    dtype, _, _ = FORMATS[encoding]
    bad = [int(_unknown(np.frombuffer(data, dtype, n_probe, at_byte + shift), encoding,
                        sensor).sum()) for shift in range(1, dtype.itemsize)]
    order = np.argsort(bad, kind='stable')
    if bad[order[0]] > n_probe // 100:
        return 0
    if len(bad) > 1 and bad[order[1]] <= n_probe // 20:
        return 0        # two grids look clean: no repair rather than a wrong one
    return int(order[0]) + 1


def _shifted_clean_from(data: 'bytes | memoryview', start: int, lo: int, first: int,
                        shift: int, encoding: str, sensor: tuple[int, int]) -> int:
    """First k >= ``lo`` from which the shifted grid's words before ``first`` are known."""
    dtype, _, _ = FORMATS[encoding]
    words = np.frombuffer(data, dtype, first - lo, start + lo * dtype.itemsize + shift)
    unknown = np.flatnonzero(_unknown(words, encoding, sensor))
    return lo + int(unknown[-1]) + 1 if unknown.size else lo


def _damage_start(words: np.ndarray, encoding: str, j: int, j_floor: int,
                  sensor: tuple[int, int]) -> int:
    """Index of the first unknown word of the damage that window j shows: the damage
    began after the last clean window before j (not before window ``j_floor``)."""
    lo = j
    while lo > j_floor and window_unknown_counts(words[(lo - 1) * WINDOW:lo * WINDOW],
                                                 encoding, sensor)[0] > 0:
        lo -= 1
    lo *= WINDOW
    return lo + int(np.argmax(_unknown(words[lo:(j + 1) * WINDOW], encoding, sensor)))


def find_realignment(data: 'bytes | memoryview', start: int, encoding: str,
                     more_follows: bool, sensor: tuple[int, int] = (2048, 2048)
                     ) -> tuple[int, int]:
    """Where the words of ``data`` from byte ``start`` on lose their grid, and where they go on.

    Returns ``(keep, resume)``: the ``keep`` words from ``start`` are on the
    grid; the stream goes on at byte ``resume`` of ``data`` (-1: the words
    after ``keep`` are to be read again with the next data, or, at the end
    of the file, are what is left). Between the last unknown word on the new
    grid and the first on the old, either grid's words may be the damage's:
    both are dropped, a few words. ``sensor`` (width, height) judges EVT 2.1
    event words.
    """
    dtype, code_shift, unknown = FORMATS[encoding]
    size = dtype.itemsize
    n = (len(data) - start) // size
    words = np.frombuffer(data, dtype, n, start)
    limit = max(0, n - HOLD_BACK) if more_follows else n    # words judged now
    n_windows = -(-limit // WINDOW)
    geo = _geometry(encoding, sensor)
    j, j_floor = 0, 0
    while True:
        j = _first_bad_window(words, code_shift, unknown, geo, WINDOW, BAD_IN_WINDOW, j,
                              n_windows)
        if j < 0:
            return limit, -1
        first = _damage_start(words, encoding, j, j_floor, sensor)
        n_probe = min(PROBE, n - first - 1)
        if n_probe >= PROBE_MIN:
            shift = clean_shift(data, start + first * size, encoding, n_probe, sensor)
            if shift:
                lo = max(first - WINDOW, j_floor * WINDOW)
                return (_shifted_clean_from(data, start, lo, first, shift, encoding, sensor),
                        start + first * size + shift)
        j_floor = j = j + 1      # not a shift (overwritten data): left to the decoder
