# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The pipeline's statuses for ``/diagnostics``: one for the pipeline, one per rotor.

Plain dicts (name, level, message, hardware_id, values) so that the node
turns them into ``diagnostic_msgs`` and the CLI prints or stores them. Once
no packet has come for :data:`STREAM_IDLE_S` (the stream stopped) the
statuses say so instead of repeating the last live state ("tracking",
"behind real time") as if it were current.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from helixtrack_ros.core.detection import DetectedRotor
from helixtrack_ros.core.health import RotorState
from helixtrack_ros.pipeline.outputs import ordinal
from helixtrack_ros.pipeline.realtime import StridePolicy
from helixtrack_ros.pipeline.records import OK, WARN, RotorOutput

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.pipeline.rotors import RotorBank

#: Wall time without a packet after which the stream counts as stopped [s].
STREAM_IDLE_S = 2.0


def stopped(idle_s: float | None) -> bool:
    """True when a stream that had packets has had none for STREAM_IDLE_S."""
    return idle_s is not None and idle_s >= STREAM_IDLE_S


def pipeline_status(counters: dict[str, int], policy: StridePolicy, bank: RotorBank,
                    detected: list[DetectedRotor], idle_s: float | None = None,
                    quantum_us: int = 1) -> dict[str, Any]:
    """The pipeline's own status: counters, rates, load, stride and start-up detections;
    ``idle_s``: wall time since the last packet (None before the first); ``quantum_us``:
    the stream's time quantum (pipeline/time_quantum.py)."""
    c = counters
    sensor_s = max(policy.sensor_us * 1e-6, 1e-9)
    level, msg = OK, 'ok'
    if c['packets_refused'] or c['decode_errors'] or c.get('packets_corrupt'):
        level, msg = WARN, 'bad packets seen'
    if policy.stride > 1:
        level, msg = WARN, f'behind real time: every {ordinal(policy.stride)} event'
    if not bank.inits:
        level, msg = WARN, ('detecting rotors' if bank.config.auto_detect
                            else 'no rotors configured')
    if stopped(idle_s):
        level, msg = WARN, f'stream stopped: no packets for {idle_s:.0f} s'
    values = {k: str(v) for k, v in c.items()}
    values.update({
        'events_per_s_in': f'{c["events_in"] / sensor_s:.0f}',
        'load': f'{policy.load:.3f}',
        'stride': str(policy.stride),
        'gn_target_events': str(bank.trackers[0].gn_target_events if bank.trackers else 0),
        'backlog_packets': f'{policy.backlog_ema:.1f}',
        'time_quantum_us': str(quantum_us),
    })
    for i, d in enumerate(detected):
        # what the start-up detection found (auto_detect), for inspection
        values[f'detected_rotor_{i}'] = (
            f'centre ({d.center_px[0]:.1f}, {d.center_px[1]:.1f}) px, radius '
            f'{d.radius_px:.1f} px, {d.blades} blades, direction {d.direction:+d}, '
            f'{d.rpm_shaft:.0f} RPM, score {d.score:.2f}')
    return {'name': 'helixtrack: pipeline', 'level': level, 'message': msg,
            'hardware_id': 'helixtrack', 'values': values}


def rotor_statuses(bank: RotorBank, policy: StridePolicy, last_outputs: list[RotorOutput],
                   idle_s: float | None = None) -> list[dict[str, Any]]:
    """One status per rotor: its last output's level and message, estimates and health
    (once the stream stopped, a warning that names the last state as past)."""
    sensor_s = max(policy.sensor_us * 1e-6, 1e-9)
    out = []
    lasts = last_outputs or [None] * len(bank.inits)
    for (init, tracker, rec), last in zip(bank.statuses(), lasts):
        st = tracker.state
        level, message = (last.level, last.message) if last else (WARN, 'no data yet')
        if stopped(idle_s):
            level, message = WARN, f'stream stopped (last: {message})'
        # (the estimate only while it is published: a LOST rotor's is no measurement; the
        # pipeline's last output, its std with the layout's turn in it)
        measured = last is not None and last.state == RotorState.TRACKING
        values = {
            'rpm_shaft': f'{last.rpm_shaft:.1f}' if measured else 'nan',
            'rpm_shaft_std': f'{last.rpm_shaft_std:.1f}' if measured else 'nan',
            'events_per_s': f'{st.events_in / sensor_s:.0f}',
            'pose_updates': str(st.pose_updates),
            'direction': str(st.direction),
            'resumes': str(rec.resumes),
            'recoveries': str(rec.recoveries),
            'recovery_attempts': str(rec.attempts),
        }
        values.update(tracker.health_values())
        out.append({'name': f'helixtrack: rotor {init.name}', 'level': level,
                    'message': message, 'hardware_id': init.name, 'values': values})
    return out
