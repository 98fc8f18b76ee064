# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Types shared by the event decoders: the decoded packet, errors, counter names."""

from typing import NamedTuple

import numpy as np

from helixtrack_ros.core.events import EventArrays

#: Names of the cumulative decoder counters, in the order of the counter array.
#: Every decoder reports all of them (zero where a name does not apply).
COUNTER_NAMES: tuple[str, ...] = (
    'packets',           # decode() calls
    'words',             # whole words read (16 bit for evt3, 64 bit for mono)
    'events',            # CD events returned
    'triggers',          # external trigger events returned
    'skipped_other',     # OTHERS, CONTINUED_4 and CONTINUED_12 words
    'skipped_unknown',   # words with a reserved type code (e.g. 0x9 padding)
    'before_time_high',  # words discarded before the first TIME_HIGH of a stream
    'out_of_bounds',     # events dropped because x >= width or y >= height
    'time_resets',       # large backward steps of TIME_HIGH taken as a restarted clock
    'odd_bytes',         # trailing bytes that do not make a whole word
    'time_backwards',    # TIME_HIGH words that stepped back (a glitch, not a wrap)
    'time_wraps',        # 24-bit time wraps of the sensor clock (highest epoch reached)
    'time_clamped',      # time updates held at the last event time to keep t non-decreasing
    'resync_skipped',    # words discarded after lost packets until the time is known again
)

#: Position of each counter in the counter array.
COUNTER_INDEX: dict[str, int] = {name: i for i, name in enumerate(COUNTER_NAMES)}


class UnsupportedEncodingError(ValueError):
    """Raised when an EventPacket encoding has no decoder here."""


class DecodedPacket(NamedTuple):
    """The content of one decoded EventPacket.

    Attributes
    ----------
    events : EventArrays
        Change-detection events, time in microseconds of sensor time.
    trig_t_us : numpy.ndarray
        int64 sensor time of each external trigger event [us].
    trig_value : numpy.ndarray
        uint8 edge of each trigger event (1 = rising, 0 = falling).
    trig_id : numpy.ndarray
        uint8 trigger channel of each trigger event.
    """

    events: EventArrays
    trig_t_us: np.ndarray
    trig_value: np.ndarray
    trig_id: np.ndarray

    @staticmethod
    def empty() -> 'DecodedPacket':
        """Return a packet with no events and no triggers."""
        return DecodedPacket(EventArrays.empty(), np.empty(0, np.int64),
                             np.empty(0, np.uint8), np.empty(0, np.uint8))


def payload_as_uint8(payload: object) -> np.ndarray:
    """Return a payload as a 1-D contiguous uint8 array without copying when possible.

    Parameters
    ----------
    payload : bytes, bytearray, memoryview or numpy.ndarray
        The raw bytes of an EventPacket (``events`` field).

    Returns
    -------
    numpy.ndarray
        1-D C-contiguous uint8 array (may be read-only).

    Raises
    ------
    TypeError
        If the payload is neither bytes-like nor a uint8 array.
    """
    if isinstance(payload, np.ndarray):
        if payload.dtype != np.uint8:
            raise TypeError(f'payload array must have dtype uint8, got {payload.dtype}')
        return np.ascontiguousarray(payload.reshape(-1))
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return np.frombuffer(payload, dtype=np.uint8)
    raise TypeError('payload must be bytes, bytearray, memoryview or a uint8 numpy array, '
                    f'got {type(payload).__name__}')


def check_geometry(width: int, height: int, max_size: int) -> tuple[int, int]:
    """Validate a sensor geometry and return it as ints.

    Parameters
    ----------
    width, height : int
        Sensor size in pixels.
    max_size : int
        Largest size the encoding can address.

    Returns
    -------
    tuple of int
        ``(width, height)``.

    Raises
    ------
    ValueError
        If a size is not an integer in ``1..max_size``.
    """
    out = []
    for name, v in (('width', width), ('height', height)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f'{name} must be an integer, got {v!r}')
        if not 1 <= int(v) <= max_size:
            raise ValueError(f'{name} must be in 1..{max_size}, got {int(v)}')
        out.append(int(v))
    return out[0], out[1]
