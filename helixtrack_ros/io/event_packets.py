# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Decoded events as the driver's packets: ``mono`` packet records of about 1 ms.

The readers of files that hold decoded events (DAT, numpy ``.npz``) give
the pipeline what a camera driver gives: packets cut as the driver cuts
them (a packet starts at an event and holds the events less than
``packet_us`` after it), each a ``mono`` EventPacket record whose time
base is its first event's time, stamped ``date_ns`` plus sensor time.
"""

from collections.abc import Iterable, Iterator

import numpy as np

from helixtrack_ros.codecs.evt3_encoder import packetize
from helixtrack_ros.codecs.mono import mono_words
from helixtrack_ros.codecs.time_sync import NO_STAMP_NS
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.packet_record import EventPacketRecord


def mono_packets(chunks: Iterable[EventArrays], width: int, height: int, date_ns: int = 0,
                 packet_us: int = 1000) -> Iterator[EventPacketRecord]:
    """The packets of time-sorted events given in chunks (a packet may span two chunks)."""
    seq, last_stamp = 0, 0
    pending: EventArrays | None = None
    for chunk in chunks:
        ev = chunk if pending is None else EventArrays.concatenate([pending, chunk])
        cuts = packetize(ev.t_us, packet_us)
        if not cuts:
            continue
        for a, b in cuts[:-1]:     # (the last one may go on in the next chunk)
            pkt = _packet(ev.slice(a, b), width, height, date_ns, seq, last_stamp)
            seq, last_stamp = seq + 1, pkt.stamp_ns
            yield pkt
        pending = ev.slice(cuts[-1][0], len(ev))
    if pending is not None and len(pending):
        yield _packet(pending, width, height, date_ns, seq, last_stamp)


def _packet(ev: EventArrays, width: int, height: int, date_ns: int, seq: int,
            last_stamp: int) -> EventPacketRecord:
    """One packet's ``mono`` record: its time base its first event's (``mono`` needs the
    events within 4.29 s of it), its stamp never decreasing."""
    base_ns = int(ev.t_us.min()) * 1000
    words = mono_words(ev.x, ev.y, ev.p, np.asarray(ev.t_us, np.int64) * 1000 - base_ns)
    stamp = max(date_ns + int(ev.t_us[0]) * 1000, last_stamp + 1 if seq else NO_STAMP_NS + 1)
    return EventPacketRecord(stamp, '', height, width, seq, base_ns, 'mono', False,
                             words.view(np.uint8), stamp)
