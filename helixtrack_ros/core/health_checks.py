# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What a rotor's health window is judged against (numba inline helpers, and the gates).

The usual event rate and phase-filter support (slow references scaled with the
shaft RPM), the phase drift of a lagging rate and its bound, the good time that
validates a rate, the plausibility gates, and the tip-band evidence of a window
(carried on while too thin to judge). The state machine that acts on them is
:mod:`helixtrack_ros.core.health_machine`; the slots are in
:mod:`helixtrack_ros.core.health`.
"""

import math

from helixtrack_ros.core.fastmath import shaft_rpm_k  # (the import drops stale kernel caches)
from helixtrack_ros.core.health import (
    HI_EV_T0,
    HI_NOUT,
    HI_NTIP,
    HI_T0,
    HP_ACCEL,
    HP_BLADES,
    HP_CENTRE_GATE,
    HP_DRIFT,
    HP_HIDDEN,
    HP_JERK_REL,
    HP_JUDGE,
    HP_LAG,
    HP_LAG_TAU,
    HP_MINTIP,
    HP_RECOVER,
    HP_RECOVER_PASSES,
    HP_RPM_MAX,
    HP_RPM_MIN,
    HP_SCALE_GATE,
    HP_SUPPORT,
    HP_WIN,
    HS_COS,
    HS_EPS,
    HS_EPS2,
    HS_GATE_ACC,
    HS_GATE_CX,
    HS_GATE_CY,
    HS_GATE_RPM,
    HS_GATE_T,
    HS_JERK,
    HS_LAG_EPS,
    HS_LAG_EPS2,
    HS_LAG_REF,
    HS_LAG_REF_T,
    HS_LAG_W,
    HS_LOGS_REF,
    HS_NREF,
    HS_RATE_REF,
    HS_RPM_REF,
    HS_SUPPORT_REF,
    HS_W,
    R_ACCEL,
    R_CENTRE_JUMP,
    R_OK,
    R_RPM_RANGE,
    R_SCALE_JUMP,
)
from helixtrack_ros.core.jit import kernel, kernel_inline


@kernel_inline
def _shaft_rpm(hp, om):
    """Shaft RPM of the helical rate omega (B-fold)."""
    return shaft_rpm_k(om, max(hp[HP_BLADES], 1.0))


@kernel_inline
def _usual_rate(hp, hs, om):
    """The in-annulus event rate expected now [events/ms]: the slow reference, scaled
    down with the shaft RPM when the rotor slowed since (blade edges pass as often as
    the rate; a rotor cut from 12,000 to 1,500 RPM was STARVED for good, scene review).
    """
    if hs[HS_RPM_REF] <= 0.0:
        return hs[HS_RATE_REF]
    return hs[HS_RATE_REF] * min(1.0, _shaft_rpm(hp, om) / hs[HS_RPM_REF])


@kernel_inline
def _usual_support(hp, hs, om):
    """The EKF's update weight per ms expected now (its support): the slow reference,
    scaled down with the shaft RPM like :func:`_usual_rate`."""
    if hs[HS_RPM_REF] <= 0.0:
        return hs[HS_SUPPORT_REF]
    return hs[HS_SUPPORT_REF] * min(1.0, _shaft_rpm(hp, om) / hs[HS_RPM_REF])


#: least update weight the usual support promises in a span for :func:`_coasting` to judge
#: it (fewer: a sparse rotor's support scatters too much)
_SUPPORT_MIN_WEIGHT = 30.0


@kernel_inline
def _coasting(hp, hs, om, support, span_us, share):
    """True when the EKF's support (update weight per ms) over ``span_us`` fell below
    ``share`` x ``health_support_rel`` of its usual value: few events agree with the
    predicted phase, so the rate is extrapolated, not measured.

    The in-annulus rate does not see it: on a shaking camera the events of a rotor
    whose pose lags keep the annulus busy while the filter's weight fell from ~80 to
    1 per ms and its rate coasted 9-11 % low, coherence still 0.6-0.8 (scene review).
    """
    if hp[HP_SUPPORT] <= 0.0 or hs[HS_NREF] <= 0.0:
        return False
    usual = _usual_support(hp, hs, om)
    if usual * span_us * 1e-3 < _SUPPORT_MIN_WEIGHT:
        return False
    return support < share * hp[HP_SUPPORT] * usual


@kernel_inline
def _hidden(hp, hs, om, support, span_us):
    """True when a window's phase-filter support fell below ``health_hidden_rel`` of its
    usual value: part of the rotor no longer gives events (occluded, its pixels dead).

    Red-team round 5: the pixels of half a rotor's disc went dead; the support fell to
    0.50-0.53 of usual, the rotor stayed TRACKING while its pose walked 9 px and grew 5 %,
    and the RPM was published up to 0.44 % off at 10 of its std. Tracked windows of 41
    rotors on 30 scenes (egomotion up to 7) kept 0.625 of the usual support or more.
    """
    if hp[HP_HIDDEN] <= 0.0 or hs[HS_NREF] <= 0.0:
        return False
    usual = _usual_support(hp, hs, om)
    if usual * span_us * 1e-3 < _SUPPORT_MIN_WEIGHT:
        return False
    return support < hp[HP_HIDDEN] * usual


@kernel_inline
def _recover_us(hp, om):
    """Good time that makes a rotor TRACKING [us]: ``health_recover_us``, and at least
    ``health_recover_passes`` blade passes (a slow rotor's rate is not validated in less:
    at 1,400 RPM a first lock was published up to 3.6 % off for 10 ms, its rate still
    wandering within the first blade pass; scene review)."""
    passes = hp[HP_RECOVER_PASSES] * 60e6 / max(_shaft_rpm(hp, om) * max(hp[HP_BLADES], 1.0),
                                                 1e-9)
    return max(hp[HP_RECOVER], passes)


@kernel_inline
def _jerk_bound(hp, hs):
    """The largest change of shaft acceleration between two health windows [RPM/s] of a
    steady rate: ``health_jerk_rel`` times the shaft RPM (inf: no bound).

    Relative, since the error a rate's scatter or lag makes is: on the simulator's
    tracked scenes it stays below 1.9 RPM/s per RPM, while a rate scattering 2-3 %
    about a slow rotor on a shaking camera, or lagging the onset of a steep ramp,
    changes its acceleration by 3-10 per RPM (benchmarks/RESULTS.md).
    """
    if hp[HP_JERK_REL] <= 0.0:
        return math.inf
    return hp[HP_JERK_REL] * hs[HS_GATE_RPM]



#: least weight sum of the EKF's updates for :func:`_drift` to judge (a sparse rotor at
#: egomotion 7 lagged 4-5 % with a mean of 0.12-0.21 rad on 400-900 of weight; below
#: that the standard-error test below decides)
_DRIFT_MIN_WEIGHT = 300.0
#: the mean residual counts only beyond this many of its standard errors: background
#: events in the ring spread the residuals over +-pi, so a sparse rotor's 1 ms mean can
#: read 0.03 rad by chance (quadcopter_4m, 1300 weight: 0.032 rad, 0.3 % off)
_DRIFT_Z = 5.0
#: at low RPM the bound is tighter: a mean residual of this fraction of the phase the
#: blades turn through in the window's span (the same rate error is a smaller phase
#: error on a slow rotor: 12,000 -> 1,500 RPM, the filter overshooting 5-15 % at the end
#: of the deceleration while the mean stayed below 0.03 rad; scene review)
_DRIFT_REL = 0.014


@kernel_inline
def _drift(hp, hs):
    """|Weighted mean phase residual| [rad] of the EKF's updates in the pending window.

    While the filter follows the rotor the residuals average out; when the
    true rate changes suddenly, the small jerk noise makes the rate lag for
    several ms, and the residuals keep one sign although the phase (and so
    the coherence) is corrected at every event. 0 with too little weight to judge, or
    a mean within ``_DRIFT_Z`` standard errors of 0.
    """
    w = hs[HS_W]
    if w < _DRIFT_MIN_WEIGHT:
        return 0.0
    m = abs(hs[HS_EPS]) / w
    se = math.sqrt(max(hs[HS_EPS2] / w - m * m, 0.0) / w)
    return m if m > _DRIFT_Z * se else 0.0


#: a re-validating window counts as good only if its mean phase residual is known well
#: enough that a lag at health_phase_drift would stand this many standard errors out of it
#: (a filter that hardly updates keeps its rate, so every "settled" test reads it settled:
#: under the real-time stride a re-locked rotor coasted 5-15 % off on 2-10 update weight
#: per ms, and was published; benchmarks/RESULTS.md)
_VERIFY_Z = 2.0
#: least variance [rad^2] of the residuals behind that standard error (one or two updates
#: give none; a locked rotor's scatter about 0.1-0.11 rad)
_VERIFY_VAR_MIN = 0.01


@kernel_inline
def _drift_se(hs):
    """Standard error [rad] of the pending window's weighted mean phase residual, its
    variance at least ``_VERIFY_VAR_MIN`` (inf: no update)."""
    w = hs[HS_W]
    if w <= 0.0:
        return math.inf
    m = hs[HS_EPS] / w
    return math.sqrt(max(hs[HS_EPS2] / w - m * m, _VERIFY_VAR_MIN) / w)


@kernel_inline
def _drift_bound(hp, om, span_us):
    """The drift bound [rad]: ``health_phase_drift``, or less on a slow rotor
    (:data:`_DRIFT_REL` of the blade phase turned in the span ``span_us``)."""
    return min(hp[HP_DRIFT], _DRIFT_REL * abs(om) * span_us * 1e-6)


#: least recent weight (sum of w, weighted exp(-age / tau)) for :func:`_lag` to judge
_LAG_MIN_WEIGHT = 50.0
#: the recent mean counts only beyond this many times its usual size (root mean square,
#: :func:`_learn_lag_noise`): on a shaking camera the pose's errors move it by 0.01-0.016
#: rad, of both signs in turn at the blade passes, the rate within 0.5 % (2 m quad,
#: egomotion 5-6: 535 of 10,700 packets beyond 5 standard errors and the bound; 4 beyond
#: this too), as does a one-blade rotor's at its turn rate (nothing to balance the pose's
#: errors: 0.01 rad), while a steady two-blade rotor's stays below 0.002-0.004 rad
_LAG_NOISE_K = 3.5
#: time constant of that usual size [us] (50 ms: it follows a changing shake too slowly)
_LAG_REF_TAU_US = 20_000.0
#: the recent mean counts only beyond this many of its standard errors (and beyond the
#: bound): at 5, like the window's drift, a pose spilling off under egomotion 7 at stride 4
#: pulled the rate 1.0-1.5 % off for 1-4 packets while the mean, 3-5 standard errors out
#: (few events), already stood 2-4 times above the bound; at 3, over 37 scenes at stride 4,
#: 10 -> 4 values > 1 % off for 0.5 % fewer values (benchmarks/RESULTS.md)
_LAG_Z = 3.0
#: a recent mean counts into its usual size up to this many times the rate bound (a lag's
#: own mean raises the bound by at most as much: the noise bound stays below 10.5 times it)
_LAG_REF_CAP = 3.0


@kernel_inline
def _recent_mean(hs):
    """(Weighted mean, its standard error, the weight) of the EKF's recent phase residuals."""
    w = hs[HS_LAG_W]
    m = hs[HS_LAG_EPS] / max(w, 1e-300)
    se = math.sqrt(max(hs[HS_LAG_EPS2] / max(w, 1e-300) - m * m, 0.0) / max(w, 1e-300))
    return m, se, w


@kernel_inline
def _lag(hp, hs):
    """|Mean phase residual| [rad] of the EKF's recent updates (weights exp(-age / tau)).

    The mean of the pending window (:func:`_drift`) is diluted by its start, before
    the lag: it caught the onset of a slew 3-7 ms late, the rate then 1.2-17.7 %
    off. The recent mean follows a lag within about tau: the rate error of a
    filter lagging a change of acceleration grows with the phase error it leaves,
    which keeps one sign. 0 with too little weight to judge, or a mean within
    ``_LAG_Z`` standard errors of 0.
    """
    m, se, w = _recent_mean(hs)
    if w < _LAG_MIN_WEIGHT:
        return 0.0
    return abs(m) if abs(m) > _LAG_Z * se else 0.0


@kernel_inline
def _lag_bound(hp, hs, om):
    """The recent lag bound [rad]: ``health_lag_rel`` of the blade phase omega tau turned
    in the time constant tau (a rate error of that fraction leaves about this phase
    error in tau), and ``_LAG_NOISE_K`` times the recent mean's usual size."""
    bound = hp[HP_LAG] * abs(om) * hp[HP_LAG_TAU] * 1e-6
    if hs[HS_LAG_REF] == hs[HS_LAG_REF]:
        bound = max(bound, _LAG_NOISE_K * math.sqrt(hs[HS_LAG_REF]))
    return bound


@kernel_inline
def _learn_lag_noise(hp, hs, om, t):
    """Fold the recent mean of a locked rotor, at the end ``t`` of a packet, into its usual
    size: an exponential average over ``_LAG_REF_TAU_US`` of its square, each capped at
    ``_LAG_REF_CAP`` times the rate bound of :func:`_lag_bound` (at every level: a rotor
    whose pose errors move the mean must learn that before its first TRACKING packet)."""
    m, se, w = _recent_mean(hs)
    if w < _LAG_MIN_WEIGHT:
        return
    cap = _LAG_REF_CAP * hp[HP_LAG] * abs(om) * hp[HP_LAG_TAU] * 1e-6
    m2 = min(m * m, cap * cap)
    if hs[HS_LAG_REF] != hs[HS_LAG_REF]:
        hs[HS_LAG_REF] = m2
    else:
        a = min(1.0, max(t - hs[HS_LAG_REF_T], 0.0) / _LAG_REF_TAU_US)
        hs[HS_LAG_REF] += a * (m2 - hs[HS_LAG_REF])
    hs[HS_LAG_REF_T] = t


@kernel_inline
def _outside_rpm_range(hp, om):
    """(True when the shaft RPM of omega is outside its plausible range, the RPM, the
    bound crossed)."""
    rpm = _shaft_rpm(hp, om)
    if rpm >= hp[HP_RPM_MIN] and rpm <= hp[HP_RPM_MAX]:
        return False, rpm, 0.0
    return True, rpm, hp[HP_RPM_MAX] if rpm > hp[HP_RPM_MAX] else hp[HP_RPM_MIN]

@kernel
def _gate(hp, hs, q, om, t_end):
    """Plausibility gates of a locked rotor at a window close: (reason, value, bound).

    Shaft RPM within its range; its change since the last window that passed,
    per second, within ``gate_accel_rpm_s``; scale within ``gate_scale_rel``
    of its slow reference; the centre's move since that window within
    ``gate_center_step`` tip radii per health window. A window that passes
    becomes the next comparison point; one that fails does not, so a runaway
    keeps failing until the state is plausible again.
    """
    out, rpm, bound = _outside_rpm_range(hp, om)
    if out:
        return R_RPM_RANGE, rpm, bound
    if hp[HP_SCALE_GATE] > 0.0 and hs[HS_NREF] > 0 \
            and abs(q[0] - hs[HS_LOGS_REF]) > hp[HP_SCALE_GATE]:
        return R_SCALE_JUMP, q[0] - hs[HS_LOGS_REF], hp[HP_SCALE_GATE]
    t_prev = hs[HS_GATE_T]
    acc = math.nan
    if t_prev >= 0.0 and t_end > t_prev:
        dt_s = (t_end - t_prev) * 1e-6
        acc = (rpm - hs[HS_GATE_RPM]) / dt_s
        if hp[HP_ACCEL] > 0.0 and abs(acc) > hp[HP_ACCEL]:
            return R_ACCEL, abs(acc), hp[HP_ACCEL]
        windows = max(1.0, (t_end - t_prev) / hp[HP_WIN])
        step = math.sqrt((q[2] - hs[HS_GATE_CX]) ** 2 + (q[3] - hs[HS_GATE_CY]) ** 2)
        step = step / max(math.exp(q[0]), 1e-9) / windows
        if hp[HP_CENTRE_GATE] > 0.0 and step > hp[HP_CENTRE_GATE]:
            return R_CENTRE_JUMP, step, hp[HP_CENTRE_GATE]
    hs[HS_JERK] = abs(acc - hs[HS_GATE_ACC])     # nan until two accelerations are known
    hs[HS_GATE_ACC] = acc
    hs[HS_GATE_T] = t_end
    hs[HS_GATE_RPM] = rpm
    hs[HS_GATE_CX] = q[2]
    hs[HS_GATE_CY] = q[3]
    return R_OK, 0.0, 0.0


@kernel_inline
def _tip_evidence(hp, hs, hi, om, locked, t_end):
    """The tip-band evidence of the window closing at ``t_end``: coherence and spill
    (nan: too few events to judge), whether it is carried into the next window, and
    over how long it was gathered [us].

    A window with fewer than ``health_min_tip_events`` tip-band events judges no
    coherence: its events are carried into the next windows until there are enough
    (a small or sparse rotor), for at most ``health_judge_max_us`` or two blade
    passes; then the rotor is too thin to judge (``thin``). Rotors of 2.7 px radius
    on a drifting camera were published 10-100 % off for hundreds of ms while every
    window, with 30 tip events or fewer, passed unjudged (scene review).
    """
    n_tip = hi[HI_NTIP]
    n_out = hi[HI_NOUT]
    if hi[HI_EV_T0] < 0:
        hi[HI_EV_T0] = hi[HI_T0]
    span = float(t_end - hi[HI_EV_T0])
    coh = math.nan
    spill = math.nan
    if n_tip >= hp[HP_MINTIP]:
        coh = hs[HS_COS] / n_tip
    if n_tip + n_out >= hp[HP_MINTIP]:
        spill = n_out / (n_tip + n_out)
    carry = False
    thin = False
    if locked and coh != coh and hp[HP_JUDGE] > 0.0:
        passes = 2.0 * 60e6 / max(_shaft_rpm(hp, om) * max(hp[HP_BLADES], 1.0), 1e-9)
        if span < max(hp[HP_JUDGE], passes):
            carry = True
        else:
            thin = True
    if not carry:
        hi[HI_NTIP] = 0
        hi[HI_NOUT] = 0
        hs[HS_COS] = 0.0
        hi[HI_EV_T0] = t_end
    return coh, spill, carry, thin, span
