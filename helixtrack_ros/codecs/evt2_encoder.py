# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 2.0 encoder, used by the simulator, tests and benchmarks.

The word stream follows the input order exactly, so that decoding gives back
the same events in the same order:

- ``EV_TIME_HIGH`` whenever bits 33..6 of the time change (the words carry
  the time modulo 2**34, so the wrap is crossed naturally); across a silence
  of ``TIME_HIGH_FILL_STEPS`` or more steps (71 min) intermediate TIME_HIGH
  words are written so that the decoder's wrap tracking (which accepts
  forward steps below 2**27) never becomes ambiguous;
- one ``CD_OFF``/``CD_ON`` word per event and one ``EXT_TRIGGER`` word per
  trigger event, merged by time (a trigger first on equal times).

The encoder is stateful: a stream encoded packet by packet decodes with one
decoder exactly as if it had been encoded at once. The first word of a stream
is a TIME_HIGH.
"""

import numpy as np

from helixtrack_ros.codecs.evt2 import (
    CD_OFF,
    CD_ON,
    EVT2_MAX_SIZE,
    EXT_TRIGGER,
    HIGH_MASK,
    LOW_BITS,
    TIME_HIGH,
)
from helixtrack_ros.codecs.stream_encoder import E_HIGH, E_T, StreamEncoder, WordFormat
from helixtrack_ros.core.jit import kernel

#: Longest gap between TIME_HIGH words the encoder leaves (TIME_HIGH steps).
TIME_HIGH_FILL_STEPS = 1 << 26


@kernel
def _evt2_encode(t, x, y, p, tr_t, tr_v, tr_id, state, out):
    """Write EVT 2.0 words of events and triggers into ``out``; returns the count."""
    n = t.shape[0]
    ntr = tr_t.shape[0]
    last_high = state[E_HIGH]
    k = 0
    i = 0
    j = 0
    while i < n or j < ntr:
        is_trig = j < ntr and (i >= n or tr_t[j] <= t[i])
        ti = tr_t[j] if is_trig else t[i]
        ah = ti >> LOW_BITS
        if ah != last_high:
            if last_high >= 0:
                while ah - last_high >= TIME_HIGH_FILL_STEPS:
                    last_high += TIME_HIGH_FILL_STEPS
                    out[k] = (TIME_HIGH << 28) | (last_high & HIGH_MASK)
                    k += 1
            out[k] = (TIME_HIGH << 28) | (ah & HIGH_MASK)
            k += 1
            last_high = ah
        low = ti & 0x3F
        if is_trig:
            out[k] = ((EXT_TRIGGER << 28) | (low << 22) | ((np.int64(tr_id[j]) & 0x1F) << 8)
                      | (np.int64(tr_v[j]) & 1))
            j += 1
        else:
            code = CD_ON if p[i] != 0 else CD_OFF
            out[k] = (code << 28) | (low << 22) | (np.int64(x[i]) << 11) | np.int64(y[i])
            i += 1
        k += 1
        state[E_T] = ti
    state[E_HIGH] = last_high
    return k


class Evt2Encoder(StreamEncoder):
    """Stateful EVT 2.0 encoder of one stream (see the module docstring): 32-bit words."""

    # an event or trigger needs at most a TIME_HIGH and its own word
    FORMAT = WordFormat('EVT 2.0', max_size=EVT2_MAX_SIZE, max_trig_id=31, low_bits=LOW_BITS,
                        fill_steps=TIME_HIGH_FILL_STEPS, words_per_event=2,
                        words_per_trigger=2, word=np.dtype('<u4'), n_state=2)
    _kernel = staticmethod(_evt2_encode)
