# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Track health of one rotor: TRACKING / DEGRADED / LOST with a reason (beyond the paper).

The paper's tracker has no notion of failure: "when a tracker fails, i.e.
begins to report a wrong RPM, we do not reinitialize" (Sec. 4.4) and
"HelixTrack does not perform automatic reinitialization after failure"
(Limitations). The health modules judge, from the events alone, whether the
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
  (:func:`~helixtrack_ros.core.health_machine._health_drift`): such a lag is
  several % within 1-2 ms.
- the same sums over the recent events (weights exp(-age / tau), tau 1 ms):
  their mean against its standard error is the *recent lag*, checked after
  every packet (:func:`~helixtrack_ros.core.health_checks._lag`): the mean
  over the pending window is diluted by its lag-free start and caught a
  lag 3-7 ms late, when the rate was 1.2-17.7 % off.

This module holds what the health is made of: the levels, the reason codes,
the output contract (:class:`RotorState`, :func:`rotor_state`) and the slots of
the parameter and state vectors the kernels share.
:mod:`~helixtrack_ros.core.health_checks` holds what a window is judged
against, :mod:`~helixtrack_ros.core.health_machine` the state machine and
:mod:`~helixtrack_ros.core.health_text` what they say in words.
"""

from __future__ import annotations

from enum import IntEnum
import math

import numpy as np

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
               'phase filter coasting', 'rate unverified', 'event times too coarse',
               'partly hidden')


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
 R_POSE_SETTLING, R_UNSTEADY, R_OTHER_ROTOR, R_DRIFT, R_THIN, R_SMALL, R_COASTING,
 R_UNVERIFIED, R_COARSE_TIME, R_HIDDEN) = range(24)

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
HP_COHSEED = _HP.slot('health_coherence_seed')   # before references: coherence a seed needs
HP_SPILLMAX = _HP.slot('health_spill_max')
HP_SPILLREL = _HP.slot('health_spill_rel')
HP_SPILLSEED = _HP.slot('health_spill_seed')     # before references: spill a seed may have
HP_STARVE = _HP.slot('health_starve_rel')
HP_SUPPORT = _HP.slot('health_support_rel')
HP_HIDDEN = _HP.slot('health_hidden_rel')
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
HP_LAG = _HP.slot('health_lag_rel')   # recent residual bound: this fraction of omega tau
HP_LAG_TAU = _HP.slot(1000.0)   # time constant tau of the recent residual sums [us]
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
HS_LAG_EPS = _HS.slot()        # recent: sum w eps of the EKF's updates, weighted exp(-age / tau)
HS_LAG_EPS2 = _HS.slot()       # recent: their sum w eps^2
HS_LAG_W = _HS.slot()          # recent: their sum of weights w
HS_LAG_T = _HS.slot()          # time the recent sums were last decayed to [us]
HS_LAG_REF = _HS.slot(math.nan)    # mean square of the recent mean while TRACKING (its noise)
HS_LAG_REF_T = _HS.slot()      # time it was last learnt [us]
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
