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
from helixtrack_ros.core.slots import Slots

# ---- GN parameter vector (float64), packed from TrackerParams, the blade count and zeta -----
_G = Slots('GN parameters')
G_B = _G.slot(lambda p, blades, zeta: blades)
G_ZETA = _G.slot(lambda p, blades, zeta: 1.0 if zeta >= 0 else -1.0)
G_LPHI = _G.slot('lambda_phi')
G_LR = _G.slot('lambda_r')
G_LPOL = _G.slot('lambda_pol')
G_LBAND = _G.slot('lambda_band')
G_LBTO = _G.slot('lambda_bto')
G_LREG = _G.slot('lambda_reg')
G_COFF = _G.slot('pol_c_off_rad')   # c- then c+ (the solve learns them in this order)
G_CON = _G.slot('pol_c_on_rad')
G_CPOL = _G.slot('pol_scale')
G_CB = _G.slot('band_scale')
G_BTAU = _G.slot('band_tau')
G_RIN = _G.slot('r_in')
G_ROUT = _G.slot('r_out')
G_HPHI = _G.slot('huber_phi_rad')
G_HR = _G.slot('huber_r')
G_SC = _G.slot('bto_sigma_core')    # effective core band width (>= bto_min_px / s)
G_DELTA = _G.slot('bto_delta')      # effective band offset
G_SB = _G.slot('bto_sigma_band')    # effective inside / outside band width
G_OTAU = _G.slot('bto_tau')
G_PINLO = _G.slot('bto_p_in_min')   # bounds: p_in low, high, p_out low, high (in this order)
G_PINHI = _G.slot('bto_p_in_max')
G_POUTLO = _G.slot('bto_p_out_min')
G_POUTHI = _G.slot('bto_p_out_max')
G_DAMP = _G.slot('gn_damping')
G_GS = _G.slot('gamma_scale')
G_GR = _G.slot('gamma_rot')
G_GT = _G.slot('gamma_t')
G_GP = _G.slot('gamma_persp')
G_FORGET = _G.slot('gn_forget')
G_MAXSTEP = _G.slot('gn_max_step')
G_KAPPA = _G.slot('kappa')
G_INV2SR2 = _G.slot(lambda p, blades, zeta: 0.5 / p.sigma_ring ** 2)
G_SC0 = _G.slot('bto_sigma_core')   # configured widths (before the pixel floor)
G_DELTA0 = _G.slot('bto_delta')
G_SB0 = _G.slot('bto_sigma_band')
G_MINPX = _G.slot('bto_min_px')
G_NSEC = _G.slot('bto_sectors')     # BTO sectors
G_POLADAPT = _G.slot('pol_adapt')   # 1: c+ / c- follow the observed residuals
# polarity half-offset h of the centred phase residual (0 = paper)
G_POLH = _G.slot(lambda p, blades, zeta: 0.5 * (p.pol_c_on_rad - p.pol_c_off_rad)
                 * p.ekf_polarity)
G_FIXT = _G.slot()                  # 1: the solve does not move tx, ty (the fast step does)
G_BRATIO = _G.slot('bto_ratio')     # 1: p = C_band / (C_band + C_core); 0: / C_core (paper)
G_BHINGE = _G.slot('bto_hinge')     # 1: squared hinge per bound; 0: softplus (paper)
G_BWN = _G.slot('bto_weight_n')     # 1: BTO and regulariser weighed by N; 0: once (paper)
G_PSISTIFF = _G.slot('gn_psi_stiff')   # 1: psi gets the curvature of log-scale
G_LOGS = _G.slot('gn_log_scale')    # 1: the solve steps log s; 0: s (paper)
G_LEN = _G.close()

# ---- accumulator layout (float64) --------------------------------------------------------
MAX_SECTORS = 16
_SEC = Slots('BTO sector')
SEC_C = _SEC.slot(width=3)           # C_core, C_in, C_out
SEC_DC = _SEC.slot(width=3 * 6)      # dC/dq of the three (6 each, same order)
SEC_LEN = _SEC.close()
_ACC = Slots('GN accumulator')
ACC_A = _ACC.slot(width=36)          # A row-major, upper triangle filled
ACC_G = _ACC.slot(width=6)           # gradient
ACC_N = _ACC.slot()                  # events in the current batch
ACC_LOSS = _ACC.slot()               # data loss of the batch (diagnostics)
ACC_SEC = _ACC.slot(width=SEC_LEN * MAX_SECTORS)   # per BTO sector: the SEC_* slots
ACC_POL = _ACC.slot(width=4)         # sum w cos eps, sum w sin eps for OFF, ON
# phase-term translation system of the fast pose step (core.fast_step, beyond the paper):
# A_xx, A_xy, A_yy, g_x, g_y, sum of the phase gates; never touched by _solve
ACC_FAST = _ACC.slot(width=6)
ACC_LEN = _ACC.close()

_BTO_EPS = 1e-9
# events closer than this to the rotor centre (tip radii) carry no phase or radial
# direction (atan2 and |u| are not differentiable at u = 0): their Jacobians are 1 / r
_R_MIN = 1e-9


def pack_gn_params(params: TrackerParams, blades: int, zeta: int) -> np.ndarray:
    """Build the GN parameter vector from :class:`TrackerParams`.

    The band widths get their pixel floor at the first :func:`_set_bands`.
    """
    return _G.pack(params, blades, zeta)


@kernel
def _set_bands(prm, scale_px):
    """Apply the pixel floor bto_min_px / s to the BTO band widths and offset."""
    floor = prm[G_MINPX] / max(scale_px, 1e-9)
    prm[G_SC] = max(prm[G_SC0], floor)
    prm[G_DELTA] = max(prm[G_DELTA0], floor)
    prm[G_SB] = max(prm[G_SB0], floor)
