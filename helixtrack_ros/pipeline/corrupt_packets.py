# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The signs that a decoded packet is garbage, and when a suspect time step is real.

:class:`CorruptCheck` judges each decoded packet of one stream from its
events and its decoder's counters: many words and no event, many words of
codes no sensor sends, events held at an earlier time (a stale clock), or
sensor time leaping ahead of the header stamps or going back. A leap or a
step back is refused until it persists over several packets, then taken as
real (a gap, a restart). :class:`~.intake.PacketIntake` rolls its decoder
back over what is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from helixtrack_ros.codecs.types import COUNTER_INDEX
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.pipeline.packet_times import RESTART_JUMP_US

#: An EVT3 packet with more than this share of its events held at an earlier event's
#: time is refused: its clock is stale (events lost upstream).
CLAMPED_STALE = 0.05
#: ... unless this many packets in a row look so (then the source is like that).
STALE_RUN_ACCEPT = 10
#: A packet whose sensor time leaps this much further than its header stamp is refused
#: as garbage, until CORRUPT_RUN_ACCEPT such packets carried the leap on.
CORRUPT_LEAP_US = 100_000
#: A packet with more than this fraction of unknown word codes is garbage.
CORRUPT_UNKNOWN_FRACTION = 0.1
#: A packet that reads this many words and decodes to no event is garbage: an idle EVT 2.0
#: stream sends one TIME_HIGH word per 64 us, 1,024 in 65 ms; 30 KB of zero bytes labelled
#: evt3 (ADDR_Y words, a valid code) went by as an empty packet, uncounted (red-team review)
EVENTLESS_WORDS_MAX = 1024
#: After this many suspect packets in a row, each continuing the last one's leapt time,
#: the leap is taken as real (the next such packet is accepted).
CORRUPT_RUN_ACCEPT = 5
_WORDS, _UNKNOWN = COUNTER_INDEX['words'], COUNTER_INDEX['skipped_unknown']
#: Decoder counters of words read that are no sign of garbage (a stream's start, a resync)
_UNREAD = [COUNTER_INDEX[k] for k in ('before_time_high', 'resync_skipped')]
_TRIGGERS = COUNTER_INDEX['triggers']
#: Decoder counter of events earlier than one before them, held at its time.
_CLAMPED = COUNTER_INDEX['time_clamped']
#: the encodings whose packets each carry their whole time (``time_base`` + offsets)
OWN_TIME_BASE = ('libcaer', 'libcaer_cmp', 'mono')
_MAX = np.maximum.reduce


class Verdict(NamedTuple):
    """A packet's judgement: ``reason`` it looks like garbage (None: sane); ``refuse``:
    it is dropped (else a suspect step is taken as real: a restart or a gap); ``stale``:
    its clock is stale, events were lost upstream (not garbage: the decoder waits for
    the next time word instead of being rolled back)."""

    reason: str | None
    refuse: bool
    stale: bool = False


class StreamPlace(NamedTuple):
    """Where the stream stood before a packet: the latest accepted event's sensor time
    [us] and its packet's header stamp [ns] (None before any), the sensor time packets
    lost in transport since are taken to have spanned [us], and the encoding."""

    last_t_us: int | None
    last_stamp_ns: int | None
    lost_us: int
    encoding: str


class CorruptCheck:
    """The runs of suspect packets of one stream, and the judgement of each packet."""

    def __init__(self) -> None:
        #: suspect packets in a row (refused, or empty ones between them)
        self.suspect_run = 0
        #: suspect packets in a row whose leapt times continue one another, the last one's end
        self._leap_run = 0
        self._leap_t_last = 0
        #: packets in a row whose sensor time went back (own time bases)
        self._back_run = 0
        #: stale-looking packets in a row (_stale_clock)
        self._stale_run = 0

    def judge(self, ev: EventArrays, delta: Sequence[int], stamp_ns: int,
              place: StreamPlace) -> Verdict:
        """Judge one decoded packet (decoder counters ``delta``, header stamp ``stamp_ns``)."""
        (reason, final), back = self._reason(ev, delta, stamp_ns, place)
        if reason is None and self._stale_clock(place.encoding, len(ev.t_us), delta[_CLAMPED]):
            # (no garbage: the next TIME_HIGH's step is judged against the stamps as usual)
            return Verdict(f'{delta[_CLAMPED]} of {len(ev.t_us)} events came earlier than '
                           'events before them: the time is stale (events lost?)', True, True)
        if reason is None:
            return Verdict(None, False)
        real = not final and (self._back_persists() if back else self._leap_persists(ev))
        if not real:
            if final:
                self._leap_run = 0
            self.suspect_run += 1
        return Verdict(reason, not real)

    def taken(self) -> None:
        """A packet with events was taken: the runs of suspect packets end."""
        self.suspect_run = self._leap_run = self._back_run = 0

    def _reason(self, ev: EventArrays, delta: Sequence[int], stamp_ns: int,
                place: StreamPlace) -> tuple[tuple[str | None, bool], bool]:
        """((why the packet looks like garbage or None, whether that is final: never to be
        taken as a restart), whether it is a step back).

        Three signs: many words and no event (:func:`eventless_reason`: final),
        many words of codes no sensor sends (real streams have at most a little
        0x9 padding: final), or sensor time leaping more than CORRUPT_LEAP_US
        further ahead than the header stamps moved (random TIME_HIGH words). A
        leap is refused until it persists (:meth:`_leap_persists`): events lost
        upstream of the driver while it was behind (its backlog dropped) leap
        sensor time ahead of the header stamps for good, and refusing every
        later packet locked a rotor out for the rest of the stream (live-node
        review); random TIME_HIGH words do not continue one another.
        """
        words, unknown = delta[_WORDS], delta[_UNKNOWN]
        eventless = None if len(ev.t_us) else eventless_reason(delta)
        if eventless is not None:
            return (eventless, True), False
        if words >= 16 and unknown > CORRUPT_UNKNOWN_FRACTION * words:
            return (f'{unknown} of {words} words have unknown codes', True), False
        if not len(ev.t_us) or place.last_t_us is None or place.last_stamp_ns is None:
            return (None, False), False
        # (right after garbage a packet can hold its tail: events far ahead, then the
        # stream's own times again, so its latest time, not its last one)
        t_hi = int(_MAX(ev.t_us)) if self.suspect_run else int(ev.t_us[-1])
        leap_us = t_hi - place.last_t_us
        host_us = (stamp_ns - place.last_stamp_ns) // 1000
        # (packets lost in transport took their sensor time with them, whatever the stamps
        # say: a driver that fell behind, its stamps late, and dropped its backlog had 5
        # good packets refused and its time mapping restarted 63 ms late; live review. The
        # larger of the two, not their sum: a damaged time right after a gap is still
        # refused; code review)
        if leap_us > max(host_us, place.lost_us) + CORRUPT_LEAP_US:
            return (f'sensor time leapt {leap_us / 1e6:.3f} s while the header stamp '
                    f'moved {host_us / 1e6:.3f} s', False), False
        if self.suspect_run and leap_us > CORRUPT_LEAP_US:
            # right after garbage the stamps are no witness: a .raw file's come from the
            # same words
            return (f'sensor time leapt {leap_us / 1e6:.3f} s right after a corrupt '
                    'packet', False), False
        back_us = place.last_t_us - int(ev.t_us[0])
        if back_us > RESTART_JUMP_US and place.encoding in OWN_TIME_BASE:
            # a camera restart, or one packet of a wrong time base: taken once the next
            # packets go on from it (one libcaer packet with time_base 0 was taken for a
            # restart, and the five after it, back on the clock, refused; input review)
            return (f'sensor time went back {back_us / 1e6:.3f} s (a restart is taken '
                    'once the next packets go on from it)', False), True
        return (None, False), False

    def _leap_persists(self, ev: EventArrays) -> bool:
        """Whether a leapt packet (it has events) is the one that makes the leap real: it
        continues the CORRUPT_RUN_ACCEPT suspect packets before it in sensor time (a
        restarted or re-set clock does; random TIME_HIGH words in garbage do not)."""
        continues = self._leap_run > 0 and (
            0 <= int(ev.t_us[0]) - self._leap_t_last <= CORRUPT_LEAP_US)
        prior = self._leap_run if continues else 0
        self._leap_run = prior + 1
        self._leap_t_last = int(ev.t_us[-1])
        return prior >= CORRUPT_RUN_ACCEPT

    def _back_persists(self) -> bool:
        """Whether a packet whose time went back is the one that makes the restart real:
        :data:`CORRUPT_RUN_ACCEPT` packets before it went back too (however far apart:
        a sparse stream's restart was never taken by the continuity rule of leaps)."""
        prior, self._back_run = self._back_run, self._back_run + 1
        return prior >= CORRUPT_RUN_ACCEPT

    def _stale_clock(self, encoding: str, n_events: int, n_clamped: int) -> bool:
        """Whether an EVT3 packet's times are not to be trusted: more than
        :data:`CLAMPED_STALE` of its events fell behind the latest time. A camera's EVT3
        stream holds none (the real recording in test/data: 0 of 82,469); after events
        lost without a seq gap, the words before the next TIME_HIGH carry the old one
        and about every second such packet falls behind (live-node review)."""
        stale = encoding == 'evt3' and n_clamped > max(CLAMPED_STALE * n_events, 16)
        # a source whose every packet looks so is its own kind (held times, counted in
        # events_clamped), not a loss: after STALE_RUN_ACCEPT such packets they are taken
        self._stale_run = self._stale_run + 1 if stale else 0
        return stale and self._stale_run <= STALE_RUN_ACCEPT


def eventless_reason(delta: Sequence[int]) -> str | None:
    """Why a packet of no event is garbage (EVENTLESS_WORDS_MAX words or more read, no
    trigger either), from its decoder counters ``delta``; None for an empty packet."""
    read = delta[_WORDS] - sum([delta[i] for i in _UNREAD])
    if read < EVENTLESS_WORDS_MAX or delta[_TRIGGERS]:
        return None
    return f'{read} words and not one event'
