# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive pure-python/numpy twin of the HelixTracker kernel (one event at a time).

Mirrors the kernel's rules (annulus gate, acquisition buffer with even
thinning, lazy predict, gated EKF update, GN accumulation on every k-th
event, pose trigger, damped solve with trust region and forgetting,
adaptive polarity offsets) with numpy matrices, np.arctan2 / np.cos and
np.linalg.solve. Slow: for short streams in tests only.

Events of one timestamp are assimilated one by one here (sequential scalar
EKF updates, each residual taken at the predicted phase of the timestamp);
the kernel folds them into one update, which is the same linear update
(with ``ekf_fold`` 0 both take each residual at the current phase).
The pose trigger is checked when a later timestamp arrives.
"""

import math

import numpy as np

from . import naive_ekf as ne
from . import naive_gn as ng
from . import naive_homography as nh
from . import naive_sign as ns


class NaiveTracker:
    """Per-event twin; ``process`` returns one row per event like every_event=True."""

    def __init__(self, rotor, params):
        self.P = params
        self.B = rotor.blades
        self.direction = rotor.direction
        self.q = np.array([math.log(rotor.radius_px), rotor.psi_rad, rotor.center_px[0],
                           rotor.center_px[1], rotor.perspective[0], rotor.perspective[1]])
        self.omega0 = rotor.rpm_shaft * 2 * math.pi / 60.0 * self.B
        self.acq_us = (0.0 if params.sign_prefix
                       else min(params.sign_turns * 60e6 / rotor.rpm_shaft, params.sign_max_us))
        self.acq_min = params.sign_events if params.sign_prefix else min(64, params.sign_events)
        self.x = np.array([0.0, self.omega0, 0.0])
        self.Pm = np.diag([params.p0_phase_rad2, params.p0_omega_rad2_s2,
                           params.p0_alpha_rad2_s4])
        self.t_x = -1
        self.t_max = -1
        self.zeta = 0
        self.acquiring = True
        self.buf_t, self.buf_a = [], []
        self.acq_stride, self.acq_seen, self.acq_t0 = 1, 0, 0
        self.gn_stride, self.gn_cnt, self.batch_n, self.batch_t0 = 1, 0, 0, 0
        self.phib = 0.0
        self.psib = 0.0
        self.c_off, self.c_on = params.pol_c_off_rad, params.pol_c_on_rad
        self.h = 0.5 * (self.c_on - self.c_off) * params.ekf_polarity
        self.pose_updates = 0
        self.back = 0
        self.pending = False
        self.phiw_pred = 0.0
        self._reset_acc(full=True)

    # ---------------------------------------------------------------- GN accumulators
    def _reset_acc(self, full=False, rho=0.0):
        if full:
            self.A = np.zeros((6, 6))
            self.g = np.zeros(6)
            self.polsum = np.zeros(4)
        else:
            self.A *= rho
            self.g *= rho
            self.polsum *= rho
        self.n_acc = 0
        self.sec = np.zeros((16, 3))
        self.dsec = np.zeros((16, 3, 6))

    def _gn_params(self):
        P = ng.params_dict(self.P, self.B, self.zeta if self.zeta != 0 else 1)
        P['c_on'], P['c_off'], P['h'] = self.c_on, self.c_off, self.h
        return P

    def _accumulate(self, zx, zy, pol, phiw):
        P = self._gn_params()
        q = self.q
        u, r, eps, res, w, jac = ng.terms(q, np.array([zx]), np.array([zy]), np.array([pol]),
                                          np.array([phiw]), P)
        r, eps, res, w, jac = r[0], eps[0], res[0], w[0], jac[0]
        hphi = min(1.0, P['huber_phi'] / abs(eps)) if eps != 0 else 1.0
        hr = min(1.0, P['huber_r'] / abs(r - 1.0)) if r != 1 else 1.0
        wts = np.array([P['l_phi'] * w * hphi, P['l_r'] * w * hr, P['l_pol'], P['l_band'],
                        P['l_band']])
        for k in range(5):
            self.A += wts[k] * np.outer(jac[k], jac[k])
            self.g += wts[k] * res[k] * jac[k]
        m, dm = ng.bands(np.array([r]), P, math.exp(q[0]))
        nsec = self.P.bto_sectors
        s = 0
        if nsec > 1:
            s = int((math.atan2(u[0, 1] + 0.0, u[0, 0]) + math.pi + math.pi / nsec)
                    * nsec / (2 * math.pi)) % nsec
        self.sec[s] += m[0]
        self.dsec[s] += dm[0][:, None] * jac[1][None, :]
        self.n_acc += 1
        wr = math.exp(-0.5 * ((r - 1.0) / self.P.sigma_ring) ** 2)
        eraw = ne_wrap(eps + (self.h if pol != 0 else -self.h))
        k = 2 if pol != 0 else 0
        self.polsum[k] += wr * math.cos(eraw)
        self.polsum[k + 1] += wr * math.sin(eraw)

    def _solve(self):
        P = self._gn_params()
        q = self.q
        A = self.A.copy()
        g = self.g.copy()
        n = self.n_acc if self.P.bto_weight_n else 1.0
        weight = P['l_bto'] * n / self.P.bto_sectors
        for s in range(self.P.bto_sectors):
            a, gb, _ = ng.bto_terms(self.sec[s], self.dsec[s], P, weight)
            A += a
            g += gb
        lr = P['l_reg'] * n
        A[4, 4] += lr
        A[5, 5] += lr
        g[4] += lr * q[4]
        g[5] += lr * q[5]
        with np.errstate(invalid='ignore'):
            step = ng.gn_step(q, A, g, P) - q
        if np.all(np.isfinite(step)):
            # (a step that is not finite, e.g. s + ds <= 0, is not taken)
            self.q = q + self._trust_region(q, step)
        if self.P.pol_adapt:
            for k in range(2):
                c, s = self.polsum[2 * k], self.polsum[2 * k + 1]
                if c * c + s * s > 0:
                    if k == 0:
                        self.c_off = math.atan2(s, c)
                    else:
                        self.c_on = math.atan2(s, c)
            if self.h != 0.0:
                self.h = 0.5 * ne_wrap(self.c_on - self.c_off)
        self._reset_acc(rho=self.P.gn_forget)

    def _trust_region(self, q, step):
        """The step limited to gn_max_step tip radii on the tip circle, |d psi| likewise."""
        d_psi = step[1]
        step[1] = 0.0
        lim = self.P.gn_max_step * math.exp(q[0])
        ang = 2 * math.pi * np.arange(16) / 16
        u = np.stack([np.cos(ang), np.sin(ang)])

        def proj(qq):
            zt = nh.homography(qq) @ np.vstack([u, np.ones(16)])
            return zt[:2] / zt[2]
        d = np.max(np.hypot(*(proj(q + step) - proj(q))))
        if d > lim:
            step *= lim / d
        step[1] = max(-self.P.gn_max_step, min(self.P.gn_max_step, d_psi))
        return step

    # ---------------------------------------------------------------- outputs
    def _row(self, t):
        dt = (t - self.t_x) * 1e-6 if (self.t_x >= 0 and t > self.t_x) else 0.0
        x, Pm = ne.predict(self.x, self.Pm, dt, self.P.q_jerk)
        zeta = 1.0 if self.zeta >= 0 else -1.0
        c = 60.0 / (2 * math.pi * self.B)
        # from the plane direction seen as image +x: J^-1 e_x of Eq. (1)'s map at u = 0
        s_, psi, tx, ty, p31, p32 = math.exp(self.q[0]), *self.q[1:]
        J = np.array([[s_ * math.cos(psi) - tx * p31, -s_ * math.sin(psi) - tx * p32],
                      [s_ * math.sin(psi) - ty * p31, s_ * math.cos(psi) - ty * p32]])
        ux = np.linalg.solve(J, [1.0, 0.0])
        beta = math.atan2(ux[1], ux[0])
        phase = ne_wrap(zeta * x[0] / self.B - self.q[1] - beta)
        return [c * abs(x[1]), c * math.sqrt(max(Pm[1, 1], 0.0)), phase,
                zeta * x[1] / self.B, math.exp(self.q[0]), *self.q[1:]]

    # ---------------------------------------------------------------- processing
    def process(self, ev):
        rows = []
        Pp = self.P
        for i in range(len(ev)):
            t = int(ev.t_us[i])
            if self.t_max < 0:
                self.t_max = t
            if t < self.t_max:
                self.back += 1
                t = self.t_max
            self.t_max = t
            if self.pending and t > self.t_x:
                self.pending = False
                self._check_trigger()
            zx, zy = float(ev.x[i]), float(ev.y[i])
            u = nh.backwarp(self.q, [zx], [zy])[0]
            r2 = u @ u
            if Pp.r_in ** 2 <= r2 <= Pp.r_out ** 2:
                r = math.sqrt(r2)
                if self.acquiring:
                    self._acquire_event(t, u, r)
                else:
                    self._track_event(t, zx, zy, int(ev.p[i]), u, r)
            rows.append([t] + self._row(t))
        return np.array(rows)

    def _acquire_event(self, t, u, r):
        Pp = self.P
        if abs(r - 1.0) > 2.0 * Pp.sigma_ring:
            return
        if self.acq_seen == 0:
            self.acq_t0 = t
        if self.acq_seen % self.acq_stride == 0:
            if len(self.buf_t) == Pp.sign_events:
                self.buf_t = self.buf_t[0::2][:Pp.sign_events // 2]
                self.buf_a = self.buf_a[0::2][:Pp.sign_events // 2]
                self.acq_stride *= 2
            if self.acq_seen % self.acq_stride == 0:
                self.buf_t.append(t)
                self.buf_a.append(math.atan2(u[1], u[0]))
        self.acq_seen += 1
        if t - self.acq_t0 >= self.acq_us and len(self.buf_t) >= self.acq_min:
            ts = (np.array(self.buf_t) - t) * 1e-6
            span_s = (t - self.acq_t0) * 1e-6
            zeta, ph, om, _, _ = ns.acquire(ts, np.array(self.buf_a), self.B, self.direction,
                                            self.omega0, Pp.sign_rpm_span, Pp.sign_margin,
                                            span_s)
            self.zeta = zeta
            d_omega = math.pi / 8.0 / max(span_s, 1e-9)
            if Pp.sign_lock_phase:
                self.x = np.array([ph + zeta * self.B * self.q[1], om, 0.0])
                p11 = max(Pp.p0_omega_rad2_s2, 0.0625 * d_omega ** 2)
            else:
                # the release: phi = 0 at the initial rate
                self.x = np.array([0.0, self.omega0, 0.0])
                p11 = Pp.p0_omega_rad2_s2
            self.Pm = np.diag([Pp.p0_phase_rad2, p11, Pp.p0_alpha_rad2_s4])
            self.phib, self.psib = self.x[0], self.q[1]
            self.phi_pred = self.x[0]
            self.phiw_pred = ne_wrap(self.x[0] - zeta * self.B * self.q[1])
            self.t_x = t
            self.acquiring = False
            self.batch_t0, self.batch_n, self.gn_cnt, self.gn_stride = t, 0, 0, 1

    def _track_event(self, t, zx, zy, pol, u, r):
        Pp = self.P
        B, zb = self.B, self.zeta * self.B
        if t > self.t_x:
            self.x, self.Pm = ne.predict(self.x, self.Pm, (t - self.t_x) * 1e-6, Pp.q_jerk)
            self.t_x = t
            self.phiw_pred = ne_wrap(self.x[0] - zb * self.q[1])
            self.phi_pred = self.x[0]
        theta = math.atan2(self.zeta * u[1], u[0])
        hp = self.h if pol != 0 else -self.h
        if Pp.ekf_fold:
            # residual at the predicted phase of this timestamp
            phiw = self.phiw_pred
            eps = ne_wrap(phiw - B * theta - hp)
            # the linear residual at the current phase: eps_pred + (phi - phi_pred)
            eps_now = eps + (self.x[0] - self.phi_pred)
        else:
            # Sec. 3.4: residual and gates at the current phase
            phiw = ne_wrap(self.x[0] - zb * self.q[1])
            eps = eps_now = ne_wrap(phiw - B * theta - hp)
        w = ne.gate(eps, r, Pp.kappa, Pp.sigma_ring) if Pp.ekf_r_vm else \
            ne.gate(0.0, r, 0.0, Pp.sigma_ring)
        R = Pp.sigma0_rad2 / max(w, Pp.r_floor)
        self.x, self.Pm = ne.update(self.x, self.Pm, eps_now, R)
        self.pending = True
        self.batch_n += 1
        self.gn_cnt += 1
        if self.gn_cnt >= self.gn_stride:
            self.gn_cnt = 0
            self._accumulate(zx, zy, pol, phiw)

    def _check_trigger(self):
        Pp = self.P
        B, zb = self.B, self.zeta * self.B
        psi = self.q[1]
        if (abs((self.x[0] - self.phib - zb * (psi - self.psib)) / B) >= math.pi
                or (Pp.pose_timer_us > 0 and self.t_x - self.batch_t0 >= Pp.pose_timer_us)
                or (Pp.pose_max_events > 0 and self.batch_n >= Pp.pose_max_events)):
            if self.batch_n >= Pp.gn_min_events and self.n_acc >= 8:
                self._solve()
                self.pose_updates += 1
                self.x[0] += zb * (self.q[1] - psi)
                self.gn_stride = (max(1, self.batch_n // Pp.gn_target_events)
                                  if Pp.gn_target_events > 0 else 1)
                self.gn_cnt = 0
                self.batch_n = 0
            self.phib = self.x[0]
            self.psib = self.q[1]
            self.batch_t0 = self.t_x


def ne_wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi
