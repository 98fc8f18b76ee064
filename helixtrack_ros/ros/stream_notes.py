# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What the node says about its input stream: packets lost, restarts, format changes.

The pipeline counts (``counters``); each new count of these is said in one
throttled log line, so a consumer of the log learns why outputs turned NaN.
"""

from __future__ import annotations

from typing import Any

from helixtrack_ros.ros.pipeline_api import PipelineApi


class StreamNotes:
    """Says each new count of the pipeline's stream counters (at most every 5 s each)."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self._said: dict[str, int] = {}

    def _new(self, counters: dict[str, int], key: str) -> bool:
        """Whether ``counters[key]`` changed since it was last said (and note it said)."""
        n = counters.get(key, 0)
        if n == self._said.get(key, 0):
            return False
        self._said[key] = n
        return True

    def say(self, pipe: PipelineApi) -> None:
        """Log what changed in ``pipe``'s counters since the last call."""
        c, seq, warn = pipe.counters, pipe.sequence, self._log.warning
        if self._new(c, 'seq_gaps') and seq.last_gap is not None:
            warn(f'packets lost: seq {seq.last_gap[0]} -> {seq.last_gap[1]} '
                 f'({c["packets_dropped"]} dropped so far)', throttle_duration_sec=5.0)
        if self._new(c, 'seq_restarts') and seq.last_restart is not None:
            warn(f'sequence restarted: {seq.last_restart[0]} -> {seq.last_restart[1]} '
                 '(camera restart?)', throttle_duration_sec=5.0)
        if self._new(c, 'camera_restarts'):
            warn(f'sensor time started again (camera restart or a new recording; '
                 f'{c["camera_restarts"]} so far): the rotors restart from their estimates',
                 throttle_duration_sec=5.0)
        if self._new(c, 'seq_repeats') and c['seq_repeats'] == 1:
            warn("the packets' seq does not advance (a driver that does not count them?): "
                 'lost packets cannot be counted')
        change = pipe.format_change
        if self._new(c, 'format_changes') and change is not None:
            warn(f'the stream changed from {change[0]} to {change[1]} '
                 f'({c["format_changes"]} changes so far)', throttle_duration_sec=5.0)
        if self._new(c, 'stamp_jumps'):
            warn(f'header stamps far off the sensor clock set aside ({c["stamp_jumps"]} so '
                 "far): the outputs keep the sensor clock's time", throttle_duration_sec=5.0)
        if self._new(c, 'sensor_gaps'):
            warn(f'sensor time went on further than the header stamps: events lost before '
                 f'the driver ({c["sensor_gaps"]} such gaps so far)', throttle_duration_sec=5.0)
