# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The sequence numbers of an event stream: packets lost, repeated, restarted or late.

:class:`SeqCounter` keeps the counters of :data:`SEQ_COUNTERS` for the
intake (:mod:`helixtrack_ros.pipeline.intake`), which the node reports as
its own. Split from the intake (one concept per module).
"""

#: The counters of :class:`SeqCounter`.
SEQ_COUNTERS = ('packets', 'seq_gaps', 'packets_dropped', 'seq_restarts', 'seq_repeats',
                'packets_late')
#: Of the numbers a gap skipped, the last this many may still come, late (reordered).
LATE_SEQ = 16
#: A forward jump of more packets than this is no loss (100 s of 1 ms packets): a restart.
MAX_SEQ_GAP = 100_000


class SeqCounter:
    """Counts the packets of a stream and the jumps of their sequence numbers.

    A jump forward is a gap: ``seq_gaps`` and ``packets_dropped`` (lost in
    transport), unless it is more than :data:`MAX_SEQ_GAP` packets. That, or
    a jump back, is a ``seq_restarts`` (a camera or driver restart, a
    glitch). The same number again is a ``seq_repeats`` (a driver that does
    not count; a copy of the packet before is dropped earlier). A packet whose
    number a recent gap skipped (one of the last :data:`LATE_SEQ` of it)
    arrived late (reordered in transport): ``packets_late`` (:attr:`late`),
    no longer counted dropped, and the last number stays. ``last_gap`` and
    ``last_restart`` keep the latest of each as (seq before, seq after).
    """

    def __init__(self, counters: dict[str, int]) -> None:
        self.counters = counters
        for key in SEQ_COUNTERS:
            counters.setdefault(key, 0)
        #: the sequence number of the last packet (None before the first)
        self.last: int | None = None
        self.last_gap: tuple[int, int] | None = None
        self.last_restart: tuple[int, int] | None = None
        #: the packet just counted came late (reordered)
        self.late = False
        self._missing: set[int] = set()   # recently skipped numbers (a late one is one)

    def count(self, seq: int) -> bool:
        """Count packet ``seq``; True when packets were lost just before it."""
        c = self.counters
        c['packets'] += 1
        last = self.last
        self.late = seq in self._missing
        if self.late:
            self._missing.remove(seq)
            c['packets_late'] += 1
            c['packets_dropped'] -= 1   # taken for lost when it was skipped: it came late
            return False
        self.last = seq
        if last is None or seq == last + 1:
            return False
        if seq == last:
            c['seq_repeats'] += 1
            return False
        if last < seq <= last + MAX_SEQ_GAP:
            c['seq_gaps'] += 1
            c['packets_dropped'] += seq - last - 1
            self.last_gap = (last, seq)
            # the latest skipped numbers may still come, late
            self._missing = {*self._missing, *range(max(last + 1, seq - LATE_SEQ), seq)}
            self._missing = {m for m in self._missing if m > seq - 4 * LATE_SEQ}
            return True
        c['seq_restarts'] += 1
        self.last_restart = (last, seq)
        self._missing = set()
        # a jump forward too far to be a loss still loses the decoder's stream state
        return seq > last
