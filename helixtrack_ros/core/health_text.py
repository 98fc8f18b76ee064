# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What a rotor's health says in words: status messages, reasons, diagnostic values.

The health state machine (:mod:`helixtrack_ros.core.health_machine`) keeps codes and
numbers; these functions turn them into the texts of ``~/health``,
``/diagnostics`` and the offline results, in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
import math

import numpy as np

from helixtrack_ros.core.health import (
    CAUSE_NAMES,
    HI_CAUSE,
    HI_LEVEL,
    HI_LOSSES,
    HI_REASON,
    HS_CAUSE_REF,
    HS_CAUSE_VAL,
    HS_COH,
    HS_RATE,
    HS_SCALE_D,
    HS_SPILL,
    HS_SUPPORT,
    LEVEL_NAMES,
    LOST,
    R_ACCEL,
    R_ACQUIRING,
    R_CENTRE_JUMP,
    R_COARSE_TIME,
    R_COASTING,
    R_DRIFT,
    R_GAP,
    R_HIDDEN,
    R_INCOHERENT,
    R_OK,
    R_OTHER_ROTOR,
    R_PERSP,
    R_POSE_SETTLING,
    R_RPM_RANGE,
    R_SCALE,
    R_SCALE_JUMP,
    R_SETTLING,
    R_SMALL,
    R_SPILL,
    R_STARVED,
    R_THIN,
    R_UNCERTAIN,
    R_UNSTEADY,
    R_UNVERIFIED,
    STATE_LEVELS,
    TRACKING,
    RotorState,
)


def health_statuses(names: Sequence[str], states: Sequence[tuple[int, int]]) -> list[dict]:
    """The statuses of ``~/health`` as dicts (name, level, message, hardware_id, values).

    One definition for the node's messages and the offline results bag.
    """
    out = []
    for name, (state, cause) in zip(names, states):
        st = RotorState(state)
        why = CAUSE_NAMES[cause] if 0 <= cause < len(CAUSE_NAMES) else 'unknown'
        out.append({'name': name, 'level': STATE_LEVELS[st], 'hardware_id': name,
                    'message': st.name if st == RotorState.TRACKING else f'{st.name}: {why}',
                    'values': {'state': st.name, 'state_code': str(int(st))}})
    return out


#: The message of each health cause, from the cause's value and its reference.
_CAUSE_TEXT = {
    R_ACQUIRING: lambda val, ref: 'acquiring phase lock',
    R_STARVED: lambda val, ref: f'starved: {val:.1f} events/ms in the annulus (usual {ref:.1f})',
    R_INCOHERENT: lambda val, ref: f'phase incoherent: tip coherence {val:.2f} (usual {ref:.2f})',
    R_SPILL: lambda val, ref: f'pose off: tip spill {val:.2f} (usual {ref:.2f})',
    R_SCALE: lambda val, ref: f'scale drift {100.0 * math.expm1(val):+.0f} %',
    R_PERSP: lambda val, ref: f'perspective drift {val:.2f}',
    R_UNCERTAIN: lambda val, ref: f'RPM uncertain: std {100.0 * val:.1f} %',
    R_RPM_RANGE: lambda val, ref: f'implausible RPM: {val:.0f} shaft RPM (bound {ref:.0f})',
    R_ACCEL: lambda val, ref: f'implausible RPM change: {val:.0f} RPM/s (bound {ref:.0f})',
    R_SCALE_JUMP: lambda val, ref: f'implausible scale change {100.0 * math.expm1(val):+.0f} %',
    R_CENTRE_JUMP: lambda val, ref: (f'implausible centre step: {val:.2f} tip radii per window '
                                     f'(bound {ref:.2f})'),
    R_GAP: lambda val, ref: 'events lost in transport: re-validating',
    R_SETTLING: lambda val, ref: (f'rate settling: acceleration changed {val:.0f} RPM/s in a '
                                  f'window (re-validating below {ref:.0f})'),
    R_POSE_SETTLING: lambda val, ref: (f'pose settling: tip spill {val:.2f} still changing '
                                       f'(usual {ref:.2f}; re-validating)'),
    R_UNSTEADY: lambda val, ref: (f'rate unsteady: acceleration changed {val:.0f} RPM/s in a '
                                  f'window (bound {ref:.0f})'),
    R_OTHER_ROTOR: lambda val, ref: (f'on the place of another rotor, {val:.1f} tip radii from '
                                     'its own: re-detecting'),
    R_DRIFT: lambda val, ref: (f'rate lagging: mean phase residual {val:.3f} rad '
                               f'(bound {ref:.3f})'),
    R_THIN: lambda val, ref: (f'too few events to judge: {val:.0f} tip-band events in '
                              f'{ref / 1000:.0f} ms'),
    R_SMALL: lambda val, ref: (f'too small to measure: tip radius {val:.1f} px (least '
                               f'{ref:.0f})'),
    R_COASTING: lambda val, ref: (f'phase filter coasting: update weight {val:.1f} per ms '
                                  f'(usual {ref:.1f})'),
    R_HIDDEN: lambda val, ref: (f'partly hidden: update weight {val:.1f} per ms, '
                                f'{100.0 * val / max(ref, 1e-9):.0f} % of usual'),
    R_COARSE_TIME: lambda val, ref: (f'event times too coarse: {val:.0f} us apart, a blade '
                                     f'pass {ref:.0f} us'),
    R_UNVERIFIED: lambda val, ref: (f"rate unverified: a window's mean phase residual known "
                                    f'to {val:.3f} rad only (re-validating below {ref:.3f})'),
}


def reason_text(hi: np.ndarray, hs: np.ndarray) -> str:
    """Human-readable health message of a health state (see health_machine._health_close)."""
    level = int(hi[HI_LEVEL])
    if level == TRACKING:
        return 'tracking'
    cause = int(hi[HI_CAUSE])
    fmt = _CAUSE_TEXT.get(cause)
    text = fmt(float(hs[HS_CAUSE_VAL]), float(hs[HS_CAUSE_REF])) if fmt else 'unknown'
    if level == LOST:
        return f'lost: {text}'
    if int(hi[HI_REASON]) == R_OK and cause != R_ACQUIRING:
        text += ' (recovering)'
    return text


def health_values(hi: np.ndarray, hs: np.ndarray) -> dict[str, str]:
    """Health metrics of the last window for diagnostics (strings)."""
    def fmt(v: float, spec: str) -> str:
        return format(v, spec) if math.isfinite(v) else 'n/a'

    return {
        'health': LEVEL_NAMES[int(hi[HI_LEVEL])],
        'health_losses': str(int(hi[HI_LOSSES])),
        'tip_coherence': fmt(float(hs[HS_COH]), '.3f'),
        'tip_spill': fmt(float(hs[HS_SPILL]), '.3f'),
        'annulus_events_per_ms': fmt(float(hs[HS_RATE]), '.1f'),
        'filter_support_per_ms': fmt(float(hs[HS_SUPPORT]), '.1f'),
        'scale_drift_pct': fmt(100.0 * math.expm1(float(hs[HS_SCALE_D])), '.1f'),
    }
