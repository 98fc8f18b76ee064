# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A rotor's outputs after each packet: its state, and numbers only while TRACKING.

The one place that decides whether a consumer is handed numbers (README
"Trusting the numbers"): geometry checks (centre in the image, region
overlapping it), then the tracker's own health, then the real-time stride.
(The published RPM std also takes the layout's turn: :mod:`layout_roll`.)
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core import tracker_layout as layout
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.health import (
    DEGRADED,
    HI_CAUSE,
    HI_LEVEL,
    LOST,
    R_GAP,
    R_STARVED,
    STATE_LEVELS,
    TRACKING,
    RotorState,
    rotor_state,
)
from helixtrack_ros.core.homography import disc_from_paper_q, homography_from_paper_q
from helixtrack_ros.core.tracker import PacketRun
from helixtrack_ros.pipeline.identity import disc_of
from helixtrack_ros.pipeline.records import ERROR, OK, WARN, RotorOutput, withheld
from helixtrack_ros.pipeline.recovery import RotorRecovery

_TRACKING_STATE = RotorState.TRACKING
#: the scale (tip radius [px]) and centre columns in a packet row (the paper q's s, tx, ty)
_S, _TX, _TY = layout.OUT_Q, layout.OUT_Q + 2, layout.OUT_Q + 3
#: the routing box's columns in a packet row (x0, y0, x1, y1)
_X0, _Y0, _X1, _Y1 = range(layout.PK_BOX, layout.PK_BOX + 4)
#: the other columns a packet row's output reads (module constants: read per row)
_PHASE, _OMEGA, _RPM, _STD = layout.OUT_PHASE, layout.OUT_OMEGA, layout.OUT_RPM, layout.OUT_STD
_EVENTS = layout.PK_N

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.pipeline.batching import Inflight
    from helixtrack_ros.pipeline.rotors import RotorBank


def ordinal(k: int) -> str:
    """2 -> '2nd', 3 -> '3rd', 4 -> '4th', 11 -> '11th', 21 -> '21st'."""
    suffix = 'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')
    return f'{k}{suffix}'


#: the least share of a rotor's tip circle inside the image for its numbers to be published:
#: with the centre on the image border (half the disc seen) a re-detected rotor was
#: published 0.7-2.1 % off while its pose still walked out to the border; 10-20 px inside
#: (53-56 %) 0.3-0.4 % off at up to 10 of its std; 40 px inside (63 %) within 0.12 %
#: (red-team round 5, tip radius 100 px)
MIN_VISIBLE_SHARE = 0.6


def visible_share(w: int, h: int, cx: float, cy: float, radius: float) -> float:
    """The share of the circle (cx, cy, radius) inside the w x h image, from the arcs each
    border cuts off (acos(d / r) / pi at a distance d inside it; arcs cut off by two
    borders at a corner count twice, so the share errs low there). Centre inside."""
    if not radius > 0.0:
        return 1.0
    cut = 0.0
    for d in (cx, w - cx, cy, h - cy):
        if d < radius:
            cut += math.acos(max(d, 0.0) / radius) / math.pi
    return max(0.0, 1.0 - cut)


def _geometry_problem(w: int, h: int, cx: float, cy: float, rpm: float, radius: float,
                      x0: int, y0: int, x1: int, y1: int
                      ) -> tuple[str, RotorState | None] | None:
    """What keeps a rotor's output from being a measurement whatever its health (message,
    and the state it forces; None: the state its health says; DEGRADED: at least that), or
    None: its centre is in the image, its state finite, its region overlaps the image and
    enough of its disc lies inside (:data:`MIN_VISIBLE_SHARE`)."""
    if not (0 <= cx < w and 0 <= cy < h):
        return 'rotor centre left the image', None
    if not math.isfinite(rpm):
        return 'state is not finite', RotorState.LOST
    if x1 < 0 or y1 < 0 or x0 >= w or y0 >= h:
        return 'rotor region outside the image', RotorState.OUTSIDE
    if (cx < radius or cy < radius or w - cx < radius or h - cy < radius) and (
            share := visible_share(w, h, cx, cy, radius)) < MIN_VISIBLE_SHARE:
        return (f'only {share:.0%} of the rotor disc inside the image (under '
                f'{MIN_VISIBLE_SHARE:.0%}: its pose is not measured well)', RotorState.DEGRADED)
    return None


def rotor_status(size: tuple[int, int], stride: int, cx: float, cy: float, rpm: float,
                 health: int, cause: int, events: int, reason: str, box: Sequence[float],
                 rec: RotorRecovery | None = None, radius: float = 0.0
                 ) -> tuple[int, str, RotorState]:
    """Diagnostic level, message and output state: geometry checks, then health
    (``radius``: the tip radius [px], for the share of the disc inside the image)."""
    w, h = size
    inside = 0 <= cx < w and 0 <= cy < h
    # (what rotor_state says of a TRACKING rotor inside the image, without the call)
    state = _TRACKING_STATE if inside and health == TRACKING else rotor_state(
        health, cause, inside, events)
    problem = _geometry_problem(w, h, cx, cy, rpm, radius, int(box[0]), int(box[1]),
                                int(box[2]), int(box[3]))
    if problem is not None and problem[1] == RotorState.DEGRADED:
        if state == _TRACKING_STATE:
            return WARN, problem[0], RotorState.DEGRADED
    elif problem is not None:
        return ERROR, problem[0], state if problem[1] is None else problem[1]
    if health == LOST:
        extra = '; re-detecting' if rec is not None and rec.searching else ''
        return ERROR, reason + extra, state
    if health != TRACKING:
        if rec is not None and rec.reset:
            how = 'resumed at its last pose' if rec.resumed else 're-detected'
            return WARN, f'recovering ({how}): {reason}', state
        return WARN, reason, state
    return _tracking_text(stride) + (state,)


def _tracking_fits(v: list[float], w: int, h: int) -> bool:
    """Whether :func:`rotor_status` makes a TRACKING row (``v``, a packet row as a list)
    TRACKING: its geometry checks, without the rest of the call (per rotor and packet)."""
    return _geometry_problem(w, h, v[_TX], v[_TY], v[_RPM], v[_S], int(v[_X0]), int(v[_Y0]),
                             int(v[_X1]), int(v[_Y1])) is None


def _tracking_text(stride: int) -> tuple[int, str]:
    """(level, message) of a TRACKING output at event stride ``stride``, as
    :func:`rotor_status` says them."""
    if stride > 1:
        return WARN, f'degraded: every {ordinal(stride)} event (real-time policy)'
    return OK, 'tracking'


def nothing_measured(outputs: list[RotorOutput], refused: bool, silent_ns: int,
                     starved: bool) -> list[RotorOutput]:
    """The outputs of a packet that measured nothing, after the last ones ``outputs``.

    A refused packet: a rotor that was measured turns DEGRADED, events lost
    in transport (the next packets re-validate it). An empty packet
    ``silent_ns`` after the last event: TRACKING turns DEGRADED (no events in
    the packet), and TRACKING or DEGRADED turn STARVED once ``starved``.
    Numbers are NaN either way (a packet of no events repeated the last
    TRACKING value for 10 ms, and the per-rotor topics carry no stamp to tell
    a repeat: red-team review); a rotor already not measured keeps its state.
    """
    measured = (RotorState.TRACKING, RotorState.DEGRADED)
    if refused:
        state, cause, text = RotorState.DEGRADED, R_GAP, 'packet refused: nothing measured'
    elif not starved:
        state, cause = RotorState.DEGRADED, R_STARVED
        text = f'no events in the packet ({silent_ns / 1e6:.0f} ms without)'
        measured = (RotorState.TRACKING,)
    else:   # (a rotor starved by the silence so far gets the new length of it)
        state, cause = RotorState.STARVED, R_STARVED
        text = f'no events for {silent_ns / 1e6:.0f} ms'
        measured += (RotorState.STARVED,)
    return [withheld(r.name, r.t_us, 0, STATE_LEVELS[state], text, max(r.health, DEGRADED),
                     state, cause) if r.state in measured else r
            for r in outputs]


def searching_output(bank: RotorBank, r: int, ev: EventArrays, t_last: int,
                     k: int = -1) -> RotorOutput:
    """Output of a LOST rotor during its search after a packet: NaN, and a search step.

    Its tracker does not run: its estimate is not trusted, and running it
    would cost time that the live node does not have.
    """
    rec = bank.recs[r]
    rec.step(bank, r, ev, t_last, k)
    tracker = bank.trackers[r]
    cause = tracker.health_cause
    state = RotorState.STARVED if cause == R_STARVED else RotorState.LOST
    text = f'{tracker.health_reason}; re-detecting'
    if rec.reset:
        how = 'resumed at its last pose' if rec.resumed else 're-detected'
        text, state = f'recovering ({how})', RotorState.ACQUIRING
    return withheld(bank.inits[r].name, t_last, 0, ERROR, text, tracker.health, state, cause)


def outputs_of(bank: RotorBank, r: int, run: PacketRun, inf: Inflight, k0: int, stride: int,
               size: tuple[int, int], homographies: np.ndarray | None = None,
               row_lists: tuple[list, list, list] | None = None) -> list[RotorOutput]:
    """RotorOutputs of a kernel run over packets ``k0, k0 + 1, ...`` of batch ``inf``, with
    the recovery step of each packet.

    A TRACKING row records the last good pose (for a later search); the
    last row, when not TRACKING, runs the recovery step on its packet
    (earlier rows cannot need it: the kernel stops at a LOST rotor) before
    its status is read, as the packet-by-packet order has it. ``size``: the
    image (width, height); ``homographies``: the rows' H when the kernel computed them
    (:class:`~helixtrack_ros.core.tracker_stack.TrackerStack`); ``row_lists`` (k0 0): the
    run's values and health rows and the batch's times as lists already (rows past
    ``run.done`` are not read).
    """
    rec = bank.recs[r]
    name = bank.inits[r].name
    recovery = bank.config.recovery
    if row_lists is not None and k0 == 0:
        rows, health_rows, times = row_lists
    else:
        rows = run.values.tolist()                  # Python numbers: cheap to index
        health_rows = run.health_int.tolist()
        times = inf.t_last[k0:k0 + run.done].tolist()
    outs = []
    good = -1          # the last TRACKING row: the pose a later search starts from
    last = run.done - 1
    w, h = size
    tracking_text = _tracking_text(stride)
    for k in range(run.done):
        v = rows[k]
        health = health_rows[k][HI_LEVEL]
        cause = health_rows[k][HI_CAUSE]
        if recovery and health == TRACKING:
            good = k
            if rec.searching or rec.reset or rec.buf or rec.detecting is not None:
                rec.forget()
        elif recovery and k == last:
            good = _note_good(rec, rows, times, good)
            rec.step(bank, r, inf.packet(k0 + k), times[k], k0 + k)
        events = int(v[_EVENTS])
        if health == TRACKING and _tracking_fits(v, w, h):
            # (the usual row: what rotor_status says of it, without the call)
            level, message = tracking_text
        else:
            # (the health reason is text only a rotor not TRACKING needs)
            level, message, state = rotor_status(
                size, stride, v[_TX], v[_TY], v[_RPM], health, cause, events,
                '' if health == TRACKING else run.reason(k),
                v[layout.PK_BOX:layout.PK_BOX + 4], rec, abs(v[_S]))
            if state != TRACKING:
                outs.append(withheld(name, times[k], events, level, message, health, state,
                                     cause))
                continue
        hom = (homographies[k] if homographies is not None else
               homography_from_paper_q(*v[layout.OUT_Q:layout.OUT_Q + 6]))
        outs.append(RotorOutput(name, times[k], v[_PHASE], v[_OMEGA], v[_RPM], v[_STD], hom,
                                events, level, message, health))
    _note_good(rec, rows, times, good)
    return outs


def tracking_discs(run: PacketRun, size: tuple[int, int],
                   homographies: np.ndarray | None = None) -> list[tuple | None]:
    """Per row of a kernel run, the disc (centre x, y, tip radius [px]) that
    :func:`outputs_of` publishes when the row's output is TRACKING, else None: the same
    status and homography, without building the outputs or running a recovery step."""
    rows = run.values.tolist()
    levels = run.health_int[:, HI_LEVEL].tolist()
    discs: list[tuple | None] = []
    for k in range(run.done):
        v = rows[k]
        if levels[k] != TRACKING or rotor_status(
                size, 1, v[_TX], v[_TY], v[layout.OUT_RPM], TRACKING, 0, 0, '',
                v[layout.PK_BOX:layout.PK_BOX + 4], None, abs(v[_S]))[2] != RotorState.TRACKING:
            discs.append(None)
            continue
        discs.append(disc_of(homographies[k]) if homographies is not None else
                     disc_from_paper_q(*v[layout.OUT_Q:layout.OUT_Q + 4]))
    return discs


def _note_good(rec: RotorRecovery, rows: list[list[float]], times: list[int], k: int) -> int:
    """Remember row k's pose (of time ``times[k]``) as the rotor's last good one (k < 0:
    none); returns -1."""
    if k >= 0:
        v = rows[k]
        q0 = layout.PK_QCORE
        rec.note_good(v[q0:q0 + 6], v[layout.PK_RPM_EKF], int(v[layout.PK_ZETA]),
                      int(times[k]))
    return -1
