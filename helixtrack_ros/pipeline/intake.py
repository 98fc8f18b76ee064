# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Packet intake: decode, count sequence numbers, check sensor time, refuse garbage.

:class:`PacketIntake` turns one packet record into its decoded events and what
the trackers must do before them (:class:`Admission`): start over after a
camera restart or a long gap, or skip the time of lost packets so that the
gap is not read as starvation. The decoder's stream state is rolled back
over a packet :class:`~.corrupt_packets.CorruptCheck` refuses, and
resynchronised after lost ones.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from helixtrack_ros.codecs import UnsupportedEncodingError, make_decoder
from helixtrack_ros.codecs.time_sync import NO_STAMP_NS, TimeMapper
from helixtrack_ros.codecs.types import COUNTER_INDEX
from helixtrack_ros.core.events import EventArrays, EventBuffer
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline.corrupt_packets import (
    CORRUPT_LEAP_US,
    OWN_TIME_BASE,
    CorruptCheck,
    StreamPlace,
)
from helixtrack_ros.pipeline.packet_times import (
    RESTART_JUMP_US,
    UNSEEN_GAP_US,
    after_jump,
    jump_inside_us,
    largest_step,
    without_spikes,
)
from helixtrack_ros.pipeline.sequence import SEQ_COUNTERS, SeqCounter
from helixtrack_ros.pipeline.sources import SourceFilter
from helixtrack_ros.pipeline.time_quantum import TimeQuantum

#: A forward jump larger than this is a gap: trackers restart their phase lock.
GAP_US = 500_000
#: Packets in a row with no event at all: the whole sensor silent, which no spinning rotor
#: is; the events after them come as after packets lost (the rotors re-validate their
#: extrapolated state), not as after starvation: 30 empty packets left every rotor LOST and
#: back only through re-detections, 88-435 ms later (red-team round 5)
SILENT_PACKETS = 3
#: After a packet with events held at an earlier time, this many packets are watched for a
#: jump inside them (the stale time of EVT3 words lasts until the next TIME_HIGH, 4 ms).
CLAMP_RECENT = 8
#: The encodings whose words carry the time in TIME_HIGH words (a stale one after a loss).
_TIME_HIGH_ENCODINGS = ('evt3', 'evt2', 'evt21')
#: Decoder counters of words that carried no valid event (not those before a stream's
#: first time word: a recording started mid-stream is no damage; formats review).
_ERRORS = [COUNTER_INDEX[k] for k in ('skipped_unknown', 'out_of_bounds', 'odd_bytes')]
#: an array's largest value (per packet: without ndarray.max's Python wrapper)
_MAX = np.maximum.reduce
#: Decoder counter of events earlier than one before them, held at its time.
_CLAMPED = COUNTER_INDEX['time_clamped']
#: Decoder counters of words skipped before the first TIME_HIGH of a stream, or of a resync.
_BEFORE, _RESYNC = COUNTER_INDEX['before_time_high'], COUNTER_INDEX['resync_skipped']

INTAKE_COUNTERS = (*SEQ_COUNTERS, 'packets_refused', 'events_in', 'time_backwards',
                   'time_gaps', 'camera_restarts', 'decode_errors', 'packets_corrupt',
                   'events_corrupt', 'packets_duplicate', 'stamp_jumps', 'format_changes',
                   'events_clamped', 'sensor_gaps', 'events_mistimed', 'packets_foreign',
                   'words_resync_skipped')


def _format_text(key: tuple[str, int, int]) -> str:
    """'evt3 1280x720' of a decoder key (encoding, width, height)."""
    return f'{key[0]} {key[1]}x{key[2]}'


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
        #: the stream's source (frame_id): packets of another camera are left out
        self.sources = SourceFilter(counters)
        #: sensor time of the last accepted event, and of the first one
        self.last_t_us: int | None = None
        self.first_t_us: int | None = None
        self._last_stamp_ns: int | None = None
        #: the signs of garbage, and the runs of suspect packets
        self.corrupt = CorruptCheck()
        #: the decoder's state after the last packet with events that was taken
        self._trusted: np.ndarray | None = None
        #: packets were dropped or refused since the last accepted one
        self._events_lost = False
        self._silent_packets = 0        # packets in a row without any event
        self._lost_at_ns: int | None = None     # the header stamp of the packet of the loss
        #: packets lost (seq gaps) since the last packet with events taken, and the sensor
        #: time a packet spans, recently [us]: lost packets explain a leap of that much
        self._packets_lost = 0
        self._packet_us = 0.0
        self._decoder_stale = False
        #: the step inside the last packet with events, where over UNSEEN_GAP_US [us] (else 0)
        self._jumped_us = 0
        #: packets to go in which a jump inside a packet may be an unseen gap (_accept)
        self._clamp_recent = 0
        #: (header stamp, last sensor time) of the last packet with events judged
        self._prev_stamped: tuple[int, int] | None = None
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
        lost_us = min(int(self._packets_lost * self._packet_us), LOST_SPAN_MAX_US)
        verdict = self.corrupt.judge(ev, delta, stamp_ns, StreamPlace(
            self.last_t_us, self._last_stamp_ns, lost_us, self.decoder_key[0]))
        stale = (verdict.reason if verdict.stale else None if verdict.reason is not None
                 else self._stale_time_words(ev, stamp_ns))
        if stale is not None or verdict.refuse:
            out.truncate(mark)
            self.counters['packets_refused'] += 1      # (every refusal, as the node counts)
            self._lose(stamp_ns)
            if stale is not None:
                # events lost upstream: the decoder waits for the next TIME_HIGH (resync)
                self.counters['sensor_gaps'] += 1
                self.counters['events_mistimed'] += n_events
                return Admission(f'events left out (seq {seq}): {stale}')
            # garbage: the stream state rolled back (to the last packet with events taken:
            # empty ones since may have been garbage too), so that it shifts no later time
            decoder.restore(snapshot if self._trusted is None else self._trusted)
            self.counters['packets_corrupt'] += 1
            self.counters['events_corrupt'] += n_events    # (lost: the summary says how many)
            return Admission(f'corrupt payload dropped (seq {seq}): {verdict.reason}')
        restart = verdict.reason is not None
        if restart:
            # the step persists over several packets: it is real (time went back and
            # stayed there: a camera restart; events lost upstream, a clock set ahead: a
            # time gap), so start over from here
            back = int(ev.t_us[0]) < (self.last_t_us or 0) - RESTART_JUMP_US
            self.counters['camera_restarts' if back else 'time_gaps'] += 1
            self._restart_clock()
            self.last_t_us = None
        ev = without_spikes(ev, self.last_t_us, self.counters)
        n_events = len(ev.t_us)
        self.counters['events_in'] += n_events
        self.counters['events_clamped'] += delta[_CLAMPED]
        # (the words a resync after lost packets skipped: no count showed the events they
        # held, 31 % of a stretch of reordered packets; red-team round 5)
        self.counters['words_resync_skipped'] += delta[_RESYNC]
        # (events held at an earlier time: the decoder's clock may be stale, see _accept)
        self._clamp_recent = CLAMP_RECENT if delta[_CLAMPED] else max(self._clamp_recent - 1, 0)
        if n_events == 0:
            self._silent_packets += 1
            # (no evidence either way: a run of suspect packets goes on); the silence in
            # header time, stamp against stamp, unless events were lost since (a packet
            # decoded to nothing while the decoder resynchronises is no starvation: 1-3
            # such packets after each transport gap turned the rotors STARVED)
            since = self._lost_at_ns if self._events_lost else self._last_stamp_ns
            silent_ns = 0 if since is None else stamp_ns - since
            return Admission(None, ev, restart, None, max(stamp_ns, 0), silent_ns)
        self.corrupt.taken()
        self.quantum.observe(ev.t_us)
        self._note_span(ev)
        self._trusted = self.decoder.snapshot()
        return self._accept(ev, restart, stamp_ns, delta[_BEFORE] + delta[_RESYNC] > 0)

    def _stale_time_words(self, ev: EventArrays, stamp_ns: int) -> str | None:
        """Why a packet's events carry a stale time (None: they may not).

        Events lost upstream of the driver, the seq unbroken, leave an EVT stream's
        next words on the TIME_HIGH of before the loss until the next one comes: the
        header stamp leaps ahead while sensor time does not. Tracked, those events lay
        up to a second in the past, and the leap of the next TIME_HIGH had five good
        packets refused as corrupt (red-team review, 1 s lost). Such a packet is left
        out and the decoder waits for the next TIME_HIGH. A header clock stepped ahead
        looks alike once: it costs one packet.
        """
        if not len(ev.t_us):
            return None
        prev, self._prev_stamped = self._prev_stamped, (stamp_ns, int(ev.t_us[-1]))
        if (prev is None or stamp_ns == NO_STAMP_NS or prev[0] == NO_STAMP_NS
                or self.decoder_key[0] not in _TIME_HIGH_ENCODINGS):
            return None
        header_us = (stamp_ns - prev[0]) // 1000
        sensor_us = int(_MAX(ev.t_us)) - prev[1]
        if header_us - sensor_us <= CORRUPT_LEAP_US:
            return None
        return (f'the header stamp moved {header_us / 1e6:.3f} s, sensor time '
                f'{sensor_us / 1e6:.3f} s: events lost upstream, their time words stale '
                'until the next one')

    def _dropped(self, pkt: EventPacketRecord, seq: int) -> Admission | None:
        """Count the packet's number; the Admission of a copy of the packet before or of a
        packet that came late or from another source (None: it is to be decoded)."""
        # (an empty packet carries nothing of a source: a test's priming packets under
        # another frame made every later packet foreign)
        foreign = self.sources.foreign(pkt.frame_id) if len(pkt.events) else None
        if foreign is not None:     # (before its seq is counted: another camera's numbers)
            return Admission(None, dropped=foreign)
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

    def _accept(self, ev: EventArrays, restart: bool, stamp_ns: int,
                lead_skipped: bool) -> Admission:
        """Time bookkeeping of a packet with events: restarts, gaps, the ROS stamp
        (``lead_skipped``: the decoder skipped words at the packet's start)."""
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
        jumped_us, self._jumped_us = self._jumped_us, jump_inside_us(ev)
        unseen_us = 0 if restart else self._unseen_gap_us(ev, stamp_ns, jumped_us)
        if unseen_us > UNSEEN_GAP_US:
            # events lost before the driver (seq unbroken): as a seq gap, not silence
            self.counters['sensor_gaps'] += 1
            self._events_lost = True
            ev = after_jump(ev, self.counters)
            t_first = int(ev.t_us[0])
            # the packet before jumped over that loss inside it (after words that kept the
            # old TIME_HIGH): the rotors took it as silence and may have starved; they
            # start again from their estimates (as after a camera restart)
            restart = jumped_us > 0
        gap_us = None
        if self._events_lost or self._silent_packets >= SILENT_PACKETS:
            self._events_lost, self._silent_packets = False, 0
            gap_us = (max(t_first - self.last_t_us, unseen_us)
                      if self.last_t_us is not None else 0)
        self._silent_packets = 0
        # (a driver that stamps a packet after its last event, libcaer's, is sampled there:
        # taken for its first event's stamp, every output came a whole packet late, 9 ms
        # with 10 ms packets; input review)
        t_stamped = int(ev.t_us[-1]) if self.decoder_key[0] in _STAMPED_AT_END else t_first
        self._sample_clock(stamp_ns, t_stamped, lead_skipped)
        self.last_t_us = int(ev.t_us[-1])
        if self.first_t_us is None:
            self.first_t_us = t_first
        # (no estimate yet: only stamps of 0 so far, which the outputs then keep, unless
        # the sensor clock is a wall clock, as libcaer's driver sets it: then its own time)
        stamp_out = (self.time.to_ros_ns(self.last_t_us) if self.time.has_estimate
                     else self.last_t_us * 1000 if self.last_t_us >= WALL_CLOCK_US
                     and self.decoder_key[0] in OWN_TIME_BASE else stamp_ns)
        # (a ROS time is never before 1970: a mapping learnt from damaged times can say so)
        return Admission(None, ev, restart, gap_us, max(stamp_out, 0))

    def _sample_clock(self, stamp_ns: int, t_stamped: int, lead_skipped: bool) -> None:
        """Give the time mapping the packet's (header stamp, sensor time) sample.

        Not that of a packet whose leading words the decoder skipped (the stream's
        start, the resync after a loss): its stamp dates its first word, and its first
        event came up to a packet later. The low sample set every later output up to
        0.8 ms early for seconds, a TRACKING phase up to 0.9 rad off at its stamp
        (red-team review, node under load).
        """
        if lead_skipped:
            return
        if self.time.update(stamp_ns, t_stamped):
            # the header stamp of the packet whose events ended at last_t_us (the leap
            # check compares the two over the same packets, however many empty ones came
            # between)
            self._last_stamp_ns = stamp_ns
        else:
            # a header stamp far off the sensor clock (0, days off): set aside, the
            # outputs keep the sensor clock's time
            self.counters['stamp_jumps'] += 1

    def _unseen_gap_us(self, ev: EventArrays, stamp_ns: int, jumped_us: int) -> int:
        """How far sensor time went beyond the header stamps [us]: how far the packet's
        sample (stamp minus sensor time) falls below the time mapping's offset, at most
        as far as sensor time jumped since the last event (0: no sign). Late stamps lie
        above it and a stamp the mapping would set aside (a header clock stepped by over
        a second) says nothing; a header clock stepped back, its sensor time going on
        without a jump, says nothing either (``jumped_us``: the jump inside the packet
        before, see :func:`~.packet_times.jump_inside_us`).

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
            after, inside_us = largest_step(ev.t_us)
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
        after, _ = largest_step(ev.t_us, back=True)
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
