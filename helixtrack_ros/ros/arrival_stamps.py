# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Header stamps for a driver that sets none: the node's clock at each packet's arrival.

A header stamp of 0 is no stamp; the time mapping sets it aside and the outputs keep the
mapping they have. A driver that never stamps leaves no mapping at all, and every output
was stamped 0 (red-team round 5: 11,894 TRACKING values at t = 0). While the pipeline has
no mapping, and from then on while the stream stays unstamped, a packet stamped 0 takes
its arrival time on the node's clock instead, what a driver's stamp is too (the host's
clock when the data came): the mapping's running minimum then keeps the least-delayed
arrivals, as it does with a driver's stamps. Once a packet is stamped, stamps of 0 are
set aside again (the mapping the driver's stamps made goes on).
"""

from __future__ import annotations

from collections.abc import Callable

from helixtrack_ros.codecs.time_sync import NO_STAMP_NS
from helixtrack_ros.io.packet_record import EventPacketRecord


class ArrivalStamps:
    """Fills in the header stamps of a stream that has none (see the module docstring)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        #: the stream's packets are being stamped on arrival
        self.filling = False
        #: packets stamped on arrival
        self.filled = 0

    def fill(self, batch: list[EventPacketRecord], arrivals: list[int], clock_offset_ns: int,
             mapped: bool) -> list[EventPacketRecord]:
        """``batch`` with each unstamped packet stamped at its arrival (system clock, ns)
        plus ``clock_offset_ns`` (the node's clock minus the system clock), while the
        pipeline has no time mapping (``mapped`` False) or the stream is being filled; as
        it is otherwise, and while the node's clock does not run (sim time)."""
        out = []
        for pkt, arrived in zip(batch, arrivals):
            if pkt.stamp_ns != NO_STAMP_NS:
                self.filling = False          # (the driver stamps: its stamps map the time)
            elif (self.filling or not mapped) and arrived + clock_offset_ns > 0:
                if not self.filled:
                    self._say('header stamps are 0 (the driver sets none): the outputs are '
                              "stamped from this node's clock on each packet's arrival")
                self.filling = True
                self.filled += 1
                pkt = pkt._replace(stamp_ns=arrived + clock_offset_ns)
            out.append(pkt)
        return out
