# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Paper Sec. 4.2 metrics against a direct computation."""

import numpy as np
import pytest

from helixtrack_ros.core.metrics import rpm_errors


def test_errors_match_hand_computation_with_interpolated_truth():
    gt_t = np.array([0, 1000, 2000], np.int64)
    gt = np.array([1000.0, 2000.0, 3000.0])
    t = np.array([500, 1000, 1500], np.int64)          # truth there: 1500, 2000, 2500
    est = np.array([1600.0, 1900.0, 2500.0])          # errors: +100, -100, 0
    e = rpm_errors(t, est, gt_t, gt)
    assert e.n == 3
    assert e.mae_rpm == pytest.approx(200 / 3)
    assert e.mare_pct == pytest.approx(100 * (100 / 1500 + 100 / 2000 + 0) / 3)
    assert e.rmse_rpm == pytest.approx(np.sqrt(20000 / 3))


def test_window_and_out_of_span_samples_are_left_out():
    gt_t = np.array([0, 1000], np.int64)
    gt = np.array([100.0, 100.0])
    t = np.array([-10, 100, 900, 2000], np.int64)
    est = np.array([0.0, 110.0, 90.0, 0.0])
    e = rpm_errors(t, est, gt_t, gt, t_from_us=500)
    assert e.n == 1 and e.mae_rpm == pytest.approx(10.0)
    assert np.isnan(rpm_errors(t, est, gt_t, gt, t_from_us=5000).mae_rpm)


def test_shape_mismatch_is_refused():
    with pytest.raises(ValueError):
        rpm_errors(np.zeros(2, np.int64), np.zeros(3), np.zeros(1, np.int64), np.zeros(1))
