# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""How finely a stream's event times are resolved, and the outputs that is too coarse for.

An event camera stamps each event to the microsecond; a driver that stamps every
event with its packet's time, or a text export with millisecond times, does not.
The tracker reads each blade's phase from its events' times (Sec. 3.2, Eq. 3), so
with times rounded to a quantum Q a blade pass of period T is seen at T / Q
instants only. Measured (benchmarks/RESULTS.md, twenty-fourth session): the
values stayed within 0.13 % of the truth while a blade pass spanned 8 quanta or
more (quadcopter; lone 2- and 3-blade rotors), and at 5-7 quanta per pass 5-80 %
of them were more than 1 % off or beyond three of their std, all TRACKING, up to
5.4 % off. So a TRACKING output whose blade pass spans fewer than
``MIN_QUANTA_PER_PASS`` quanta is withheld: NaN, DEGRADED, "event times too coarse".

The quantum is the least positive step between consecutive event times over the
last packets checked: 1 us in a sensor's stream of any rate worth tracking, Q in
one rounded to Q, the packet period in one stamped per packet.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.health import DEGRADED, R_COARSE_TIME, RotorState
from helixtrack_ros.pipeline.records import WARN, RotorOutput, withheld

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.core.params import RotorInit

#: a blade pass must span this many time quanta for its outputs to be published
MIN_QUANTA_PER_PASS = 10
#: the events of a packet looked at (its first ones; a quantum shows in any of them)
CHECK_EVENTS = 1024
#: every packet of a stream's first CHECK_FIRST is checked, then one in CHECK_EVERY
CHECK_FIRST = 64
CHECK_EVERY = 4
#: the quantum is the least of the last this many packets checked (times turning coarse
#: within a stream are seen KEEP * CHECK_EVERY packets later; 128 published 60 values up
#: to 2.2 % off; review)
KEEP = 8
#: a packet of fewer events says nothing of the quantum (a sensor's last 1-3 events of a
#: stream, microseconds apart, gave steps of 5-204 us: "rounded" times; review)
LEAST_EVENTS = 32


class TimeQuantum:
    """The time quantum [us] of a stream's events, from its packets (see module)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the stream (a new one starts)."""
        self._packets = 0
        self._last_t_us: int | None = None
        self._seen: deque[int] = deque(maxlen=KEEP)
        #: the least positive step between event times lately [us] (1 before any)
        self.quantum_us = 1

    def observe(self, t_us: np.ndarray) -> None:
        """Take one packet's event times (sorted, as decoded)."""
        if not len(t_us):
            return
        n = self._packets
        self._packets += 1
        last, self._last_t_us = self._last_t_us, int(t_us[-1])
        if (n >= CHECK_FIRST and n % CHECK_EVERY) or len(t_us) < LEAST_EVENTS:
            return
        head = t_us[:CHECK_EVENTS]
        steps = np.diff(head)
        steps = steps[steps > 0]
        q = int(steps.min()) if steps.size else 0
        if last is not None and int(head[0]) > last:
            # (all of a packet at one time: the step from the packet before tells)
            q = min(q, int(head[0]) - last) if q else int(head[0]) - last
        if q > 0:
            self._seen.append(q)
            self.quantum_us = min(self._seen)


def hold_coarse_times(per_rotor: list[list[RotorOutput]], quanta_us: list[int],
                      inits: list[RotorInit]) -> int:
    """Withhold each TRACKING output whose blade pass spans fewer than
    ``MIN_QUANTA_PER_PASS`` time quanta (``per_rotor[r][k]``, rotor r's blades in
    ``inits[r]``, packet k's quantum ``quanta_us[k]``: the one known when it was
    admitted, so that a batch is judged as its packets one by one; review); how many
    were withheld."""
    if max(quanta_us, default=1) <= 1:
        return 0
    held = 0
    tracking = RotorState.TRACKING
    for outs, init in zip(per_rotor, inits, strict=True):
        for k, o in enumerate(outs):
            quantum_us = quanta_us[min(k, len(quanta_us) - 1)]
            if o.state != tracking or quantum_us <= 1:
                continue
            pass_us = 60e6 / max(abs(o.rpm_shaft) * max(init.blades, 1), 1e-9)
            if not pass_us >= MIN_QUANTA_PER_PASS * quantum_us:     # (NaN: withheld)
                held += 1
                outs[k] = withheld(
                    o.name, o.t_us, o.events, WARN,
                    f'event times too coarse: {quantum_us} us apart, a blade pass '
                    f'{pass_us:.0f} us (at least {MIN_QUANTA_PER_PASS} of them)',
                    DEGRADED, RotorState.DEGRADED, R_COARSE_TIME)
    return held

