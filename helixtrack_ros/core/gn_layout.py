# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Layout of the Gauss-Newton pose refiner's parameter vector and accumulator.

The GN kernels keep their weights, bands, gains and learnt polarity offsets
in one float64 vector (G_* slots, packed from
:class:`~helixtrack_ros.core.params.TrackerParams` by :func:`pack_gn_params`)
and the running normal equations, BTO occupancies and polarity statistics
of a batch in one accumulator (ACC_* slots), so the tracker's kernel can
carry them as plain arrays.
"""

import numpy as np

from helixtrack_ros.core import fastmath  # noqa: F401  (drops stale kernel caches)
from helixtrack_ros.core.jit import kernel
from helixtrack_ros.core.params import TrackerParams

# ---- GN parameter vector (float64) -------------------------------------------------------
G_B = 0
G_ZETA = 1
G_LPHI = 2
G_LR = 3
G_LPOL = 4
G_LBAND = 5
G_LBTO = 6
G_LREG = 7
G_COFF = 8
G_CON = 9
G_CPOL = 10
G_CB = 11
G_BTAU = 12
G_RIN = 13
G_ROUT = 14
G_HPHI = 15
G_HR = 16
G_SC = 17          # effective core band width (>= bto_min_px / s)
G_DELTA = 18       # effective band offset
G_SB = 19          # effective inside / outside band width
G_OTAU = 20
G_PINLO = 21
G_PINHI = 22
G_POUTLO = 23
G_POUTHI = 24
G_DAMP = 25
G_GS = 26
G_GR = 27
G_GT = 28
G_GP = 29
G_FORGET = 30
G_MAXSTEP = 31
G_KAPPA = 32
G_INV2SR2 = 33
G_SC0 = 34         # configured widths (before the pixel floor)
G_DELTA0 = 35
G_SB0 = 36
G_MINPX = 37
G_NSEC = 38        # BTO sectors
G_POLADAPT = 39    # 1: c+ / c- follow the observed residuals
G_POLH = 40        # polarity half-offset h of the centred phase residual (0 = paper)
G_FIXT = 41        # 1: the solve does not move tx, ty (the tracker's fast step does)
G_LEN = 42

# ---- accumulator layout (float64) --------------------------------------------------------
ACC_A = 0          # 36: A row-major, upper triangle filled
ACC_G = 36         # 6: gradient
ACC_N = 42         # events in the current batch
ACC_LOSS = 43      # data loss of the batch (diagnostics)
ACC_SEC = 44       # per BTO sector: C_core, C_in, C_out, then dC/dq (3 x 6)
SEC_LEN = 21
MAX_SECTORS = 16
ACC_POL = ACC_SEC + SEC_LEN * MAX_SECTORS  # 4: sum w cos eps, sum w sin eps for OFF, ON
# phase-term translation system of the fast pose step (core.fast_step, beyond the paper):
# A_xx, A_xy, A_yy, g_x, g_y, sum of the phase gates; never touched by _solve
ACC_FAST = ACC_POL + 4
ACC_LEN = ACC_FAST + 6

_BTO_EPS = 1e-9
# events closer than this to the rotor centre (tip radii) carry no phase or radial
# direction (atan2 and |u| are not differentiable at u = 0): their Jacobians are 1 / r
_R_MIN = 1e-9


def pack_gn_params(params: TrackerParams, blades: int, zeta: int) -> np.ndarray:
    """Build the GN parameter vector from :class:`TrackerParams`.

    The band widths get their pixel floor at the first :func:`_set_bands`.
    """
    g = np.zeros(G_LEN)
    g[G_B] = blades
    g[G_ZETA] = 1.0 if zeta >= 0 else -1.0
    g[G_LPHI] = params.lambda_phi
    g[G_LR] = params.lambda_r
    g[G_LPOL] = params.lambda_pol
    g[G_LBAND] = params.lambda_band
    g[G_LBTO] = params.lambda_bto
    g[G_LREG] = params.lambda_reg
    g[G_CON] = params.pol_c_on_rad
    g[G_COFF] = params.pol_c_off_rad
    g[G_CPOL] = params.pol_scale
    g[G_CB] = params.band_scale
    g[G_BTAU] = params.band_tau
    g[G_RIN] = params.r_in
    g[G_ROUT] = params.r_out
    g[G_HPHI] = params.huber_phi_rad
    g[G_HR] = params.huber_r
    g[G_SC0] = params.bto_sigma_core
    g[G_DELTA0] = params.bto_delta
    g[G_SB0] = params.bto_sigma_band
    g[G_MINPX] = params.bto_min_px
    g[G_NSEC] = params.bto_sectors
    g[G_POLADAPT] = params.pol_adapt
    g[G_POLH] = 0.5 * (params.pol_c_on_rad - params.pol_c_off_rad) * params.ekf_polarity
    g[G_SC] = params.bto_sigma_core
    g[G_DELTA] = params.bto_delta
    g[G_SB] = params.bto_sigma_band
    g[G_OTAU] = params.bto_tau
    g[G_PINLO] = params.bto_p_in_min
    g[G_PINHI] = params.bto_p_in_max
    g[G_POUTLO] = params.bto_p_out_min
    g[G_POUTHI] = params.bto_p_out_max
    g[G_DAMP] = params.gn_damping
    g[G_GS] = params.gamma_scale
    g[G_GR] = params.gamma_rot
    g[G_GT] = params.gamma_t
    g[G_GP] = params.gamma_persp
    g[G_FORGET] = params.gn_forget
    g[G_MAXSTEP] = params.gn_max_step
    g[G_KAPPA] = params.kappa
    g[G_FIXT] = 0.0
    g[G_INV2SR2] = 0.5 / params.sigma_ring ** 2
    return g


@kernel
def _set_bands(prm, scale_px):
    """Apply the pixel floor bto_min_px / s to the BTO band widths and offset."""
    floor = prm[G_MINPX] / max(scale_px, 1e-9)
    prm[G_SC] = max(prm[G_SC0], floor)
    prm[G_DELTA] = max(prm[G_DELTA0], floor)
    prm[G_SB] = max(prm[G_SB0], floor)
