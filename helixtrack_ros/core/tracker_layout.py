# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Layout of the tracker's state and parameter vectors (shared by its kernels).

A tracker's whole state lives in a few small numpy arrays so that one numba
call processes a batch: ``fs`` (float state), ``ist`` (int state) and ``tp``
(parameters packed from :class:`~helixtrack_ros.core.params.TrackerParams`).
The constants here name their slots (the OUT_* / PK_* columns name the
output rows of :func:`~helixtrack_ros.core.tracker_kernel._process` and
:func:`~helixtrack_ros.core.routing._process_packets`); the inline accessors
load the kernel's locals from them and store them back.
"""

import numpy as np

from helixtrack_ros.core.fastmath import helical_rate, helical_rate_k
from helixtrack_ros.core.health import HP_LAG_TAU, HP_OUT0, HP_OUT1, HP_TIP_IN, HP_WIN
from helixtrack_ros.core.jit import fma_inline, kernel
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.slots import Slots

# ---- float state (fs) -------------------------------------------------------------------
_FS = Slots('tracker float state')
FS_PHI = _FS.slot()          # phase EKF x = [phi, omega, alpha] (Sec. 3.3)
FS_OM = _FS.slot(lambda p, rotor: helical_rate(rotor.rpm_shaft, rotor.blades))
FS_AL = _FS.slot()
FS_P00 = _FS.slot('p0_phase_rad2')   # the six entries of P
FS_P01 = _FS.slot()
FS_P02 = _FS.slot()
FS_P11 = _FS.slot('p0_omega_rad2_s2')
FS_P12 = _FS.slot()
FS_P22 = _FS.slot('p0_alpha_rad2_s4')
FS_PHIB = _FS.slot()         # phi and psi at the start of the pose batch
FS_PSIB = _FS.slot()
FS_SW = _FS.slot()           # pending fold of the current timestamp: sum w, sum w eps
FS_SWE = _FS.slot()
FS_VX = _FS.slot()           # motion model: image velocity of the centre [px / us]
FS_VY = _FS.slot()
FS_KP = _FS.slot(width=16)   # covariance of the motion Kalman filter [x, y, vx, vy] (px, px/s)
FS_AC = _FS.slot(width=3)    # while acquiring, sum u_x, sum u_y, count of disc events (centroid)
FS_LEN = _FS.close()

# ---- int state (ist) ---------------------------------------------------------------------
_IS = Slots('tracker int state')
IS_T = _IS.slot(-1)          # time of the EKF state x [us]; -1 before the first accepted event
IS_TMAX = _IS.slot(-1)       # latest input time [us]; -1 before the first event
IS_IN = _IS.slot()           # input events
IS_USED = _IS.slot()         # events assimilated by the EKF
IS_POSE = _IS.slot()         # pose solves
IS_BACK = _IS.slot()         # events whose time went backwards
IS_ZETA = _IS.slot(lambda rotor: rotor.direction)  # rotation sign; 0 while acquiring it
IS_ACQ = _IS.slot(1)         # 1 while acquiring sign / phase
IS_ACQ_N = _IS.slot()        # buffered acquisition events
IS_ACQ_STRIDE = _IS.slot(1)
IS_ACQ_SEEN = _IS.slot()     # in-ring events seen while acquiring
IS_ACQ_T0 = _IS.slot()
IS_GN_STRIDE = _IS.slot(1)
IS_GN_CNT = _IS.slot()
IS_BATCH_N = _IS.slot()      # accepted events in the current pose batch
IS_BATCH_T0 = _IS.slot()
IS_DIR = _IS.slot(lambda rotor: rotor.direction)   # configured direction
IS_DEFER = _IS.slot()        # triggers whose batch was too small
IS_ACCEPT = _IS.slot()       # events inside the annulus
IS_MT = _IS.slot()           # motion model: time the centre was last propagated to [us]
IS_SOLVE_T = _IS.slot()      # time of the last applied fast step [us]
IS_FAST_T = _IS.slot()       # time of the last fast translation step [us]
IS_FASTON = _IS.slot()       # 1 while the fast translation step runs (low RPM)
IS_LEN = _IS.close()

# ---- tracker parameter vector (tp), packed from TrackerParams, the rotor and the GN target
_TP = Slots('tracker parameters')
TP_B = _TP.slot(lambda p, rotor, gn: rotor.blades)
TP_KAPPA = _TP.slot('kappa')
TP_QJ = _TP.slot('q_jerk')
TP_SIG0 = _TP.slot('sigma0_rad2')
TP_RFLOOR = _TP.slot('r_floor')
TP_INV2SR2 = _TP.slot(lambda p, rotor, gn: 0.5 / p.sigma_ring ** 2)
TP_RIN2 = _TP.slot(lambda p, rotor, gn: p.r_in ** 2)
TP_ROUT2 = _TP.slot(lambda p, rotor, gn: p.r_out ** 2)
TP_GNMIN = _TP.slot('gn_min_events')
TP_GNTARGET = _TP.slot(lambda p, rotor, gn: gn)   # the GN event target in force
TP_TIMER = _TP.slot('pose_timer_us')
TP_MAXEV = _TP.slot('pose_max_events')
# minimum acquisition window [us] (none for the release's prefix)
TP_ACQ_US = _TP.slot(lambda p, rotor, gn: 0.0 if p.sign_prefix else min(
    p.sign_turns * 60e6 / rotor.rpm_shaft, float(p.sign_max_us)))
# initial |omega| [rad/s] of the B-fold phase
TP_OMEGA0 = _TP.slot(lambda p, rotor, gn: helical_rate(rotor.rpm_shaft, rotor.blades))
TP_SPAN = _TP.slot('sign_rpm_span')
TP_MARGIN = _TP.slot('sign_margin')
TP_P0PHI = _TP.slot('p0_phase_rad2')
TP_P0OM = _TP.slot('p0_omega_rad2_s2')
TP_P0AL = _TP.slot('p0_alpha_rad2_s4')
TP_RINGACQ = _TP.slot(lambda p, rotor, gn: 2.0 * p.sigma_ring)   # acquisition: |r - 1| <= this
# buffered events before a decision (the release's prefix: a full buffer, never thinned)
TP_ACQ_MIN = _TP.slot(lambda p, rotor, gn: p.sign_events if p.sign_prefix
                      else min(64, p.sign_events))
TP_MOTION = _TP.slot('motion_model')     # 1: constant-velocity pose between fast steps
TP_FASTRPM = _TP.slot('pose_fast_rpm')   # the fast step runs below this shaft RPM
TP_MSTEP = _TP.slot('motion_step_us')
TP_MHOLD = _TP.slot('motion_hold_us')
TP_MVMAX = _TP.slot(lambda p, rotor, gn: p.motion_max_rs * 1e-6)   # [tip radii / us]
TP_FAST = _TP.slot('pose_fast_us')       # fast translation step period [us] (0 = off)
TP_FGAIN = _TP.slot('pose_fast_gain')
TP_FMAX = _TP.slot('pose_fast_max_step')
TP_FDAMP = _TP.slot('pose_fast_damping')
TP_FMIN = _TP.slot('pose_fast_min_weight')
TP_FFORGET = _TP.slot('pose_fast_forget')   # forgetting of the fast translation system
TP_FINFO = _TP.slot('pose_fast_info')       # information per unit of the phase-term system
TP_QACC = _TP.slot('motion_accel')          # white-acceleration density of the motion model
TP_P0POS = _TP.slot('motion_p0_pos')        # initial position / velocity standard deviations
TP_P0VEL = _TP.slot('motion_p0_vel')
TP_FANISO = _TP.slot('pose_fast_aniso')     # weak / strong eigenvalue below this: dropped
TP_FGATE = _TP.slot('motion_gate')          # innovation gate (squared Mahalanobis; 0 = off)
TP_ACQGAIN = _TP.slot('pose_acq_gain')      # centroid step gain while acquiring
TP_RVM = _TP.slot('ekf_r_vm')               # 1: w_vm in R (Sec. 3.4); 0: w_ring only (release)
TP_FOLD = _TP.slot('ekf_fold')              # 1: one update per timestamp; 0: per event
TP_LOCKPH = _TP.slot('sign_lock_phase')     # 1: phase / rate from the sign statistic
TP_LEN = _TP.close()

# ---- output columns of _process / _emit (the names: PacketColumns) ---------------------
_OUT = Slots('sample columns')
OUT_RPM = _OUT.slot(name='rpm_shaft')
OUT_STD = _OUT.slot(name='rpm_shaft_std')
OUT_PHASE = _OUT.slot(name='phase_rad')
OUT_OMEGA = _OUT.slot(name='omega_rad_s')
OUT_Q = _OUT.slot(width=6, name=('s', 'psi', 'tx', 'ty', 'p31', 'p32'))   # paper q
OUT_LEN = _OUT.close()

MODE_LAST, MODE_TIMES, MODE_EVERY = 0, 1, 2

# per-packet output columns of :func:`_process_packets`: the sample columns, then
_PK = Slots('packet columns')
_PK.slot(width=OUT_LEN, name=_OUT.names)
PK_QCORE = _PK.slot(width=6, name=('log_s', 'core_psi', 'core_tx', 'core_ty', 'core_p31',
                                   'core_p32'))   # q_core after the packet
PK_RPM_EKF = _PK.slot(name='rpm_ekf')     # shaft RPM of the EKF state (no propagation)
PK_ZETA = _PK.slot(name='direction')      # rotation sign
PK_N = _PK.slot(name='events')            # events routed to the rotor
PK_BOX = _PK.slot(width=4, name=('x0', 'y0', 'x1', 'y1'))   # routing box
PK_LEN = _PK.close()
#: the name of every PK_* column (:class:`~helixtrack_ros.core.tracker.PacketColumns`)
PK_NAMES = _PK.names


def pack_tracker_params(p: TrackerParams, rotor: RotorInit, gn_target_events: int) -> np.ndarray:
    """The tracker parameter vector (TP_* slots) of parameters ``p`` for ``rotor``."""
    return _TP.pack(p, rotor, gn_target_events)


def new_tracker_state(p: TrackerParams, rotor: RotorInit) -> tuple[np.ndarray, np.ndarray]:
    """A fresh (float, int) state: the rotor's rate, P0, acquiring, no event yet."""
    return _FS.pack(p, rotor), _IS.pack(rotor, dtype=np.int64)


# ---- accessors: the kernel's locals from and to the state arrays --------------------------


@kernel
def _sync(fs, ist, phi, om, al, P00, P01, P02, P11, P12, P22, t_x, sw, swe):
    """Store the phase EKF's locals (x, P, their time, the pending fold) in the state."""
    fs[FS_PHI] = phi
    fs[FS_OM] = om
    fs[FS_AL] = al
    fs[FS_P00] = P00
    fs[FS_P01] = P01
    fs[FS_P02] = P02
    fs[FS_P11] = P11
    fs[FS_P12] = P12
    fs[FS_P22] = P22
    fs[FS_SW] = sw
    fs[FS_SWE] = swe
    ist[IS_T] = t_x


@fma_inline
def _ekf_params(tp):
    """B, kappa, q_jerk, sigma0^2, the R floor, 1 / (2 sigma_ring^2), r_in^2, r_out^2."""
    return (tp[TP_B], tp[TP_KAPPA], tp[TP_QJ], tp[TP_SIG0], tp[TP_RFLOOR], tp[TP_INV2SR2],
            tp[TP_RIN2], tp[TP_ROUT2])


@fma_inline
def _pose_params(tp):
    """gn_min_events, the GN event target, pose_timer_us, pose_max_events (Sec. 3.5)."""
    return int(tp[TP_GNMIN]), int(tp[TP_GNTARGET]), int(tp[TP_TIMER]), int(tp[TP_MAXEV])


@fma_inline
def _fast_params(tp, B):
    """Motion model on, its step and hold, the fast step period [us], omega it runs below.

    One blade: no fast step (docs/DESIGN.md, "One blade").
    """
    fstep = int(tp[TP_FAST]) if B >= 2.0 else 0
    om_fast = helical_rate_k(tp[TP_FASTRPM], B)
    return tp[TP_MOTION] != 0.0, int(tp[TP_MSTEP]), int(tp[TP_MHOLD]), fstep, om_fast


@fma_inline
def _health_params(hp):
    """Health window [us], the tip / outside band limits on r - 1 and 1 / tau of the recent
    residual sums [1/us] (core.health)."""
    return (int(hp[HP_WIN]), -hp[HP_TIP_IN], hp[HP_OUT0], hp[HP_OUT1],
            1.0 / max(hp[HP_LAG_TAU], 1.0))


@fma_inline
def _load_ekf(fs):
    """The phase EKF state x = [phi, omega, alpha] and the six entries of P."""
    return (fs[FS_PHI], fs[FS_OM], fs[FS_AL], fs[FS_P00], fs[FS_P01], fs[FS_P02], fs[FS_P11],
            fs[FS_P12], fs[FS_P22])


@fma_inline
def _load_batch(ist):
    """GN subsampling stride and count, events and start time of the pose batch."""
    return ist[IS_GN_STRIDE], ist[IS_GN_CNT], ist[IS_BATCH_N], ist[IS_BATCH_T0]


@fma_inline
def _load_motion(fs, ist):
    """Centre velocity, times of the last propagation / applied / tried fast step, fast on."""
    return (fs[FS_VX], fs[FS_VY], ist[IS_MT], ist[IS_SOLVE_T], ist[IS_FAST_T],
            ist[IS_FASTON] != 0)


@fma_inline
def _store_batch(fs, ist, phib, psib, t_max, n, n_used, n_back, n_accept, gn_stride, gn_cnt,
                 batch_n, batch_t0, fast_on, vx, vy, t_m, t_sv, t_f):
    """Write the pose batch, motion state and counters of a processed batch back."""
    fs[FS_PHIB] = phib
    fs[FS_PSIB] = psib
    ist[IS_TMAX] = t_max
    ist[IS_IN] += n
    ist[IS_USED] += n_used
    ist[IS_BACK] += n_back
    ist[IS_ACCEPT] += n_accept
    ist[IS_GN_STRIDE] = gn_stride
    ist[IS_GN_CNT] = gn_cnt
    ist[IS_BATCH_N] = batch_n
    ist[IS_BATCH_T0] = batch_t0
    ist[IS_FASTON] = 1 if fast_on else 0
    fs[FS_VX] = vx
    fs[FS_VY] = vy
    ist[IS_MT] = t_m
    ist[IS_SOLVE_T] = t_sv
    ist[IS_FAST_T] = t_f
