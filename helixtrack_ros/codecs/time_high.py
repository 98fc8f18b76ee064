# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The time extension the EVT 2.0 and EVT 3.0 decoder kernels share.

Both formats send the high part of the time (``bits`` wide, wrapping) in
TIME_HIGH words only when it changes. A decoder keeps an absolute TIME_HIGH
count and moves it by the modular difference to each new TIME_HIGH: below
half the range a step forward (``time_wraps`` holds the highest wrap epoch
reached), anything else a step back (``time_backwards``), which, more than
``reset_steps`` back, is a restarted sensor clock (``time_resets``). Words
before the first TIME_HIGH of a stream are discarded (``before_time_high``),
and after lost packets (``resync``) those before the next one
(``resync_skipped``).

Both decoders keep the same two state slots first, ``S_HAVE_TH`` and ``S_ABS_HIGH``.
"""

import numpy as np

from helixtrack_ros.codecs import counter_slots as cs
from helixtrack_ros.core.jit import kernel_inline

S_HAVE_TH = 0   # 1 once the first TIME_HIGH was seen; 2: resynchronising (resync)
S_ABS_HIGH = 1  # absolute TIME_HIGH count (wraps included)

#: The TIME_HIGH word type code of both formats.
TIME_HIGH = 0x8


@kernel_inline
def find_time_high(words, code_shift, value_shift, bits, state, counters):
    """Index after the first TIME_HIGH word (-1: none), which sets ``state``'s count.

    The word type is at bit ``code_shift``, the TIME_HIGH value (``bits`` wide)
    at bit ``value_shift``.

    The words before it are counted as discarded. After lost packets the time
    went forward by the modular difference to the count held.
    """
    n = words.shape[0]
    i = 0
    while i < n and (words[i] >> code_shift) != TIME_HIGH:
        i += 1
    counters[cs.BEFORE if state[S_HAVE_TH] == 0 else cs.RESYNC] += i
    if i == n:
        return -1
    mask = (1 << bits) - 1
    h0 = (np.int64(words[i]) >> value_shift) & mask
    if state[S_HAVE_TH] == 2:
        h0 = state[S_ABS_HIGH] + ((h0 - state[S_ABS_HIGH]) & mask)
        if (h0 >> bits) > counters[cs.WRAPS]:
            counters[cs.WRAPS] = h0 >> bits
    state[S_HAVE_TH] = 1
    state[S_ABS_HIGH] = h0
    return i + 1


@kernel_inline
def step_time_high(abs_high, high, bits, reset_steps, counters):
    """The absolute count after a TIME_HIGH word carrying ``high``; True if the clock restarted."""
    mask = (1 << bits) - 1
    d = (high - abs_high) & mask
    if d < (1 << (bits - 1)):
        abs_high += d
        if (abs_high >> bits) > counters[cs.WRAPS]:  # a new wrap, not a re-crossing
            counters[cs.WRAPS] = abs_high >> bits
        return abs_high, False
    back = mask + 1 - d
    abs_high -= back
    counters[cs.BACK] += 1
    if abs_high < 0:
        # back past the stream's start: no clock does that, a damaged word does (a flipped
        # high bit read as a step back); its value is taken as it stands, a restart. (The
        # count stayed negative for good: every later event was held at the time of the
        # one before, and the rotors froze TRACKING; bad-input review.)
        abs_high = high
        counters[cs.RESETS] += 1
        return abs_high, True
    if back > reset_steps:  # far back: the clock restarted
        counters[cs.RESETS] += 1
        return abs_high, True
    return abs_high, False
