# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""One camera per stream: the packets of another source on the topic are left out.

The stream is the source of its first packet with a ``frame_id`` and a payload
(an empty packet is not judged); packets of another ``frame_id`` are a second
camera publishing on the same topic (a misconfiguration). Taken in, their
sequence numbers, sensor clock and size interleaved with the stream's:
millions of "dropped" packets, a thousand "camera restarts", valid packets
"corrupt", "damaged data", and no rotor TRACKING (red-team review, two
cameras on one topic). They are now left out and counted
(``packets_foreign``), and the stream goes on. A source that alone sends
:data:`ADOPT_RUN` packets in a row is the stream from then on (a camera or
driver restarted under another frame).
"""

from __future__ import annotations

#: Packets in a row of another source, none of the stream's between, that make it the
#: stream (200 ms of 1 ms packets).
ADOPT_RUN = 200


class SourceFilter:
    """The frame of a stream's source, and the packets of other sources left out."""

    def __init__(self, counters: dict[str, int]) -> None:
        self.counters = counters
        counters.setdefault('packets_foreign', 0)
        #: the stream's frame_id (None before the first packet with one)
        self.frame_id: str | None = None
        #: (the stream's frame, the other source's) of the latest packet left out
        self.last_foreign: tuple[str, str] | None = None
        self._run = 0
        self._run_frame = ''

    def foreign(self, frame_id: str) -> str | None:
        """Why a packet of ``frame_id`` is left out (another source), or None: the stream's,
        no frame, or the packet that makes its source the stream."""
        frame_id = str(frame_id)
        if not frame_id or frame_id == self.frame_id:
            self._run = 0
            return None
        if self.frame_id is None:
            self.frame_id = frame_id
            return None
        self._run = self._run + 1 if frame_id == self._run_frame else 1
        self._run_frame = frame_id
        if self._run >= ADOPT_RUN:
            self.frame_id, self._run = frame_id, 0     # (the only source now)
            return None
        self.counters['packets_foreign'] += 1
        self.last_foreign = (self.frame_id, frame_id)
        return (f'from another source on the topic (frame_id {frame_id!r}; the stream is '
                f'{self.frame_id!r}): one camera per topic')
