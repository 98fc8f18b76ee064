# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Where each decoder counter sits in the counter array, as constants for the kernels.

The decoder kernels refer to them as ``cs.PACKETS`` etc. (numba compiles a
module's constants in); the names and their order are defined once, by
:data:`helixtrack_ros.codecs.types.COUNTER_NAMES`.
"""

from helixtrack_ros.codecs.types import COUNTER_INDEX

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
