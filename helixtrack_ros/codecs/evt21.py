# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Decoder of the Prophesee EVT 2.1 event stream (GenX320, IMX636): 64-bit vector words.

EVT 2.1 widens the words of EVT 2.0 (:mod:`helixtrack_ros.codecs.evt2`, whose
table gives the codes) to 64 bits: every field of an EVT 2.0 word sits 32
bits higher, so the code is bits 63..60 and an event's time low, x and y are
bits 59..54, 53..43 and 42..32. An event word's low 32 bits are a valid mask:
bit i set is an event at (x + i, y) of the word's polarity, up to 32 events
of one row. A trigger keeps its edge value in bit 32 and its channel id in
bits 44..40.

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
