# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The health state machine of one rotor: the window close and the per-packet checks.

At each window close :func:`_health_close` compares the window's metrics
(:mod:`helixtrack_ros.core.health`), and the scale, perspective and RPM
uncertainty of the tracker, with absolute limits and slow references
(exponential averages over good TRACKING windows, a running mean over the
first windows after lock), and runs the state machine:

- TRACKING -> DEGRADED at the first bad window;
- DEGRADED -> LOST after ``health_lost_us`` of consecutive bad windows;
- DEGRADED / LOST -> TRACKING after ``health_recover_us`` of good windows;
- before the phase lock (acquisition) the level is DEGRADED, "acquiring".

The thresholds were set on the simulator's scenes (``benchmarks/
bench_recovery.py``): a 30 %-of-radius image jump or a hidden rotor is LOST
within about 20-30 ms, tracked scenes stay TRACKING.

After every packet a TRACKING rotor is also checked on its pending window:
a shaft RPM outside its range is LOST at once, a lagging rate or a coasting
phase filter DEGRADED at once. What the windows are judged against is in
:mod:`helixtrack_ros.core.health_checks`, the slots in
:mod:`helixtrack_ros.core.health`.
"""

import math

from helixtrack_ros.core.health import (
    DEGRADED,
    HI_ACC0,
    HI_CAUSE,
    HI_LEVEL,
    HI_LOSSES,
    HI_NTIP,
    HI_REASON,
    HI_T0,
    HP_COHMIN,
    HP_COHREL,
    HP_COHSEED,
    HP_DRIFT,
    HP_LAG,
    HP_LOST,
    HP_MIN_RADIUS,
    HP_PERSPTOL,
    HP_POSETAU,
    HP_REFTAU,
    HP_SCALETOL,
    HP_SETTLE,
    HP_SETTLE_SPILL,
    HP_SPILLMAX,
    HP_SPILLREL,
    HP_SPILLSEED,
    HP_STARVE,
    HP_STDREL,
    HP_WIN,
    HS_BAD_US,
    HS_CAUSE_REF,
    HS_CAUSE_VAL,
    HS_COH,
    HS_COH_REF,
    HS_EPS,
    HS_EPS2,
    HS_GATE_ACC,
    HS_GATE_T,
    HS_GOOD_US,
    HS_JERK,
    HS_LOGS_REF,
    HS_NREF,
    HS_P31_REF,
    HS_P32_REF,
    HS_PERSP_D,
    HS_RATE,
    HS_RATE_REF,
    HS_RPM_REF,
    HS_SCALE_D,
    HS_SPILL,
    HS_SPILL_REF,
    HS_STD_REL,
    HS_SUPPORT,
    HS_SUPPORT_REF,
    HS_W,
    LOST,
    R_ACQUIRING,
    R_COASTING,
    R_DRIFT,
    R_HIDDEN,
    R_INCOHERENT,
    R_OK,
    R_PERSP,
    R_POSE_SETTLING,
    R_RPM_RANGE,
    R_SCALE,
    R_SETTLING,
    R_SMALL,
    R_SPILL,
    R_STARVED,
    R_THIN,
    R_UNCERTAIN,
    R_UNSTEADY,
    R_UNVERIFIED,
    TRACKING,
)
from helixtrack_ros.core.health_checks import (
    _VERIFY_Z,
    _coasting,
    _drift,
    _drift_bound,
    _drift_se,
    _gate,
    _hidden,
    _jerk_bound,
    _lag,
    _lag_bound,
    _learn_lag_noise,
    _outside_rpm_range,
    _recover_us,
    _shaft_rpm,
    _tip_evidence,
    _usual_rate,
    _usual_support,
)
from helixtrack_ros.core.jit import kernel, kernel_inline

#: per packet, a pending window younger than this fraction of a window is not judged: a
#: pose step can shift the residuals for ~1 ms (quadcopter_4m: 0.032 rad, then back),
#: while a rate lag keeps growing (the window close judges every whole window)
_DRIFT_MIN_SPAN = 0.4
#: the first slow references are the running mean of this many good windows, learnt at any
#: level; each needs a phase lock (``health_coherence_seed``) and a pose on the blade tips
#: (``health_spill_seed``)
_SEED_WINDOWS = 4


@kernel_inline
def _set_cause(hs, hi, cause, val, ref):
    """The cause of the current level, with its value and reference (the message's)."""
    hi[HI_CAUSE] = cause
    hs[HS_CAUSE_VAL] = val
    hs[HS_CAUSE_REF] = ref


@kernel_inline
def _revalidation_unsettled(hp, hs, hi, level, nref, spill, spill_prev, se):
    """True (and the reason set) while a window of a rotor being re-validated must not count.

    The rate must be measured: the window's mean phase residual known to ``se`` [rad],
    within 1 / ``_VERIFY_Z`` of ``health_phase_drift`` (a filter with too few updates
    coasts, and every test below reads a coasting rate settled). It must be
    settled (a rate still ringing after a loss or a lock is not published), and so
    must the pose: a tip spill above its usual value that still changes from window
    to window is a pose converging (after a gap it biased a steady rate by 1-2 %); a
    spill that stays put at a new level is a settled pose.
    """
    why = R_OK
    val = 0.0
    ref = 0.0
    bound = _jerk_bound(hp, hs)
    if hp[HP_SETTLE] > 0.0:
        bound = min(bound, hp[HP_SETTLE])
    if hp[HP_DRIFT] > 0.0 and not _VERIFY_Z * se <= hp[HP_DRIFT]:
        why, val, ref = R_UNVERIFIED, se, hp[HP_DRIFT] / _VERIFY_Z
    elif bound < math.inf and not hs[HS_JERK] <= bound:
        why, val, ref = R_SETTLING, hs[HS_JERK], bound
    elif hp[HP_SETTLE_SPILL] > 0.0 and nref > 0 and spill == spill \
            and spill > hs[HS_SPILL_REF] + hp[HP_SETTLE_SPILL] \
            and not abs(spill - spill_prev) <= hp[HP_SETTLE_SPILL]:
        why, val, ref = R_POSE_SETTLING, spill, hs[HS_SPILL_REF]
    if why == R_OK:
        return False
    hi[HI_REASON] = why
    hs[HS_GOOD_US] = 0.0
    if level != LOST:
        _set_cause(hs, hi, why, val, ref)
    return True


@kernel
def _health_range(hp, hs, hi, om):
    """Per packet: a TRACKING rotor whose shaft RPM left its plausible range is LOST at
    once, as at a window close (a motor stopping was published at 55 and 2 RPM, below
    gate_rpm_min's 100, until the window closed; scene review)."""
    if hi[HI_LEVEL] != TRACKING:
        return
    out, rpm, bound = _outside_rpm_range(hp, om)
    if not out:
        return
    hi[HI_LEVEL] = LOST
    hi[HI_REASON] = R_RPM_RANGE
    hi[HI_LOSSES] += 1
    _set_cause(hs, hi, R_RPM_RANGE, rpm, bound)
    hs[HS_GOOD_US] = 0.0


@kernel_inline
def _degrade_now(hs, hi, reason, val, ref):
    """A per-packet check failed: DEGRADED at once, for ``reason`` (its value and bound),
    its good time starting again."""
    hi[HI_LEVEL] = DEGRADED
    hi[HI_REASON] = reason
    _set_cause(hs, hi, reason, val, ref)
    hs[HS_GOOD_US] = 0.0


@kernel
def _health_drift(hp, hs, hi, t, om):
    """Per packet: a TRACKING rotor whose rate lags becomes DEGRADED at once.

    Checked after every packet ending at ``t``, not only at the window close, since
    a lag reaches several % within 1-2 ms of a sudden acceleration: on the recent
    residuals (:func:`_lag`, against a bound that learns their usual size at every
    level: :func:`_learn_lag_noise`), and on the pending window (:func:`_drift`, from
    ``_DRIFT_MIN_SPAN`` of a window on); the window close then judges the whole
    window as usual.
    """
    drift = 0.0
    bound = 0.0
    if hp[HP_LAG] > 0.0:
        if hi[HI_LEVEL] == TRACKING:
            drift = _lag(hp, hs)
            bound = _lag_bound(hp, hs, om)
        _learn_lag_noise(hp, hs, om, float(t))
    if hi[HI_LEVEL] != TRACKING:
        return
    if not drift > bound and hp[HP_DRIFT] > 0.0 \
            and t - hi[HI_T0] >= _DRIFT_MIN_SPAN * hp[HP_WIN]:
        drift = _drift(hp, hs)
        bound = _drift_bound(hp, om, t - hi[HI_T0])
    if drift > bound:
        _degrade_now(hs, hi, R_DRIFT, drift, bound)


@kernel
def _health_support(hp, hs, hi, t, om):
    """Per packet: a TRACKING rotor whose phase filter coasts (:func:`_coasting`) on the
    pending window (from ``_DRIFT_MIN_SPAN`` of a window on) becomes DEGRADED at once,
    as :func:`_health_drift` does for a lagging rate."""
    span = t - hi[HI_T0]
    if hi[HI_LEVEL] != TRACKING or span < _DRIFT_MIN_SPAN * hp[HP_WIN]:
        return
    support = hs[HS_W] * 1000.0 / span
    if _coasting(hp, hs, om, support, span, 1.0):
        _degrade_now(hs, hi, R_COASTING, support, _usual_support(hp, hs, om))


#: a packet's own support below this share of the window's bound (``health_support_rel``
#: of the usual support) is coasting at once. Calibrated on 33 scenes at egomotion 1, 4
#: and 7 (benchmarks/RESULTS.md): a TRACKING rotor's packets kept 0.245 of the usual
#: support or more, a packet of noise events 0.006
_PACKET_SUPPORT_SHARE = 0.25


@kernel
def _health_packet_support(hp, hs, hi, t, om, w_from, win_from, t_from):
    """Per packet: a TRACKING rotor whose phase filter found almost no support in the
    packet itself (from ``t_from``, the pending window's weight ``w_from`` then, its start
    ``win_from``; not judged when a window closed in the packet) becomes DEGRADED at once.
    The window's check (:func:`_health_support`) judges from 0.4 of a window on: a packet
    of noise early in a window was published TRACKING, an extrapolation (red-team review).
    """
    # (a window closed in the packet: its events may all lie in the closed one, which the
    # window's own check judged; the packet after is judged again)
    if hi[HI_LEVEL] != TRACKING or t_from < 0 or hi[HI_T0] != win_from:
        return
    span = float(t - t_from)
    if span <= 0.0:
        return
    support = (hs[HS_W] - w_from) * 1000.0 / span
    if _coasting(hp, hs, om, support, span, _PACKET_SUPPORT_SHARE):
        _degrade_now(hs, hi, R_COASTING, support, _usual_support(hp, hs, om))


@kernel_inline
def _pose_drifts(hs, q):
    """The tip radius s [px] of the pose ``q``, the drift of its log scale from the slow
    reference, and that of its perspective terms (times the centre's distance, per s)."""
    s = math.exp(q[0])
    tn = math.sqrt(q[2] * q[2] + q[3] * q[3])
    ds = q[0] - hs[HS_LOGS_REF]
    dp = math.sqrt((q[4] - hs[HS_P31_REF]) ** 2 + (q[5] - hs[HS_P32_REF]) ** 2) * tn / max(
        s, 1e-300)
    return s, ds, dp


@kernel_inline
def _keep_window_metrics(hs, rate, coh, spill, ds, dp, std_rel, support):
    """The closed window's metrics, for the health messages and the next window's checks."""
    hs[HS_SUPPORT] = support
    hs[HS_RATE] = rate
    hs[HS_COH] = coh
    hs[HS_SPILL] = spill
    hs[HS_SCALE_D] = ds
    hs[HS_PERSP_D] = dp
    hs[HS_STD_REL] = std_rel


@kernel_inline
def _start_next_window(hs, hi, t_end, n_acc):
    """Open the next window at ``t_end``: its in-annulus counter start and empty residual
    sums (the tip sums are reset, or carried on, by :func:`_tip_evidence`)."""
    hi[HI_T0] = t_end
    hi[HI_ACC0] = n_acc
    hs[HS_EPS] = 0.0
    hs[HS_EPS2] = 0.0
    hs[HS_W] = 0.0


@kernel_inline
def _hold_acquiring(hs, hi, level):
    """A window of a rotor not locked yet: DEGRADED 'acquiring' (unless LOST), and the
    gates compare from the next lock on."""
    hi[HI_REASON] = R_ACQUIRING
    hs[HS_GATE_T] = -1.0
    hs[HS_GATE_ACC] = math.nan
    if level != LOST:
        hi[HI_LEVEL] = DEGRADED
        hi[HI_CAUSE] = R_ACQUIRING


@kernel_inline
def _lose_implausible(hs, hi, level, gate, gval, gref, dur):
    """A window that failed a plausibility gate (:func:`_gate`), an implausible state: bad
    time, and LOST at once (no DEGRADED grace period)."""
    hi[HI_REASON] = gate
    hs[HS_BAD_US] += dur
    hs[HS_GOOD_US] = 0.0
    if level != LOST:
        hi[HI_LEVEL] = LOST
        hi[HI_LOSSES] += 1
        _set_cause(hs, hi, gate, gval, gref)


@kernel_inline
def _reason_with_references(hp, hs, level, om, rate, thin, n_tip, span, s, coh, spill,
                            support, dur, ds, dp, std_rel, drift):
    """(reason, value, reference) of the first check a window fails once slow references
    exist, in the reason codes' order of priority; R_OK when it passes them all. While the
    references are still the running mean of the first windows, a window must show a
    phase lock (``health_coherence_seed``) as the first one did: after a seed of 0.60,
    windows of 0.33-0.48 averaged into them, and a pose half a tip radius off was
    published up to 2.5 % off (scene review); and a pose on the blade tips
    (``health_spill_seed``)."""
    reason = R_OK
    val = 0.0
    ref = 0.0
    usual = _usual_rate(hp, hs, om)
    if rate < hp[HP_STARVE] * usual:
        reason, val, ref = R_STARVED, rate, usual
    elif thin:
        reason, val, ref = R_THIN, n_tip, span
    elif s < hp[HP_MIN_RADIUS]:
        reason, val, ref = R_SMALL, s, hp[HP_MIN_RADIUS]
    elif coh == coh and (coh < hp[HP_COHMIN] or coh < hp[HP_COHREL] * hs[HS_COH_REF]
                         or (hs[HS_NREF] < _SEED_WINDOWS and coh < hp[HP_COHSEED])):
        reason, val, ref = R_INCOHERENT, coh, hs[HS_COH_REF]
    elif spill == spill and (spill > hp[HP_SPILLMAX]
                             or spill > hs[HS_SPILL_REF] + hp[HP_SPILLREL]
                             or (hs[HS_NREF] < _SEED_WINDOWS and spill > hp[HP_SPILLSEED])):
        reason, val, ref = R_SPILL, spill, hs[HS_SPILL_REF]
    elif _coasting(hp, hs, om, support, dur, 1.0):
        # (after the pose checks: a pose error is the more telling reason)
        reason, val, ref = R_COASTING, support, _usual_support(hp, hs, om)
    elif _hidden(hp, hs, om, support, dur):
        reason, val, ref = R_HIDDEN, support, _usual_support(hp, hs, om)
    elif abs(ds) > hp[HP_SCALETOL]:
        reason, val, ref = R_SCALE, ds, 0.0
    elif dp > hp[HP_PERSPTOL]:
        reason, val, ref = R_PERSP, dp, 0.0
    elif std_rel > hp[HP_STDREL]:
        reason, val, ref = R_UNCERTAIN, std_rel, 0.0
    elif level == TRACKING and hs[HS_JERK] > _jerk_bound(hp, hs):
        # (while re-validating, _revalidation_unsettled holds the same bound)
        reason, val, ref = R_UNSTEADY, hs[HS_JERK], _jerk_bound(hp, hs)
    elif hp[HP_DRIFT] > 0.0 and drift > _drift_bound(hp, om, dur):
        reason, val, ref = R_DRIFT, drift, _drift_bound(hp, om, dur)
    return reason, val, ref


@kernel_inline
def _reason_before_references(hp, thin, n_tip, span, s, coh, spill):
    """(reason, value, reference) of the first absolute limit a window fails while no slow
    reference exists yet; R_OK when it passes them all.

    A window that passes becomes the first reference, which later windows are judged
    against: it must show a phase lock, a coherence of at least ``health_coherence_seed``
    (as must the next windows averaged into the references, :data:`_SEED_WINDOWS`). A lock
    on a wrong rate or a pose off the rotor reads 0.1-0.5 (background and unrelated events
    average cos(eps) to 0), and references learnt there let later windows of the same
    kind pass: after a re-detection, a rotor whose pose walked toward its neighbour was
    published 9.5 % off (scene review).
    """
    reason = R_OK
    val = 0.0
    ref = 0.0
    if thin:
        reason, val, ref = R_THIN, n_tip, span
    elif s < hp[HP_MIN_RADIUS]:
        reason, val, ref = R_SMALL, s, hp[HP_MIN_RADIUS]
    elif coh == coh and coh < max(hp[HP_COHMIN], hp[HP_COHSEED]):
        # no reference yet: absolute limits only, and a seed must show a phase lock
        reason, val, ref = R_INCOHERENT, coh, math.nan
    elif spill == spill and spill > min(hp[HP_SPILLMAX], hp[HP_SPILLSEED]):
        # (and its pose must sit on the blade tips)
        reason, val, ref = R_SPILL, spill, math.nan
    return reason, val, ref


@kernel_inline
def _count_bad_window(hp, hs, hi, level, reason, val, ref, dur):
    """A bad window: bad time; TRACKING -> DEGRADED, DEGRADED -> LOST after
    ``health_lost_us`` of it."""
    hs[HS_BAD_US] += dur
    hs[HS_GOOD_US] = 0.0
    if level != LOST:
        _set_cause(hs, hi, reason, val, ref)
    if level == TRACKING:
        hi[HI_LEVEL] = DEGRADED
    elif (level == DEGRADED and hs[HS_BAD_US] >= hp[HP_LOST] and reason != R_DRIFT
          and reason != R_THIN and reason != R_SMALL and reason != R_HIDDEN):
        # (a lagging rate settles by itself, a thin, small or partly hidden rotor is where
        # it was: DEGRADED, not a loss and a re-detection; a partly hidden one made LOST
        # was re-detected every 0.1-0.2 s, on a shaking camera the loss cost 111 values)
        hi[HI_LEVEL] = LOST
        hi[HI_LOSSES] += 1


@kernel_inline
def _count_good_window(hp, hs, hi, level, om, dur):
    """A good window: good time; after :func:`_recover_us` of it the bad time is cleared
    and the rotor is TRACKING. Returns the level now."""
    hs[HS_GOOD_US] += dur
    if hs[HS_GOOD_US] >= _recover_us(hp, om):
        hs[HS_BAD_US] = 0.0
        if level != TRACKING:
            hi[HI_LEVEL] = TRACKING
            hi[HI_CAUSE] = R_OK
            level = TRACKING
    return level


@kernel_inline
def _learn_references(hp, hs, q, om, nref, dur, rate, support, coh, spill):
    """Fold a good window into the slow references: a running mean over the first
    windows, then an EMA (``health_ref_tau_us``; ``health_pose_tau_us`` for the pose)."""
    a = max(1.0 / (nref + 1.0), min(1.0, dur / hp[HP_REFTAU]))
    ap = max(1.0 / (nref + 1.0), min(1.0, dur / hp[HP_POSETAU]))
    if nref == 0:
        hs[HS_LOGS_REF] = q[0]
        hs[HS_P31_REF] = q[4]
        hs[HS_P32_REF] = q[5]
    else:
        hs[HS_LOGS_REF] += ap * (q[0] - hs[HS_LOGS_REF])
        hs[HS_P31_REF] += ap * (q[4] - hs[HS_P31_REF])
        hs[HS_P32_REF] += ap * (q[5] - hs[HS_P32_REF])
    hs[HS_RATE_REF] += a * (rate - hs[HS_RATE_REF])
    hs[HS_RPM_REF] += a * (_shaft_rpm(hp, om) - hs[HS_RPM_REF])
    hs[HS_SUPPORT_REF] += a * (support - hs[HS_SUPPORT_REF])
    if coh == coh:
        hs[HS_COH_REF] += (a if nref > 0 else 1.0) * (coh - hs[HS_COH_REF])
    if spill == spill:
        hs[HS_SPILL_REF] += (a if nref > 0 else 1.0) * (spill - hs[HS_SPILL_REF])
    hs[HS_NREF] = nref + 1.0


@kernel
def _health_close(hp, hs, hi, q, locked, om, P11, n_acc, t_end):
    """Close the health window ending at ``t_end`` and update the level.

    ``n_acc`` is the tracker's in-annulus counter (the window's count is its
    increase since the window start); tip and spill counts and the cos sum
    are in ``hi`` / ``hs``. The window's metrics are compared with absolute
    limits and the slow references (see the module docstring).
    """
    dur = float(t_end - hi[HI_T0])
    if dur <= 0.0:
        return
    drift = _drift(hp, hs)
    drift_se = _drift_se(hs)
    n_win = n_acc - hi[HI_ACC0]
    n_tip = hi[HI_NTIP]
    rate = n_win * 1000.0 / dur
    coh, spill, carry, thin, span = _tip_evidence(hp, hs, hi, om, locked, t_end)
    s, ds, dp = _pose_drifts(hs, q)
    std_rel = math.sqrt(max(P11, 0.0)) / max(abs(om), 1e-9)
    support = hs[HS_W] * 1000.0 / dur
    spill_prev = hs[HS_SPILL]
    _keep_window_metrics(hs, rate, coh, spill, ds, dp, std_rel, support)
    _start_next_window(hs, hi, t_end, n_acc)
    level = hi[HI_LEVEL]
    if not locked:
        _hold_acquiring(hs, hi, level)
        return
    gate, gval, gref = _gate(hp, hs, q, om, float(t_end))
    if gate != R_OK:
        _lose_implausible(hs, hi, level, gate, gval, gref, dur)
        return
    nref = hs[HS_NREF]
    if nref > 0:
        reason, val, ref = _reason_with_references(hp, hs, level, om, rate, thin, n_tip, span,
                                                   s, coh, spill, support, dur, ds, dp,
                                                   std_rel, drift)
    else:
        reason, val, ref = _reason_before_references(hp, thin, n_tip, span, s, coh, spill)
    if reason == R_OK and level != TRACKING:
        # re-validating: neither good nor bad time until the rate and the pose are settled,
        # nor while the tip evidence is still gathered (a rotor turns TRACKING only on
        # judged windows)
        if carry:
            hi[HI_REASON] = R_OK
            return
        if _revalidation_unsettled(hp, hs, hi, level, nref, spill, spill_prev, drift_se):
            return
    hi[HI_REASON] = reason
    if reason != R_OK:
        _count_bad_window(hp, hs, hi, level, reason, val, ref, dur)
        return
    level = _count_good_window(hp, hs, hi, level, om, dur)
    # slow references follow good windows: a running mean at first, then an EMA
    if level == TRACKING or nref < _SEED_WINDOWS:
        _learn_references(hp, hs, q, om, nref, dur, rate, support, coh, spill)


@kernel
def _health_advance(hp, hs, hi, q, locked, om, P11, n_acc, t):
    """Close every health window that ends at or before ``t`` (events up to ``t`` seen).

    A gap of more than 64 windows is closed as one long window.
    """
    if hi[HI_T0] < 0:
        return
    win = int(hp[HP_WIN])
    k = 0
    while t >= hi[HI_T0] + win:
        if k == 64:
            _health_close(hp, hs, hi, q, locked, om, P11, n_acc,
                          hi[HI_T0] + ((t - hi[HI_T0]) // win) * win)
            break
        _health_close(hp, hs, hi, q, locked, om, P11, n_acc, hi[HI_T0] + win)
        k += 1
