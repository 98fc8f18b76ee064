# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Packet intake: decode, count sequence numbers, check sensor time, refuse garbage.

:class:`PacketIntake` turns one packet record into its decoded events and what
the trackers must do before them (:class:`Admission`): start over after a
camera restart or a long gap, or skip the time of lost packets so that the
gap is not read as starvation. The decoder's stream state is rolled back
over a refused packet, and resynchronised after lost ones.
:class:`SeqCounter` is the one count of the packets and their sequence
numbers (the node reports and logs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from helixtrack_ros.codecs import UnsupportedEncodingError, make_decoder
from helixtrack_ros.codecs.time_sync import NO_STAMP_NS, TimeMapper
from helixtrack_ros.codecs.types import COUNTER_INDEX
from helixtrack_ros.core.events import EventArrays, EventBuffer
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline.sequence import SEQ_COUNTERS, SeqCounter
from helixtrack_ros.pipeline.time_quantum import TimeQuantum

#: A backward jump of sensor time larger than this is a camera restart.
RESTART_JUMP_US = 60_000
#: A forward jump larger than this is a gap: trackers restart their phase lock.
GAP_US = 500_000
#: Sensor time going on this much further than the header stamps between two packets, and
#: jumping as far between two events: events were lost upstream (as a sequence gap; header
#: stamps jitter by a few ms, and a header clock stepped back leaves sensor time continuous).
UNSEEN_GAP_US = 15_000
#: An EVT3 packet with more than this share of its events held at an earlier event's
#: time is refused: its clock is stale (events lost upstream).
CLAMPED_STALE = 0.05
#: ... unless this many packets in a row look so (then the source is like that).
STALE_RUN_ACCEPT = 10
#: After a packet with events held at an earlier time, this many packets are watched for a
#: jump inside them (the stale time of EVT3 words lasts until the next TIME_HIGH, 4 ms).
CLAMP_RECENT = 8
#: The encodings whose words carry the time in TIME_HIGH words (a stale one after a loss).
_TIME_HIGH_ENCODINGS = ('evt3', 'evt2', 'evt21')
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
#: Decoder counters of words that carried no valid event.
_ERRORS = [COUNTER_INDEX[k] for k in ('skipped_unknown', 'out_of_bounds', 'odd_bytes',
                                      'before_time_high')]
_WORDS, _UNKNOWN = COUNTER_INDEX['words'], COUNTER_INDEX['skipped_unknown']
#: Decoder counters of words read that are no sign of garbage (a stream's start, a resync)
_UNREAD = [COUNTER_INDEX[k] for k in ('before_time_high', 'resync_skipped')]
_TRIGGERS = COUNTER_INDEX['triggers']
#: Decoder counter of events earlier than one before them, held at its time.
_CLAMPED = COUNTER_INDEX['time_clamped']
#: an array's largest / smallest value (per packet: without ndarray.max's Python wrapper)
_MAX, _MIN = np.maximum.reduce, np.minimum.reduce

INTAKE_COUNTERS = (*SEQ_COUNTERS, 'packets_refused', 'events_in', 'time_backwards',
                   'time_gaps', 'camera_restarts', 'decode_errors', 'packets_corrupt',
                   'events_corrupt', 'packets_duplicate', 'stamp_jumps', 'format_changes',
                   'events_clamped', 'sensor_gaps', 'events_mistimed')


def _largest_step(t_us: np.ndarray, back: bool = False) -> tuple[int, int]:
    """(index of the event after it, size [us]) of the largest step between consecutive
    event times, or with ``back`` of the largest step back (its size > 0); (0, 0) with
    fewer than two events."""
    if len(t_us) < 2:
        return 0, 0
    steps = np.diff(t_us)
    if back:
        j = int(np.argmin(steps))
        return j + 1, -int(steps[j])
    j = int(np.argmax(steps))
    return j + 1, int(steps[j])


def _format_text(key: tuple[str, int, int]) -> str:
    """'evt3 1280x720' of a decoder key (encoding, width, height)."""
    return f'{key[0]} {key[1]}x{key[2]}'


#: the encodings whose packets each carry their whole time (``time_base`` + offsets)
_OWN_TIME_BASE = ('libcaer', 'libcaer_cmp', 'mono')
#: the encodings whose drivers stamp a packet after its last event (libcaer's: the real
#: recording in test/data, its stamps 0.56 ms before to 0.47 ms after the last event)
_STAMPED_AT_END = ('libcaer', 'libcaer_cmp')
#: a sensor time past this is a wall clock (2001-09-09 in microseconds since 1970) [us]
WALL_CLOCK_US = 10**15
#: the most sensor time packets lost in transport are taken to have spanned [us]
LOST_SPAN_MAX_US = 1_000_000


def _same_payload(a: EventPacketRecord, b: EventPacketRecord) -> bool:
    """Whether two packets carry the same bytes (compared without copies)."""
    pa = np.frombuffer(a.events, np.uint8)
    pb = np.frombuffer(b.events, np.uint8)
    return pa.shape == pb.shape and bool(np.array_equal(pa, pb))


def _without_spikes(ev: EventArrays, last_t_us: int | None,
                    counters: dict[str, int]) -> EventArrays:
    """A packet's events without those far ahead of where the packet ends.

    Sensor time is monotone up to microseconds within a packet; events more
    than :data:`UNSEEN_GAP_US` later than the packet's last event, where that
    one goes on from the packet before (no restart), were timed by a damaged
    time word (one flipped bit of an EVT 2.0 TIME_HIGH: 67 s ahead until the
    next one). Tracked, they moved every rotor's clock ahead and froze it: each
    later event came "before" it, its health windows never closed, and it stayed
    TRACKING 2-5 times off (bad-input review). Events before time 0 (a damaged
    TIME_HIGH stepping back past the start) are no times either. Both are left
    out (``events_mistimed``, in ``counters``); ``last_t_us``: the stream's latest time
    before the packet.
    """
    t = ev.t_us
    if not len(t):
        return ev
    t_end = int(t[-1])
    spiked = int(_MAX(t)) > t_end + UNSEEN_GAP_US and (
        last_t_us is None or t_end >= last_t_us - RESTART_JUMP_US)
    if not spiked and int(_MIN(t)) >= 0:
        return ev                        # (the usual packet: a max and a min)
    keep = t >= 0
    if spiked:
        keep &= t <= t_end + UNSEEN_GAP_US
    counters['events_mistimed'] += len(t) - int(keep.sum())
    return EventArrays(t[keep], ev.x[keep], ev.y[keep], ev.p[keep])


def _jump_inside_us(ev: EventArrays) -> int:
    """The largest step between a packet's events where over :data:`UNSEEN_GAP_US`
    [us], else 0: a loss the next packet's stamp may show (words before the jump
    kept the old TIME_HIGH)."""
    t = ev.t_us
    if int(t[-1]) - int(t[0]) <= UNSEEN_GAP_US:     # (cheap: most packets stop here)
        return 0
    step = _largest_step(t)[1]
    return step if step > UNSEEN_GAP_US else 0


def _after_jump(ev: EventArrays, counters: dict[str, int]) -> EventArrays:
    """A packet's events from its jump over an unseen gap on: the words before its first
    full time word still carry the time of before the gap (EVT3), so those events
    are left out (``events_mistimed``)."""
    after, step = _largest_step(ev.t_us)
    if step <= UNSEEN_GAP_US:
        return ev
    counters['events_mistimed'] += after
    return ev.slice(after, len(ev))


class Admission(NamedTuple):
    """What one packet brought: its events, or why it was refused, and what to do first.

    ``restart``: the trackers start over from their estimates (camera restart
    or a long gap); ``gap_us`` (not None): events were lost before this
    packet, the trackers skip that much time; ``stamp_ns``: the ROS time of
    the packet's last event (events) or its header stamp (empty packet);
    ``silent_ns`` (empty packet): header time since the last packet with
    events; ``dropped``: why a packet that is no error (a copy, a late one)
    was left out.
    """

    error: str | None
    events: EventArrays | None = None
    restart: bool = False
    gap_us: int | None = None
    stamp_ns: int = 0
    silent_ns: int = 0
    dropped: str | None = None


class PacketIntake:
    """Decodes packets of one stream and keeps its sequence and time bookkeeping."""

    def __init__(self, counters: dict[str, int]) -> None:
        self.counters = counters
        for key in INTAKE_COUNTERS:
            counters.setdefault(key, 0)
        self.decoder: Any = None
        self.decoder_key: tuple | None = None
        self.time = TimeMapper()
        #: how finely the events' times are resolved (time_quantum.py)
        self.quantum = TimeQuantum()
        self.seq = SeqCounter(counters)
        #: sensor time of the last accepted event, and of the first one
        self.last_t_us: int | None = None
        self.first_t_us: int | None = None
        self._last_stamp_ns: int | None = None
        self._suspect_run = 0
        #: suspect packets in a row whose leapt times continue one another, the last one's end
        self._leap_run = 0
        self._leap_t_last = 0
        #: packets in a row whose sensor time went back (own time bases), and whether the
        #: packet being judged is one
        self._back_run = 0
        self._back_jump = False
        #: the decoder's state after the last packet with events that was taken
        self._trusted: np.ndarray | None = None
        #: packets were dropped or refused since the last accepted one
        self._events_lost = False
        self._lost_at_ns: int | None = None     # the header stamp of the packet of the loss
        #: packets lost (seq gaps) since the last packet with events taken, and the sensor
        #: time a packet spans, recently [us]: lost packets explain a leap of that much
        self._packets_lost = 0
        self._packet_us = 0.0
        self._decoder_stale = False
        #: the step inside the last packet with events, where over UNSEEN_GAP_US [us] (else 0)
        self._jumped_us = 0
        #: stale-looking packets in a row (_stale_clock)
        self._stale_run = 0
        #: packets to go in which a jump inside a packet may be an unseen gap (_accept)
        self._clamp_recent = 0
        #: the packet before (a duplicate of it is dropped)
        self._prev: EventPacketRecord | None = None
        #: the last packet decoded (its triggers: ``helixtrack events`` keeps them)
        self.last_decoded: Any = None
        #: the latest change of encoding or sensor size: (before, after) as text
        self.last_format_change: tuple[str, str] | None = None

    @property
    def image_size(self) -> tuple[int, int]:
        """(width, height) of the stream (1280 x 720 before the first packet)."""
        return (self.decoder_key[1], self.decoder_key[2]) if self.decoder_key else (1280, 720)

    def admit(self, out: EventBuffer, pkt: EventPacketRecord) -> Admission:
        """Decode one packet into ``out`` and check it (see :class:`Admission`)."""
        seq = int(pkt.seq)
        dropped = self._dropped(pkt, seq)
        if dropped is not None:
            return dropped
        try:
            decoder = self._get_decoder(pkt.encoding, int(pkt.width), int(pkt.height))
        except UnsupportedEncodingError as exc:
            return self._refused(pkt, str(exc))
        except ValueError as exc:
            return self._refused(pkt, f'bad packet: {exc}')
        if self._decoder_stale:
            # the stream state of the decoder is stale after lost packets
            decoder.resync()
            self._decoder_stale = False
        before = decoder.counts()
        # (the state to roll back to over garbage: the last trusted one, else this one)
        snapshot = decoder.snapshot() if self._trusted is None else None
        mark = out.n
        try:
            self.last_decoded = decoder.decode(pkt.events, is_bigendian=bool(pkt.is_bigendian),
                                               time_base=int(pkt.time_base), out=out)
            ev = self.last_decoded.events
        except ValueError as exc:
            return self._refused(pkt, f'undecodable payload: {exc}')
        delta = decoder.counts_since(before)
        n_events = len(ev.t_us)
        self.counters['decode_errors'] += sum([delta[i] for i in _ERRORS])
        stamp_ns = int(pkt.stamp_ns)
        reason, final = self._corrupt_reason(ev, delta, stamp_ns)
        if reason is None and self._stale_clock(n_events, delta[_CLAMPED]):
            reason, final = (f'{delta[_CLAMPED]} of {n_events} events came earlier than events '
                             'before them: the time is stale (events lost?)'), True
        leap_is_real = reason is not None and not final and (
            self._back_persists() if self._back_jump else self._leap_persists(ev))
        if reason is not None and not leap_is_real:
            # roll the stream state back so that the garbage does not shift later times
            # (to the end of the last packet with events taken: empty packets taken
            # since may have been garbage too, their TIME_HIGH words moving the clock)
            decoder.restore(snapshot if self._trusted is None else self._trusted)
            out.truncate(mark)
            if final:
                self._leap_run = 0
            self.counters['packets_corrupt'] += 1
            # (every refusal, as the node counts them: two meanings of one key in one
            # /diagnostics array disagreed, 30 against 0; red-team review)
            self.counters['packets_refused'] += 1
            self.counters['events_corrupt'] += n_events    # (lost: the summary says how many)
            self._suspect_run += 1
            self._lose(stamp_ns)
            return Admission(f'corrupt payload dropped (seq {seq}): {reason}')
        restart = reason is not None
        if restart:
            # the step persists over several packets: it is real (time went back and
            # stayed there: a camera restart; events lost upstream, a clock set ahead: a
            # time gap), so start over from here
            back = int(ev.t_us[0]) < (self.last_t_us or 0) - RESTART_JUMP_US
            self.counters['camera_restarts' if back else 'time_gaps'] += 1
            self._restart_clock()
            self.last_t_us = None
        ev = _without_spikes(ev, self.last_t_us, self.counters)
        n_events = len(ev.t_us)
        self.counters['events_in'] += n_events
        self.counters['events_clamped'] += delta[_CLAMPED]
        # (events held at an earlier time: the decoder's clock may be stale, see _accept)
        self._clamp_recent = CLAMP_RECENT if delta[_CLAMPED] else max(self._clamp_recent - 1, 0)
        if n_events == 0:
            # (no evidence either way: a run of suspect packets goes on); the silence in
            # header time, stamp against stamp, unless events were lost since (a packet
            # decoded to nothing while the decoder resynchronises is no starvation: 1-3
            # such packets after each transport gap turned the rotors STARVED)
            since = self._lost_at_ns if self._events_lost else self._last_stamp_ns
            silent_ns = 0 if since is None else stamp_ns - since
            return Admission(None, ev, restart, None, max(stamp_ns, 0), silent_ns)
        self._suspect_run = self._leap_run = self._back_run = 0
        self.quantum.observe(ev.t_us)
        self._note_span(ev)
        self._trusted = self.decoder.snapshot()
        return self._accept(ev, restart, stamp_ns)

    def _dropped(self, pkt: EventPacketRecord, seq: int) -> Admission | None:
        """Count the packet's number; the Admission of a copy of the packet before or of a
        packet that came late (None: it is to be decoded)."""
        prev, self._prev = self._prev, pkt
        numbered = (seq == int(prev.seq) + 1 and int(pkt.stamp_ns) == int(prev.stamp_ns)
                    and len(pkt.events) > 0) if prev is not None else False
        if prev is not None and (seq == int(prev.seq) or numbered) and _same_payload(pkt, prev):
            # a message delivered or recorded twice: its events must not be tracked again
            # (the next number with the same stamp and events is a copy too: readers number
            # messages without a seq, ROS 2 struct-event arrays, by their place; counted,
            # so that it is not taken for a lost packet)
            if numbered:
                self.seq.count(seq)
            self.counters['packets_duplicate'] += 1
            return Admission(None, dropped='a copy of the packet before (the same seq and '
                                           'payload)')
        self._count_seq(seq, int(pkt.stamp_ns))
        if self.seq.late:
            # its events are older than those tracked: it was taken for lost when skipped
            return Admission(None, dropped='late (reordered in transport)')
        return None

    def _refused(self, pkt: EventPacketRecord, why: str) -> Admission:
        """A packet refused whole: its events are lost to the stream, as a seq gap's are
        (20 packets of an unknown encoding left the decoder's clock stale and the rotors
        STARVED for up to 0.6 s, instead of re-validated; live-node review)."""
        self.counters['packets_refused'] += 1
        self._lose(int(pkt.stamp_ns))
        return Admission(why)

    def _lose(self, stamp_ns: int) -> None:
        """Events were lost before the packet stamped ``stamp_ns`` (a seq gap) or in it
        (refused, corrupt): the decoder's stream state is stale, the next events come
        after a gap, and a silence is counted from here, not from the last events."""
        self._events_lost = self._decoder_stale = True
        self._lost_at_ns = stamp_ns

    def _accept(self, ev: EventArrays, restart: bool, stamp_ns: int) -> Admission:
        """Time bookkeeping of a packet with events: restarts, gaps, the ROS stamp."""
        t_first = int(ev.t_us[0])
        if int(ev.t_us[-1]) < t_first - RESTART_JUMP_US:
            ev, restart = self._restart_inside(ev), True
            t_first = int(ev.t_us[0])
        elif self.last_t_us is not None:
            if t_first < self.last_t_us - RESTART_JUMP_US:
                # camera restart: sensor time starts again; keep the rotor estimates
                self.counters['camera_restarts'] += 1
                self._restart_clock()
                restart = True
            elif t_first < self.last_t_us:
                self.counters['time_backwards'] += 1
            elif t_first > self.last_t_us + GAP_US:
                self.counters['time_gaps'] += 1
                restart = True
        jumped_us, self._jumped_us = self._jumped_us, _jump_inside_us(ev)
        unseen_us = 0 if restart else self._unseen_gap_us(ev, stamp_ns, jumped_us)
        if unseen_us > UNSEEN_GAP_US:
            # events lost before the driver (seq unbroken): as a seq gap, not silence
            self.counters['sensor_gaps'] += 1
            self._events_lost = True
            ev = _after_jump(ev, self.counters)
            t_first = int(ev.t_us[0])
            # the packet before jumped over that loss inside it (after words that kept the
            # old TIME_HIGH): the rotors took it as silence and may have starved; they
            # start again from their estimates (as after a camera restart)
            restart = jumped_us > 0
        gap_us = None
        if self._events_lost:
            self._events_lost = False
            gap_us = (max(t_first - self.last_t_us, unseen_us)
                      if self.last_t_us is not None else 0)
        # (a driver that stamps a packet after its last event, libcaer's, is sampled there:
        # taken for its first event's stamp, every output came a whole packet late, 9 ms
        # with 10 ms packets; input review)
        t_stamped = int(ev.t_us[-1]) if self.decoder_key[0] in _STAMPED_AT_END else t_first
        if self.time.update(stamp_ns, t_stamped):
            # the header stamp of the packet whose events ended at last_t_us (the leap
            # check compares the two over the same packets, however many empty ones came
            # between)
            self._last_stamp_ns = stamp_ns
        else:
            # a header stamp far off the sensor clock (0, days off): set aside, the
            # outputs keep the sensor clock's time
            self.counters['stamp_jumps'] += 1
        self.last_t_us = int(ev.t_us[-1])
        if self.first_t_us is None:
            self.first_t_us = t_first
        # (no estimate yet: only stamps of 0 so far, which the outputs then keep, unless
        # the sensor clock is a wall clock, as libcaer's driver sets it: then its own time)
        stamp_out = (self.time.to_ros_ns(self.last_t_us) if self.time.has_estimate
                     else self.last_t_us * 1000 if self.last_t_us >= WALL_CLOCK_US
                     and self.decoder_key[0] in _OWN_TIME_BASE else stamp_ns)
        # (a ROS time is never before 1970: a mapping learnt from damaged times can say so)
        return Admission(None, ev, restart, gap_us, max(stamp_out, 0))

    def _stale_clock(self, n_events: int, n_clamped: int) -> bool:
        """Whether an EVT3 packet's times are not to be trusted: more than
        :data:`CLAMPED_STALE` of its events fell behind the latest time. A camera's EVT3
        stream holds none (the real recording in test/data: 0 of 82,469); after events
        lost without a seq gap, the words before the next TIME_HIGH carry the old one
        and about every second such packet falls behind (live-node review)."""
        stale = (self.decoder_key is not None and self.decoder_key[0] == 'evt3'
                 and n_clamped > max(CLAMPED_STALE * n_events, 16))
        # a source whose every packet looks so is its own kind (held times, counted in
        # events_clamped), not a loss: after STALE_RUN_ACCEPT such packets they are taken
        self._stale_run = self._stale_run + 1 if stale else 0
        return stale and self._stale_run <= STALE_RUN_ACCEPT

    def _unseen_gap_us(self, ev: EventArrays, stamp_ns: int, jumped_us: int) -> int:
        """How far sensor time went beyond the header stamps [us]: how far the packet's
        sample (stamp minus sensor time) falls below the time mapping's offset, at most
        as far as sensor time jumped since the last event (0: no sign). Late stamps lie
        above it and a stamp the mapping would set aside (a header clock stepped by over
        a second) says nothing; a header clock stepped back, its sensor time going on
        without a jump, says nothing either (``jumped_us``: the jump inside the packet
        before, see :func:`_jump_inside_us`).

        More than :data:`UNSEEN_GAP_US` is events lost upstream of the driver, e.g. a
        driver behind the camera that dropped its backlog; read as silence the rotors
        starved and took 0.4 s to lock again (live-node review). The sensor time taken
        is the first event's, or, shortly after events held at an earlier time in a
        stream with TIME_HIGH words, that of the packet's largest jump: the words
        before the first new TIME_HIGH after such a loss kept the old one.
        """
        if (self.last_t_us is None or self._events_lost or stamp_ns == NO_STAMP_NS
                or not self.time.has_estimate):
            return 0
        t_ref = int(ev.t_us[0])
        jump_us = max(t_ref - self.last_t_us, jumped_us)
        if self._clamp_recent and self.decoder_key[0] in _TIME_HIGH_ENCODINGS:
            after, inside_us = _largest_step(ev.t_us)
            t_ref, jump_us = int(ev.t_us[after]), max(jump_us, inside_us)
        below_ns = self.time.lowest_ns - (stamp_ns - t_ref * 1000)
        if not 0 < below_ns <= self.time.reset_ns:
            return 0
        # (no events are lost where sensor time goes on without a jump: the header clock
        # stepped back; review of the live node: a 50 ms step was a 'sensor gap')
        return min(below_ns // 1000, jump_us)

    def _restart_inside(self, ev: EventArrays) -> EventArrays:
        """The events of a packet in which the sensor clock restarted, from the restart on.

        A new recording or a restarted camera whose first words keep the old time (EVT3:
        the words before the first TIME_HIGH) put the restart inside the packet; tracked
        as they are, the events after it fell behind the rotors' time and froze them
        (TRACKING, 13 % off, for a whole replayed recording: live-node review). The
        events before the step back are left out (``events_mistimed``); the rotors
        restart from their estimates as after any camera restart.
        """
        after, _ = _largest_step(ev.t_us, back=True)
        self.counters['events_mistimed'] += after
        self.counters['camera_restarts'] += 1
        self._restart_clock()
        return ev.slice(after, len(ev))

    def _restart_clock(self) -> None:
        """Sensor time starts again (a restart, a gap): its mapping and quantum too."""
        self.time.reset()
        self.quantum.reset()

    def _get_decoder(self, encoding: str, width: int, height: int) -> Any:
        # (as make_decoder reads it: 'EVT3' and 'evt3' are one stream, not a change)
        key = (str(encoding).strip().lower(), width, height)
        if key != self.decoder_key:
            decoder = make_decoder(encoding, width, height)   # (ValueError: refused)
            if self.decoder_key is not None:
                # a stream whose encoding or sensor size changes: said, it may be mislabelled
                self.counters['format_changes'] += 1
                self.last_format_change = (_format_text(self.decoder_key), _format_text(key))
            self.decoder = decoder
            self.decoder_key = key
            self._trusted = None
            self.quantum.reset()       # (another stream: its times may be rounded otherwise)
        return self.decoder

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

    def _count_seq(self, seq: int, stamp_ns: int) -> None:
        """Count a packet's number; packets lost before it leave the decoder's stream state
        stale, and took their sensor time with them (:attr:`_packets_lost`)."""
        if self.seq.count(seq):
            self._lose(stamp_ns)
            gap = self.seq.last_gap
            if gap is not None and gap[1] == seq:
                self._packets_lost += gap[1] - gap[0] - 1

    def _note_span(self, ev: EventArrays) -> None:
        """Learn the sensor time a packet spans (taken with events, none lost before it)."""
        if self._packets_lost == 0 and self.last_t_us is not None:
            step = int(ev.t_us[-1]) - self.last_t_us
            if 0 < step < CORRUPT_LEAP_US:
                self._packet_us += 0.1 * (step - self._packet_us)
        self._packets_lost = 0

    def _own_time_base(self) -> bool:
        """Whether each packet of the stream carries its own time base (libcaer, mono), so
        that one packet's time says nothing of the next one's (EVT words carry the time
        from packet to packet: a packet refused rolls the decoder's clock back)."""
        return self.decoder_key is not None and self.decoder_key[0] in _OWN_TIME_BASE

    def _corrupt_reason(self, ev: EventArrays, delta: Sequence[int],
                        stamp_ns: int) -> tuple[str | None, bool]:
        """Why a decoded packet (decoder counters ``delta``) looks like garbage (None:
        sane), and whether that is final (never to be taken as a restart).

        Three signs: many words and no event (:func:`_eventless_reason`: final),
        many words of codes no sensor sends (real streams have at most a little
        0x9 padding: final), or sensor time leaping more than CORRUPT_LEAP_US
        further ahead than the header stamps moved (random TIME_HIGH words). A
        leap is refused until it persists (:meth:`_leap_persists`): events lost
        upstream of the driver while it was behind (its backlog dropped) leap
        sensor time ahead of the header stamps for good, and refusing every
        later packet locked a rotor out for the rest of the stream (live-node
        review); random TIME_HIGH words do not continue one another.
        """
        self._back_jump = False
        words, unknown = delta[_WORDS], delta[_UNKNOWN]
        eventless = None if len(ev.t_us) else _eventless_reason(delta)
        if eventless is not None:
            return eventless, True
        if words >= 16 and unknown > CORRUPT_UNKNOWN_FRACTION * words:
            return f'{unknown} of {words} words have unknown codes', True
        if len(ev.t_us) and self.last_t_us is not None and self._last_stamp_ns is not None:
            # (right after garbage a packet can hold its tail: events far ahead, then the
            # stream's own times again, so its latest time, not its last one)
            t_hi = int(_MAX(ev.t_us)) if self._suspect_run else int(ev.t_us[-1])
            leap_us = t_hi - self.last_t_us
            host_us = (stamp_ns - self._last_stamp_ns) // 1000
            # (packets lost in transport took their sensor time with them, whatever the
            # stamps say: a driver that fell behind, its stamps late, and dropped its
            # backlog had 5 good packets refused and its time mapping restarted 63 ms
            # late; live review. The larger of the two, not their sum: a damaged time
            # right after a gap is still refused; code review)
            lost_us = min(int(self._packets_lost * self._packet_us), LOST_SPAN_MAX_US)
            if leap_us > max(host_us, lost_us) + CORRUPT_LEAP_US:
                return (f'sensor time leapt {leap_us / 1e6:.3f} s while the header stamp '
                        f'moved {host_us / 1e6:.3f} s'), False
            if self._suspect_run and leap_us > CORRUPT_LEAP_US:
                # right after garbage the stamps are no witness: a .raw file's come from
                # the same words
                return (f'sensor time leapt {leap_us / 1e6:.3f} s right after a corrupt '
                        'packet'), False
            back_us = self.last_t_us - int(ev.t_us[0])
            self._back_jump = back_us > RESTART_JUMP_US and self._own_time_base()
            if self._back_jump:
                # a camera restart, or one packet of a wrong time base: taken once the next
                # packets go on from it (one libcaer packet with time_base 0 was taken for a
                # restart, and the five after it, back on the clock, refused; input review)
                return (f'sensor time went back {back_us / 1e6:.3f} s (a restart is taken '
                        'once the next packets go on from it)'), False
        return None, False


def _eventless_reason(delta: Sequence[int]) -> str | None:
    """Why a packet of no event is garbage (EVENTLESS_WORDS_MAX words or more read, no
    trigger either), from its decoder counters ``delta``; None for an empty packet."""
    read = delta[_WORDS] - sum([delta[i] for i in _UNREAD])
    if read < EVENTLESS_WORDS_MAX or delta[_TRIGGERS]:
        return None
    return f'{read} words and not one event'
