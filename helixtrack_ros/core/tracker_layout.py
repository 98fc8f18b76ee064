# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Layout of the tracker's state and parameter vectors (shared by its kernels).

A tracker's whole state lives in a few small numpy arrays so that one numba
call processes a batch: ``fs`` (float state), ``ist`` (int state) and ``tp``
(parameters packed from :class:`~helixtrack_ros.core.params.TrackerParams`).
The constants here name their slots; the OUT_* / PK_* columns name the
output rows of :func:`~helixtrack_ros.core.tracker_kernel._process` and
:func:`~helixtrack_ros.core.tracker_kernel._process_packets`.
"""

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
