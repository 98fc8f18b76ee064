# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Where each decoder counter sits in the counter array, as constants for the kernels.

The decoder kernels refer to them as ``cs.PACKETS`` etc. (numba compiles a
module's constants in); the names and their order are defined once, by
:data:`helixtrack_ros.codecs.types.COUNTER_NAMES`.

Importing this module also drops stale on-disk numba caches of the codec
kernels: they compile in constants and inlined helpers of other codec
modules, which numba's cache does not track
(:func:`helixtrack_ros.core.jit.drop_stale_cache`).
"""

import os

from helixtrack_ros.codecs.types import COUNTER_INDEX
from helixtrack_ros.core.jit import drop_stale_cache, kernel_inline

_KERNEL_MODULES = ('types', 'counter_slots', 'event_out', 'time_high', 'evt2', 'evt21', 'evt3',
                   'libcaer', 'mono', 'stream_encoder', 'evt2_encoder', 'evt3_encoder',
                   'libcaer_encoder')
drop_stale_cache(os.path.dirname(os.path.abspath(__file__)), _KERNEL_MODULES,
                 'helixtrack_codecs.stamp')

PACKETS = COUNTER_INDEX['packets']
WORDS = COUNTER_INDEX['words']
EVENTS = COUNTER_INDEX['events']
TRIGGERS = COUNTER_INDEX['triggers']
OTHER = COUNTER_INDEX['skipped_other']
UNKNOWN = COUNTER_INDEX['skipped_unknown']
BEFORE = COUNTER_INDEX['before_time_high']
OOB = COUNTER_INDEX['out_of_bounds']
RESETS = COUNTER_INDEX['time_resets']
ODD = COUNTER_INDEX['odd_bytes']
BACK = COUNTER_INDEX['time_backwards']
WRAPS = COUNTER_INDEX['time_wraps']
CLAMPED = COUNTER_INDEX['time_clamped']
RESYNC = COUNTER_INDEX['resync_skipped']


@kernel_inline
def count_call(counters, new_packet, odd_bytes, n_words):
    """Count one kernel call: a packet on its first chunk, its odd bytes and its words."""
    counters[PACKETS] += new_packet
    counters[ODD] += odd_bytes
    counters[WORDS] += n_words
