# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Decoder of the Prophesee EVT 2.1 event stream (GenX320, IMX636): 64-bit vector words.

EVT 2.1 extends EVT 2.0 (:mod:`helixtrack_ros.codecs.evt2`) to 64-bit words,
each event word giving up to 32 events of one row and polarity; the top 4
bits give the word type:

====  ==============  ===========================================================
code  name            payload
====  ==============  ===========================================================
0x0   EVT_NEG         bits 59..54 time low (6 bits), 53..43 x, 42..32 y, 31..0
                      valid: bit i set is an event at (x + i, y)
0x1   EVT_POS         same layout, polarity 1
0x8   EVT_TIME_HIGH   bits 59..32: bits 33..6 of the microsecond time
0xA   EXT_TRIGGER     bits 59..54 time low, 44..40 channel id, bit 32 edge value
0xE   OTHERS          vendor extensions (skipped, ``skipped_other``)
0xF   CONTINUED       extra data of the previous word (skipped, ``skipped_other``)
====  ==============  ===========================================================

Other codes are reserved (``skipped_unknown``). The words are read as
little-endian 64-bit values; an IMX636 sends the upper 32 bits first, which a
``.raw`` reader puts right before the words get here
(:func:`helixtrack_ros.io.raw_file.iter_raw_packets`). Time extension,
clamping, resync and the counters are those of EVT 2.0 (an event earlier
than the latest one is held at its time; events out of the sensor are
dropped, and do not move the latest time).
"""

import numpy as np

from helixtrack_ros.codecs.evt2 import Evt2Decoder
from helixtrack_ros.codecs.kernel_decoder import native_words

#: Largest sensor size EVT 2.1 can address (11-bit coordinates).
EVT21_MAX_SIZE = 2048


class Evt21Decoder(Evt2Decoder):
    """Stateful EVT 2.1 decoder for one event stream (resync as EVT 2.0)."""

    encoding = 'evt21'
    MAX_SIZE = EVT21_MAX_SIZE
    EVENTS_PER_WORD = 32
    _KERNEL_FLAGS = (True,)     # the shared kernel on 64-bit words

    def _words(self, buf: np.ndarray, is_bigendian: bool) -> np.ndarray:
        return native_words(buf, 'u8', is_bigendian)


def swap_halves(words: np.ndarray) -> np.ndarray:
    """64-bit words with their 32-bit halves exchanged (an IMX636's order <-> this one's)."""
    w = words.astype(np.uint64, copy=False)
    return (w << np.uint64(32)) | (w >> np.uint64(32))
