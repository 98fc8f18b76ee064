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

from helixtrack_ros.core.fastmath import TWO_PI
from helixtrack_ros.core.health import HP_OUT0, HP_OUT1, HP_TIP_IN, HP_WIN
from helixtrack_ros.core.jit import fma_inline, kernel
from helixtrack_ros.core.params import RotorInit, TrackerParams

# ---- float state ------------------------------------------------------------------------
FS_PHI, FS_OM, FS_AL = 0, 1, 2
FS_P00, FS_P01, FS_P02, FS_P11, FS_P12, FS_P22 = 3, 4, 5, 6, 7, 8
FS_PHIB, FS_PSIB = 9, 10
FS_SW, FS_SWE = 11, 12    # pending fold of the current timestamp: sum w, sum w eps
FS_VX, FS_VY = 13, 14     # motion model: image velocity of the centre [px / us]
FS_KP = 15         # 16: covariance of the motion Kalman filter [x, y, vx, vy] (px, px/s)
FS_AC = 31         # 3: while acquiring, sum u_x, sum u_y, count of disc events (centroid)
FS_LEN = 34

# ---- int state --------------------------------------------------------------------------
IS_T = 0           # time of the EKF state x [us]; -1 before the first accepted event
IS_TMAX = 1        # latest input time [us]; -1 before the first event
IS_IN = 2          # input events
IS_USED = 3        # events assimilated by the EKF
IS_POSE = 4        # pose solves
IS_BACK = 5        # events whose time went backwards
IS_ZETA = 6        # rotation sign; 0 while acquiring an unknown sign
IS_ACQ = 7         # 1 while acquiring sign / phase
IS_ACQ_N = 8       # buffered acquisition events
IS_ACQ_STRIDE = 9
IS_ACQ_SEEN = 10   # in-ring events seen while acquiring
IS_ACQ_T0 = 11
IS_GN_STRIDE = 12
IS_GN_CNT = 13
IS_BATCH_N = 14    # accepted events in the current pose batch
IS_BATCH_T0 = 15
IS_DIR = 16        # configured direction
IS_DEFER = 17      # triggers whose batch was too small
IS_ACCEPT = 18     # events inside the annulus
IS_MT = 19         # motion model: time the centre was last propagated to [us]
IS_SOLVE_T = 20    # time of the last applied fast step [us]
IS_FAST_T = 21     # time of the last fast translation step [us]
IS_FASTON = 22     # 1 while the fast translation step runs (low RPM)
IS_LEN = 23

# ---- tracker parameter vector -----------------------------------------------------------
TP_B = 0
TP_KAPPA = 1
TP_QJ = 2
TP_SIG0 = 3
TP_RFLOOR = 4
TP_INV2SR2 = 5
TP_RIN2 = 6
TP_ROUT2 = 7
TP_GNMIN = 8
TP_GNTARGET = 9
TP_TIMER = 10
TP_MAXEV = 11
TP_ACQ_US = 12     # minimum acquisition window [us]
TP_OMEGA0 = 13     # initial |omega| [rad/s] of the B-fold phase
TP_SPAN = 14
TP_MARGIN = 15
TP_P0PHI = 16
TP_P0OM = 17
TP_P0AL = 18
TP_RINGACQ = 19    # acquisition uses |r - 1| <= this
TP_ACQ_MIN = 20    # minimum buffered events before a decision
TP_MOTION = 21     # 1: constant-velocity pose propagation between fast steps
TP_FASTRPM = 22    # the fast step runs below this shaft RPM
TP_MSTEP = 23
TP_MHOLD = 24
TP_MVMAX = 25      # largest image speed [tip radii / us]
TP_FAST = 26       # fast translation step period [us] (0 = off)
TP_FGAIN = 27
TP_FMAX = 28
TP_FDAMP = 29
TP_FMIN = 30
TP_FFORGET = 31    # forgetting of the fast translation system
TP_FINFO = 32      # information per unit of the phase-term normal equations [1/px^2]
TP_QACC = 33       # white-acceleration density of the motion model [tip radii^2 / s^3]
TP_P0POS = 34      # initial position / velocity standard deviations [tip radii, tip radii/s]
TP_P0VEL = 35
TP_FANISO = 36     # weakest / strongest eigenvalue below this: weak direction dropped
TP_FGATE = 37      # innovation gate (squared Mahalanobis distance; 0 = off)
TP_ACQGAIN = 38    # centroid step gain while acquiring
TP_LEN = 39

# output columns
OUT_RPM, OUT_STD, OUT_PHASE, OUT_OMEGA, OUT_Q = 0, 1, 2, 3, 4
OUT_LEN = 10

MODE_LAST, MODE_TIMES, MODE_EVERY = 0, 1, 2

# per-packet output columns of :func:`_process_packets` (after the OUT_LEN sample columns)
PK_QCORE = OUT_LEN          # 6: q_core after the packet
PK_RPM_EKF = OUT_LEN + 6    # shaft RPM of the EKF state (no propagation)
PK_ZETA = OUT_LEN + 7       # rotation sign
PK_N = OUT_LEN + 8          # events routed to the rotor
PK_BOX = OUT_LEN + 9        # 4: routing box (x0, y0, x1, y1)
PK_LEN = OUT_LEN + 13


def pack_tracker_params(p: TrackerParams, rotor: RotorInit, gn_target_events: int) -> np.ndarray:
    """The tracker parameter vector (TP_* slots) of parameters ``p`` for ``rotor``."""
    B = rotor.blades
    tp = np.zeros(TP_LEN)
    tp[TP_B] = B
    tp[TP_KAPPA] = p.kappa
    tp[TP_QJ] = p.q_jerk
    tp[TP_SIG0] = p.sigma0_rad2
    tp[TP_RFLOOR] = p.r_floor
    tp[TP_INV2SR2] = 0.5 / p.sigma_ring ** 2
    tp[TP_RIN2] = p.r_in ** 2
    tp[TP_ROUT2] = p.r_out ** 2
    tp[TP_GNMIN] = p.gn_min_events
    tp[TP_GNTARGET] = gn_target_events
    tp[TP_TIMER] = p.pose_timer_us
    tp[TP_MAXEV] = p.pose_max_events
    tp[TP_ACQ_US] = min(p.sign_turns * 60e6 / rotor.rpm_shaft, float(p.sign_max_us))
    tp[TP_OMEGA0] = rotor.rpm_shaft * TWO_PI / 60.0 * B
    tp[TP_SPAN] = p.sign_rpm_span
    tp[TP_MARGIN] = p.sign_margin
    tp[TP_P0PHI] = p.p0_phase_rad2
    tp[TP_P0OM] = p.p0_omega_rad2_s2
    tp[TP_P0AL] = p.p0_alpha_rad2_s4
    tp[TP_RINGACQ] = 2.0 * p.sigma_ring
    tp[TP_ACQ_MIN] = min(64, p.sign_events)
    tp[TP_MOTION] = p.motion_model
    tp[TP_FASTRPM] = p.pose_fast_rpm
    tp[TP_MSTEP] = p.motion_step_us
    tp[TP_MHOLD] = p.motion_hold_us
    tp[TP_MVMAX] = p.motion_max_rs * 1e-6
    tp[TP_FAST] = p.pose_fast_us
    tp[TP_FGAIN] = p.pose_fast_gain
    tp[TP_FMAX] = p.pose_fast_max_step
    tp[TP_FDAMP] = p.pose_fast_damping
    tp[TP_FMIN] = p.pose_fast_min_weight
    tp[TP_FFORGET] = p.pose_fast_forget
    tp[TP_FINFO] = p.pose_fast_info
    tp[TP_QACC] = p.motion_accel
    tp[TP_P0POS] = p.motion_p0_pos
    tp[TP_P0VEL] = p.motion_p0_vel
    tp[TP_FANISO] = p.pose_fast_aniso
    tp[TP_FGATE] = p.motion_gate
    tp[TP_ACQGAIN] = p.pose_acq_gain
    return tp


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
    om_fast = tp[TP_FASTRPM] * TWO_PI / 60.0 * B
    return tp[TP_MOTION] != 0.0, int(tp[TP_MSTEP]), int(tp[TP_MHOLD]), fstep, om_fast


@fma_inline
def _health_params(hp):
    """Health window [us] and the tip / outside band limits on r - 1 (core.health)."""
    return int(hp[HP_WIN]), -hp[HP_TIP_IN], hp[HP_OUT0], hp[HP_OUT1]


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
