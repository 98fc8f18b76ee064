# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Track health of one rotor: TRACKING / DEGRADED / LOST with a reason (beyond the paper).

The paper's tracker has no notion of failure: "when a tracker fails, i.e.
begins to report a wrong RPM, we do not reinitialize" (Sec. 4.4) and
"HelixTrack does not perform automatic reinitialization after failure"
(Limitations). This module judges, from the events alone, whether the
tracker still follows its rotor, so that a pipeline can report it and
re-detect a lost rotor.

The tracker kernel counts, per window of ``health_window_us`` stream time
(one compare per input event, two per in-annulus event):

- in-annulus events (rate; *starvation* when it falls far below its slow
  reference, e.g. the rotor is hidden or left the region);
- tip-band events 1 - 0.2 < r <= 1 and the sum of cos(eps) of their phase
  residuals (Eq. 3, polarity-centred): the *phase coherence* mean cos(eps)
  is close to 1 when the helical phase model explains the blade tips and
  falls to 0 for events unrelated to the predicted phase (wrong RPM, wrong
  centre, background only);
- events just outside the tip, 1.05 < r < 1.3: the *tip spill*
  n_out / (n_out + n_tip) stays small while the tip ellipse sits on the
  blade tips (only background there) and grows when the pose is off (the
  tip circle of a shifted rotor crosses r = 1 everywhere).
- the weighted mean phase residual of the EKF's updates (*drift*): close to
  0 while the filter follows; it keeps one sign while the rate lags a
  sudden acceleration (the coherence stays high then: the phase is
  corrected at every event). Checked also after every packet
  (:func:`_health_drift`): such a lag is several % within 1-2 ms.

At each window close :func:`_health_close` compares them, and the scale,
perspective and RPM uncertainty of the tracker, with absolute limits and
slow references (exponential averages over good TRACKING windows, a
running mean over the first windows after lock), and runs the state machine:

- TRACKING -> DEGRADED at the first bad window;
- DEGRADED -> LOST after ``health_lost_us`` of consecutive bad windows;
- DEGRADED / LOST -> TRACKING after ``health_recover_us`` of good windows;
- before the phase lock (acquisition) the level is DEGRADED, "acquiring".

The thresholds were set on the simulator's scenes (``benchmarks/
bench_recovery.py``): a 30 %-of-radius image jump or a hidden rotor is LOST
within about 20-30 ms, tracked scenes stay TRACKING.
"""

from __future__ import annotations

from enum import IntEnum
import math

import numpy as np

from helixtrack_ros.core.fastmath import shaft_rpm_k  # (the import drops stale kernel caches)
from helixtrack_ros.core.jit import kernel, kernel_inline
from helixtrack_ros.core.params import TrackerParams
from helixtrack_ros.core.slots import Slots

#: Health levels.
TRACKING, DEGRADED, LOST = 0, 1, 2
LEVEL_NAMES = ('TRACKING', 'DEGRADED', 'LOST')


class RotorState(IntEnum):
    """What a published rotor value is: the output contract (README "Trusting the numbers").

    Only TRACKING carries numbers; every other state publishes NaN.
    The codes 0-2 are the tracker's health levels; the others name why a
    rotor is not measured more precisely.
    """

    TRACKING = 0     # locked and every health check passes: the numbers are measured
    DEGRADED = 1     # locked, but the last health windows were bad (may come back)
    LOST = 2         # the track failed (health or a plausibility gate); re-detecting
    ACQUIRING = 3    # not yet locked: at start-up or after a re-detection
    STARVED = 4      # too few events: occluded, stopped, or off the sensor
    OUTSIDE = 5      # the rotor centre is outside the image


#: Short name of each reason code (no numbers: for per-packet status messages).
CAUSE_NAMES = ('ok', 'acquiring', 'starved', 'phase incoherent', 'pose off', 'scale drift',
               'perspective drift', 'RPM uncertain', 'implausible RPM',
               'implausible RPM change', 'implausible scale change', 'implausible centre step',
               'events lost in transport', 'rate settling', 'pose settling', 'rate unsteady',
               'on another rotor', 'rate lagging', 'too few events to judge', 'too small',
               'phase filter coasting')


#: diagnostic_msgs/DiagnosticStatus level of each RotorState (OK only while measured).
STATE_LEVELS = {RotorState.TRACKING: 0, RotorState.DEGRADED: 1, RotorState.ACQUIRING: 1,
                RotorState.LOST: 2, RotorState.STARVED: 2, RotorState.OUTSIDE: 2}


def rotor_state(level: int, cause: int, centre_inside: bool, events: int) -> RotorState:
    """The output state of a rotor from its health level and cause (one packet)."""
    if not centre_inside:
        return RotorState.OUTSIDE
    if level == TRACKING:
        return RotorState.TRACKING
    if cause == R_STARVED or (cause == R_ACQUIRING and events == 0):
        return RotorState.STARVED
    if level == LOST:
        return RotorState.LOST
    if cause == R_ACQUIRING:
        return RotorState.ACQUIRING
    return RotorState.DEGRADED

#: Reason codes (the first that applies, in this order of priority); the gates
#: (R_RPM_RANGE .. R_CENTRE_JUMP) make a rotor LOST at once; R_GAP: events were lost in
#: transport, the extrapolated state must pass health_recover_us of good windows again.
(R_OK, R_ACQUIRING, R_STARVED, R_INCOHERENT, R_SPILL, R_SCALE, R_PERSP, R_UNCERTAIN,
 R_RPM_RANGE, R_ACCEL, R_SCALE_JUMP, R_CENTRE_JUMP, R_GAP, R_SETTLING,
 R_POSE_SETTLING, R_UNSTEADY, R_OTHER_ROTOR, R_DRIFT, R_THIN, R_SMALL, R_COASTING) = range(21)

# ---- health parameter vector (hp), packed from TrackerParams, the blade count and the
# rotor's own RPM range
def _rpm_bounds(p: TrackerParams, rpm_range: tuple[float, float]) -> tuple[float, float]:
    """The plausible shaft RPM: the rotor's ``rpm_range`` unless (0, 0), else the gates'."""
    return rpm_range if tuple(rpm_range) != (0.0, 0.0) else (p.gate_rpm_min, p.gate_rpm_max)


_HP = Slots('health parameters')
HP_WIN = _HP.slot('health_window_us')
HP_MINTIP = _HP.slot('health_min_tip_events')
HP_COHMIN = _HP.slot('health_coherence_min')
HP_COHREL = _HP.slot('health_coherence_rel')
HP_SPILLMAX = _HP.slot('health_spill_max')
HP_SPILLREL = _HP.slot('health_spill_rel')
HP_STARVE = _HP.slot('health_starve_rel')
HP_SUPPORT = _HP.slot('health_support_rel')
HP_SCALETOL = _HP.slot('health_scale_tol')
HP_PERSPTOL = _HP.slot('health_persp_tol')
HP_STDREL = _HP.slot('health_rpm_std_rel')
HP_LOST = _HP.slot('health_lost_us')
HP_RECOVER = _HP.slot('health_recover_us')
HP_RECOVER_PASSES = _HP.slot('health_recover_passes')
HP_REFTAU = _HP.slot('health_ref_tau_us')
HP_POSETAU = _HP.slot('health_pose_tau_us')
HP_TIP_IN = _HP.slot(0.2)      # tip band: 1 - HP_TIP_IN < r <= 1
HP_OUT0 = _HP.slot(0.05)       # spill band: 1 + HP_OUT0 < r < 1 + HP_OUT1
HP_OUT1 = _HP.slot(0.3)
HP_BLADES = _HP.slot(lambda p, blades, rng: blades)   # B (shaft RPM = 60 |omega| / (2 pi B))
# plausibility gates (TrackerParams gate_*, RotorInit.rpm_range)
HP_RPM_MIN = _HP.slot(lambda p, blades, rng: _rpm_bounds(p, rng)[0])
HP_RPM_MAX = _HP.slot(lambda p, blades, rng: _rpm_bounds(p, rng)[1])
HP_ACCEL = _HP.slot('gate_accel_rpm_s')
HP_SCALE_GATE = _HP.slot(lambda p, blades, rng: math.log1p(p.gate_scale_rel)
                         if p.gate_scale_rel > 0 else 0.0)
HP_CENTRE_GATE = _HP.slot('gate_center_step')
HP_SETTLE = _HP.slot('health_settle_rpm_s')   # re-validation: change of acceleration bound
HP_SETTLE_SPILL = _HP.slot('health_settle_spill')   # re-validation: tip spill above usual
HP_JERK_REL = _HP.slot('health_jerk_rel')   # change of acceleration bound per shaft RPM [1/s]
HP_DRIFT = _HP.slot('health_phase_drift')   # |weighted mean EKF residual| bound [rad]
HP_JUDGE = _HP.slot('health_judge_max_us')   # longest span of carried tip evidence [us]
HP_MIN_RADIUS = _HP.slot('health_min_radius_px')   # smallest tip radius measured [px]
HP_LEN = _HP.close()

# ---- float health state (hs) ---------------------------------------------------------------
_HS = Slots('health float state')
HS_RATE_REF = _HS.slot()       # in-annulus events per ms
HS_COH_REF = _HS.slot()
HS_SPILL_REF = _HS.slot()
HS_LOGS_REF = _HS.slot()
HS_P31_REF = _HS.slot()
HS_P32_REF = _HS.slot()
HS_BAD_US = _HS.slot()         # consecutive bad time
HS_GOOD_US = _HS.slot()        # consecutive good time
HS_RATE = _HS.slot(math.nan)   # metrics of the last window (nan: too few events to judge)
HS_COH = _HS.slot(math.nan)
HS_SPILL = _HS.slot(math.nan)
HS_SCALE_D = _HS.slot(math.nan)
HS_PERSP_D = _HS.slot(math.nan)
HS_STD_REL = _HS.slot(math.nan)
HS_NREF = _HS.slot()           # good windows averaged into the references
HS_COS = _HS.slot()            # pending window: sum cos(eps) of tip-band events
HS_EPS = _HS.slot()            # pending window: sum w eps of the EKF's updates (rate lag)
HS_EPS2 = _HS.slot()           # pending window: their sum w eps^2
HS_W = _HS.slot()              # pending window: their sum of weights w
HS_CAUSE_VAL = _HS.slot()      # value and reference of the cause of the current level
HS_CAUSE_REF = _HS.slot()
HS_GATE_T = _HS.slot(-1.0)     # time of the last window that passed the gates (-1: none)
HS_GATE_RPM = _HS.slot()       # its shaft RPM and centre
HS_GATE_CX = _HS.slot()
HS_GATE_CY = _HS.slot()
HS_GATE_ACC = _HS.slot(math.nan)   # shaft acceleration [RPM/s] between the last two passes
HS_JERK = _HS.slot(math.nan)       # its change at the last pass (nan: not known yet)
HS_RPM_REF = _HS.slot()        # shaft RPM of the windows averaged into HS_RATE_REF
HS_SUPPORT_REF = _HS.slot()    # the EKF's update weight per ms (its support) of good windows
HS_SUPPORT = _HS.slot(math.nan)    # that of the last window
HS_LEN = _HS.close()

# ---- int health state (hi) -----------------------------------------------------------------
_HI = Slots('health int state')
HI_LEVEL = _HI.slot(DEGRADED)
HI_REASON = _HI.slot(R_ACQUIRING)   # reason code of the last window
HI_CAUSE = _HI.slot(R_ACQUIRING)    # reason code that made the level DEGRADED / LOST
HI_T0 = _HI.slot(-1)                # current window start [us]; -1 before the first event
HI_ACC0 = _HI.slot()                # in-annulus counter at the window start
HI_NTIP = _HI.slot()                # pending window: tip-band events
HI_NOUT = _HI.slot()                # pending window: spill-band events
HI_LOSSES = _HI.slot()              # transitions to LOST
HI_EV_T0 = _HI.slot(-1)             # start of the tip evidence carried (HI_NTIP ...) [us]
HI_LEN = _HI.close()


def pack_health_params(p: TrackerParams, blades: int = 2,
                       rpm_range: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """Health parameter vector from :class:`TrackerParams` (``health_*`` and ``gate_*``).

    ``rpm_range`` (a rotor's own plausible shaft RPM) replaces the tracker's
    ``gate_rpm_min`` / ``gate_rpm_max`` unless it is (0, 0).
    """
    return _HP.pack(p, blades, rpm_range)


def new_health_state() -> tuple[np.ndarray, np.ndarray]:
    """Fresh (float, int) health state: DEGRADED, acquiring, no window open."""
    return _HS.pack(), _HI.pack(dtype=np.int64)


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
def _coasting(hp, hs, om, support, span_us):
    """True when the EKF's support (update weight per ms) over ``span_us`` fell below
    ``health_support_rel`` of its usual value: few events agree with the predicted phase,
    so the rate is extrapolated, not measured.

    The in-annulus rate does not see it: on a shaking camera the events of a rotor
    whose pose lags keep the annulus busy while the filter's weight fell from ~80 to
    1 per ms and its rate coasted 9-11 % low, coherence still 0.6-0.8 (scene review).
    """
    if hp[HP_SUPPORT] <= 0.0 or hs[HS_NREF] <= 0.0:
        return False
    usual = _usual_support(hp, hs, om)
    if usual * span_us * 1e-3 < _SUPPORT_MIN_WEIGHT:
        return False
    return support < hp[HP_SUPPORT] * usual


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


@kernel_inline
def _set_cause(hs, hi, cause, val, ref):
    """The cause of the current level, with its value and reference (the message's)."""
    hi[HI_CAUSE] = cause
    hs[HS_CAUSE_VAL] = val
    hs[HS_CAUSE_REF] = ref


@kernel_inline
def _revalidation_unsettled(hp, hs, hi, level, nref, spill, spill_prev):
    """True (and the reason set) while a window of a rotor being re-validated must not count.

    The rate must be settled (a rate still ringing after a loss or a lock is not
    published), and so must the pose: a tip spill above its usual value that still
    changes from window to window is a pose converging (after a gap it biased a steady
    rate by 1-2 %); a spill that stays put at a new level is a settled pose.
    """
    why = R_OK
    val = 0.0
    ref = 0.0
    bound = _jerk_bound(hp, hs)
    if hp[HP_SETTLE] > 0.0:
        bound = min(bound, hp[HP_SETTLE])
    if bound < math.inf and not hs[HS_JERK] <= bound:
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


#: least weight sum of the EKF's updates for :func:`_drift` to judge (a sparse rotor at
#: egomotion 7 lagged 4-5 % with a mean of 0.12-0.21 rad on 400-900 of weight; below
#: that the standard-error test below decides)
_DRIFT_MIN_WEIGHT = 300.0
#: the mean residual counts only beyond this many of its standard errors: background
#: events in the ring spread the residuals over +-pi, so a sparse rotor's 1 ms mean can
#: read 0.03 rad by chance (quadcopter_4m, 1300 weight: 0.032 rad, 0.3 % off)
_DRIFT_Z = 5.0
#: per packet, a pending window younger than this fraction of a window is not judged: a
#: pose step can shift the residuals for ~1 ms (quadcopter_4m: 0.032 rad, then back),
#: while a rate lag keeps growing (the window close judges every whole window)
_DRIFT_MIN_SPAN = 0.4
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


@kernel_inline
def _drift_bound(hp, om, span_us):
    """The drift bound [rad]: ``health_phase_drift``, or less on a slow rotor
    (:data:`_DRIFT_REL` of the blade phase turned in the span ``span_us``)."""
    return min(hp[HP_DRIFT], _DRIFT_REL * abs(om) * span_us * 1e-6)


@kernel_inline
def _outside_rpm_range(hp, om):
    """(True when the shaft RPM of omega is outside its plausible range, the RPM, the
    bound crossed)."""
    rpm = _shaft_rpm(hp, om)
    if rpm >= hp[HP_RPM_MIN] and rpm <= hp[HP_RPM_MAX]:
        return False, rpm, 0.0
    return True, rpm, hp[HP_RPM_MAX] if rpm > hp[HP_RPM_MAX] else hp[HP_RPM_MIN]


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


@kernel
def _health_drift(hp, hs, hi, t, om):
    """Per packet: a TRACKING rotor whose rate lags (:func:`_drift`) becomes DEGRADED at once.

    Checked on the pending window (from ``_DRIFT_MIN_SPAN`` of a window on) after
    every packet ending at ``t``, not only at the window close, since a lag reaches
    several % within 1-2 ms of a sudden acceleration; the window close then judges
    the whole window as usual.
    """
    if hp[HP_DRIFT] <= 0.0 or hi[HI_LEVEL] != TRACKING \
            or t - hi[HI_T0] < _DRIFT_MIN_SPAN * hp[HP_WIN]:
        return
    drift = _drift(hp, hs)
    bound = _drift_bound(hp, om, t - hi[HI_T0])
    if drift > bound:
        hi[HI_LEVEL] = DEGRADED
        hi[HI_REASON] = R_DRIFT
        _set_cause(hs, hi, R_DRIFT, drift, bound)
        hs[HS_GOOD_US] = 0.0


@kernel
def _health_support(hp, hs, hi, t, om):
    """Per packet: a TRACKING rotor whose phase filter coasts (:func:`_coasting`) on the
    pending window (from ``_DRIFT_MIN_SPAN`` of a window on) becomes DEGRADED at once,
    as :func:`_health_drift` does for a lagging rate."""
    span = t - hi[HI_T0]
    if hi[HI_LEVEL] != TRACKING or span < _DRIFT_MIN_SPAN * hp[HP_WIN]:
        return
    support = hs[HS_W] * 1000.0 / span
    if _coasting(hp, hs, om, support, span):
        hi[HI_LEVEL] = DEGRADED
        hi[HI_REASON] = R_COASTING
        _set_cause(hs, hi, R_COASTING, support, _usual_support(hp, hs, om))
        hs[HS_GOOD_US] = 0.0


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


@kernel
def _health_close(hp, hs, hi, q, locked, om, P11, n_acc, t_end):  # noqa: C901, PLR0912, PLR0915 (numba kernel)
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
    n_win = n_acc - hi[HI_ACC0]
    n_tip = hi[HI_NTIP]
    rate = n_win * 1000.0 / dur
    coh, spill, carry, thin, span = _tip_evidence(hp, hs, hi, om, locked, t_end)
    s = math.exp(q[0])
    tn = math.sqrt(q[2] * q[2] + q[3] * q[3])
    ds = q[0] - hs[HS_LOGS_REF]
    dp = math.sqrt((q[4] - hs[HS_P31_REF]) ** 2 + (q[5] - hs[HS_P32_REF]) ** 2) * tn / max(
        s, 1e-300)
    std_rel = math.sqrt(max(P11, 0.0)) / max(abs(om), 1e-9)
    support = hs[HS_W] * 1000.0 / dur
    hs[HS_SUPPORT] = support
    hs[HS_RATE] = rate
    hs[HS_COH] = coh
    spill_prev = hs[HS_SPILL]
    hs[HS_SPILL] = spill
    hs[HS_SCALE_D] = ds
    hs[HS_PERSP_D] = dp
    hs[HS_STD_REL] = std_rel
    # the next window starts here
    hi[HI_T0] = t_end
    hi[HI_ACC0] = n_acc
    hs[HS_EPS] = 0.0
    hs[HS_EPS2] = 0.0
    hs[HS_W] = 0.0
    level = hi[HI_LEVEL]
    if not locked:
        hi[HI_REASON] = R_ACQUIRING
        hs[HS_GATE_T] = -1.0
        hs[HS_GATE_ACC] = math.nan
        if level != LOST:
            hi[HI_LEVEL] = DEGRADED
            hi[HI_CAUSE] = R_ACQUIRING
        return
    gate, gval, gref = _gate(hp, hs, q, om, float(t_end))
    if gate != R_OK:
        # an implausible state: LOST at once (no DEGRADED grace period)
        hi[HI_REASON] = gate
        hs[HS_BAD_US] += dur
        hs[HS_GOOD_US] = 0.0
        if level != LOST:
            hi[HI_LEVEL] = LOST
            hi[HI_LOSSES] += 1
            _set_cause(hs, hi, gate, gval, gref)
        return
    nref = hs[HS_NREF]
    reason = R_OK
    val = 0.0
    ref = 0.0
    if nref > 0:
        usual = _usual_rate(hp, hs, om)
        if rate < hp[HP_STARVE] * usual:
            reason, val, ref = R_STARVED, rate, usual
        elif thin:
            reason, val, ref = R_THIN, n_tip, span
        elif s < hp[HP_MIN_RADIUS]:
            reason, val, ref = R_SMALL, s, hp[HP_MIN_RADIUS]
        elif coh == coh and (coh < hp[HP_COHMIN] or coh < hp[HP_COHREL] * hs[HS_COH_REF]):
            reason, val, ref = R_INCOHERENT, coh, hs[HS_COH_REF]
        elif spill == spill and (spill > hp[HP_SPILLMAX]
                                 or spill > hs[HS_SPILL_REF] + hp[HP_SPILLREL]):
            reason, val, ref = R_SPILL, spill, hs[HS_SPILL_REF]
        elif _coasting(hp, hs, om, support, dur):
            # (after the pose checks: a pose error is the more telling reason)
            reason, val, ref = R_COASTING, support, _usual_support(hp, hs, om)
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
    elif thin:
        reason, val, ref = R_THIN, n_tip, span
    elif s < hp[HP_MIN_RADIUS]:
        reason, val, ref = R_SMALL, s, hp[HP_MIN_RADIUS]
    elif coh == coh and coh < hp[HP_COHMIN]:
        # no reference yet: absolute limits only
        reason, val, ref = R_INCOHERENT, coh, math.nan
    elif spill == spill and spill > hp[HP_SPILLMAX]:
        reason, val, ref = R_SPILL, spill, math.nan
    if reason == R_OK and level != TRACKING:
        # re-validating: neither good nor bad time until the rate and the pose are settled,
        # nor while the tip evidence is still gathered (a rotor turns TRACKING only on
        # judged windows)
        if carry:
            hi[HI_REASON] = R_OK
            return
        if _revalidation_unsettled(hp, hs, hi, level, nref, spill, spill_prev):
            return
    hi[HI_REASON] = reason
    if reason != R_OK:
        hs[HS_BAD_US] += dur
        hs[HS_GOOD_US] = 0.0
        if level != LOST:
            _set_cause(hs, hi, reason, val, ref)
        if level == TRACKING:
            hi[HI_LEVEL] = DEGRADED
        elif (level == DEGRADED and hs[HS_BAD_US] >= hp[HP_LOST] and reason != R_DRIFT
              and reason != R_THIN and reason != R_SMALL):
            # (a lagging rate settles by itself, a thin or small rotor is where it was:
            # DEGRADED, not a loss and a re-detection)
            hi[HI_LEVEL] = LOST
            hi[HI_LOSSES] += 1
        return
    hs[HS_GOOD_US] += dur
    if hs[HS_GOOD_US] >= _recover_us(hp, om):
        hs[HS_BAD_US] = 0.0
        if level != TRACKING:
            hi[HI_LEVEL] = TRACKING
            hi[HI_CAUSE] = R_OK
            level = TRACKING
    # slow references follow good windows: a running mean at first, then an EMA
    if level == TRACKING or nref < 4:
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
