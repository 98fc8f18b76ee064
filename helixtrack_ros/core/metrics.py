# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Accuracy metrics of shaft-RPM tracks against ground truth (paper Sec. 4.2)."""

from typing import NamedTuple

import numpy as np


class RpmErrors(NamedTuple):
    """Errors of one rotor's shaft-RPM track.

    Attributes
    ----------
    mae_rpm : float
        Mean absolute error [RPM].
    mare_pct : float
        Mean absolute relative error [%].
    rmse_rpm : float
        Root-mean-square error [RPM].
    n : int
        Number of tracker update times evaluated.
    """

    mae_rpm: float
    mare_pct: float
    rmse_rpm: float
    n: int
    #: update times in the window whose estimate was withheld (NaN: not measured)
    withheld: int = 0


def rpm_errors(t_us: np.ndarray, rpm_est: np.ndarray, gt_t_us: np.ndarray,
               gt_rpm: np.ndarray, t_from_us: int | None = None,
               t_to_us: int | None = None) -> RpmErrors:
    """Compute MAE, MArE and RMSE of a shaft-RPM track.

    Parameters
    ----------
    t_us : numpy.ndarray
        Tracker update times (int64 microseconds of sensor time).
    rpm_est : numpy.ndarray
        Estimated shaft RPM at ``t_us``.
    gt_t_us, gt_rpm : numpy.ndarray
        Ground-truth samples, sorted by time; linearly interpolated at ``t_us``.
    t_from_us, t_to_us : int, optional
        Only update times in ``[t_from_us, t_to_us]`` count (e.g. skip the
        first 0.2 s of convergence).

    Returns
    -------
    RpmErrors
        The three errors and the number of update times used; NaN errors
        when no update time falls in the window.

    Notes
    -----
    Paper Sec. 4.2: the averages run over the set T of tracker update times,
    ground truth is interpolated there; MArE divides each absolute error by
    |RPM_GT(t)|. Update times outside the ground-truth span are ignored
    rather than extrapolated; NaN estimates (withheld: the rotor was not
    TRACKING) are not errors but counted in ``withheld``.
    """
    t_us = np.asarray(t_us, dtype=np.int64)
    rpm_est = np.asarray(rpm_est, dtype=np.float64)
    gt_t_us = np.asarray(gt_t_us, dtype=np.int64)
    gt_rpm = np.asarray(gt_rpm, dtype=np.float64)
    if t_us.shape != rpm_est.shape:
        raise ValueError('t_us and rpm_est must have the same shape')
    if gt_t_us.shape != gt_rpm.shape or gt_t_us.size < 1:
        raise ValueError('ground truth needs matching, non-empty gt_t_us and gt_rpm')
    keep = (t_us >= gt_t_us[0]) & (t_us <= gt_t_us[-1])
    if t_from_us is not None:
        keep &= t_us >= t_from_us
    if t_to_us is not None:
        keep &= t_us <= t_to_us
    finite = np.isfinite(rpm_est)
    withheld = int(np.count_nonzero(keep & ~finite))
    keep &= finite
    n = int(np.count_nonzero(keep))
    if n == 0:
        return RpmErrors(float('nan'), float('nan'), float('nan'), 0, withheld)
    # RPM_GT(t) by linear interpolation at the update times
    truth = np.interp(t_us[keep].astype(np.float64), gt_t_us.astype(np.float64), gt_rpm)
    err = rpm_est[keep] - truth
    # MAE = mean |e|, MArE = mean |e| / |RPM_GT|, RMSE = sqrt(mean e^2)
    abs_err = np.abs(err)
    mare = float(np.mean(abs_err / np.maximum(np.abs(truth), 1e-9)) * 100.0)
    return RpmErrors(float(np.mean(abs_err)), mare, float(np.sqrt(np.mean(err * err))), n,
                     withheld)


def max_scale_error_pct(t_us: np.ndarray, scale_est: np.ndarray, gt_t_us: np.ndarray,
                        gt_scale: np.ndarray, t_from_us: int | None = None) -> float:
    """Largest relative error [%] of a tracked scale (tip radius [px]) against ground truth.

    Over the update times from ``t_from_us`` inside the ground-truth span
    whose estimate is finite (measured), ground truth interpolated there as in
    :func:`rpm_errors`; NaN when there is none.
    """
    t_us = np.asarray(t_us, dtype=np.int64)
    scale_est = np.asarray(scale_est, dtype=np.float64)
    gt_t_us = np.asarray(gt_t_us, dtype=np.int64)
    if not gt_t_us.size:
        return float('nan')
    keep = (t_us >= gt_t_us[0]) & (t_us <= gt_t_us[-1]) & np.isfinite(scale_est)
    if t_from_us is not None:
        keep &= t_us >= t_from_us
    if not keep.any():
        return float('nan')
    truth = np.interp(t_us[keep].astype(np.float64), gt_t_us.astype(np.float64),
                      np.asarray(gt_scale, dtype=np.float64))
    return float(np.max(np.abs(scale_est[keep] - truth) / np.maximum(np.abs(truth), 1e-9))
                 * 100.0)
