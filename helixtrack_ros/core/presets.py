# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Named tracker configurations (presets) and the one list of deviations from the paper.

A preset is a set of :class:`TrackerParams` overrides on top of this
package's defaults:

- ``paper``: the HelixTrack paper (Sec. 3 and supplement S3) as far as our
  switches reach; where the paper gives no number, the authors' released
  configuration (``shared/notes/helixtrack-facts.md``, "released" below);
- ``release``: the released configuration's behaviour;
- ``default``: this package's defaults (no override).

Every field a preset sets belongs to a row of :data:`DEVIATIONS`, so presets
differ only in those named switches. Rows without fields have no switch
(``kernel`` says why); every preset runs our version of them.
docs/DEVIATIONS.md is generated from :data:`DEVIATIONS` plus measurements
(``benchmarks/bench_presets.py``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from helixtrack_ros.core.declared import read_table
from helixtrack_ros.core.params import TrackerParams

#: release: R = 1 / max(1e-3, kappa w_ring), i.e. sigma0^2 / max(w, eps) with
#: sigma0^2 = 1 / kappa and eps = 1e-3 / kappa (kappa = 22)
_RELEASE_R_FLOOR = 1e-3 / 22.0
#: release bounds 0.5 on p = C_band / C_core (the paper's ratio, bto_ratio 0)
_RELEASE_BTO_BOUND = 0.5
#: the BTO bounds: on p = C_band / (C_band + C_core) (bto_ratio 1) or on C_band / C_core
_BTO_BOUNDS = ('bto_p_in_min', 'bto_p_in_max', 'bto_p_out_min', 'bto_p_out_max')

_PAPER: dict[str, Any] = {
    # S3: q_jerk = 400 (element-wise search 50..600)
    'q_jerk': 400.0,
    # S3: gamma_persp = 1.0
    'gamma_persp': 1.0,
    # Sec. 3.5 / S1: one p_in, one p_out for the whole batch
    'bto_sectors': 1,
    # Sec. 3.5: p = C_band / (C_core + eps); l_BTO = softplus_tau(s) per bound (S1:
    # A += phi'' J J^T); lambda_BTO l_BTO and lambda_reg l_reg once per batch (Eq. loss)
    'bto_ratio': 0,
    'bto_hinge': 0,
    'bto_weight_n': 0,
    # Sec. 3.5: l_BTO = softplus(p_out - pbar_out) + softplus(p_in_low - p_in): a lower
    # bound on p_in and an upper bound on p_out only; values: released 0.5 / 0.5
    'bto_p_in_min': _RELEASE_BTO_BOUND,
    'bto_p_in_max': -1.0,
    'bto_p_out_min': -1.0,
    'bto_p_out_max': _RELEASE_BTO_BOUND,
    # Sec. 3.5 names "narrow radial bands" at 1 - Delta, 1, 1 + Delta without numbers:
    # released core sigma 0.06, offset 0.03, band sigma 0.02; the BTO softplus uses the
    # same tau as the band barriers (released 0.05); no pixel floor on the bands
    'bto_sigma_core': 0.06,
    'bto_delta': 0.03,
    'bto_sigma_band': 0.02,
    'bto_tau': 0.05,
    'bto_min_px': 0.0,
    # Sec. 3.5: q <- q + Gamma dq, no trust region (10 tip radii, the range's maximum,
    # never binds), plain damped GN on q = [s, psi, tx, ty, p31, p32] (Eq. 1)
    'gn_max_step': 10.0,
    'gn_psi_stiff': 0,
    'gn_log_scale': 0,
    # Sec. 3.5: pose updates only from the batched GN solve; no fast translation step,
    # so GN also moves tx, ty and no centroid step runs while the phase is acquired
    'pose_fast_us': 0,
    'pose_fast_rpm': 0.0,
    # Sec. 3.5: GN on every event of the mini-batch B
    'gn_target_events': 0,
    # Eq. 3: eps = wrap(phi_eff - B theta) for every event, whatever its polarity
    'ekf_polarity': 0,
    # Sec. 3.5: theta_pol(+) = c+, theta_pol(-) = c- are constants (released +-0.25)
    'pol_adapt': 0,
    # Sec. 3.5: a pose update when the helical phase advanced half a shaft turn, only
    'pose_timer_us': 0,
    # Sec. 3.4: eps of R unspecified; released R = 1 / max(1e-3, kappa w_ring)
    'r_floor': _RELEASE_R_FLOOR,
    # Sec. 3.4: one EKF update per event, its gates taken at the current phase
    'ekf_fold': 0,
    # Sec. 3.2: zeta "from circular statistics over a short prefix": scored at the
    # detector's rate, no search over the rate (released: both signs, no rate search);
    # the prefix and phi0 are not stated: the release's first sign_events in-ring events
    # and phi0 = 0 at the initial rate
    'sign_rpm_span': 0.0,
    'sign_prefix': 1,
    'sign_lock_phase': 0,
}

#: preset name -> TrackerParams overrides on top of the defaults
PRESETS: dict[str, dict[str, Any]] = {
    'paper': _PAPER,
    'release': {
        **_PAPER,
        # facts: a pose solve also when 100 ms of stream time passed
        'pose_timer_us': 100_000,
        # facts: R = 1 / max(1e-3, kappa w_ring), without w_vm
        'ekf_r_vm': 0,
        # facts: the pose parameters are [log s, psi, tx, ty, h31, h32]
        'gn_log_scale': 1,
    },
    'default': {},
}


#: preset paper where the paper gives no number: (fields, value, why)
PAPER_CHOICES: list[tuple[str, str, str]] = [
    ('bto_p_in_min, bto_p_out_max', '0.5', 'Sec. 3.5 names the bounds without values; '
     'released 0.5 on C_band / C_core'),
    ('bto_sigma_core, bto_delta, bto_sigma_band', '0.06, 0.03, 0.02',
     '"narrow radial bands" without widths; released values'),
    ('bto_tau', '0.05', 'one tau for the band barriers and BTO in Sec. 3.5; released 0.05'),
    ('bto_min_px', '0', 'no floor in the paper or the release'),
    ('gn_max_step', '10 (never binds)', "no trust region in the paper; the range's maximum"),
    ('r_floor', '1e-3 / 22', 'eps unspecified; released R = 1 / max(1e-3, kappa w_ring)'),
    ('sign_rpm_span', '0', '"circular statistics over a short prefix": no search over the '
     'rate (the release has none)'),
    ('pose_timer_us', '0', 'the half-turn trigger only (preset release: 100 ms)'),
    ('sign_prefix, sign_lock_phase', '1, 0', 'a "short prefix" without length and phi0 '
     'not stated: the release decides on the first sign_events (5000) in-ring events and '
     'starts at phi0 = 0'),
    ('ekf_r_vm', '1 (default)', "the paper's R with w_vm (preset release: 0, R without it)"),
    ('kappa, sigma0_rad2, sigma_ring, P0, Huber thresholds, gn_damping, gn_forget, '
     'gn_min_events, pol_c_on_rad / pol_c_off_rad', 'the defaults',
     'no number in the paper; the defaults are the released values'),
    ('lambda_reg', '0.01 (default)', 'named in Eq. loss without a value; the facts of the '
     'release list none'),
]


class Deviation(NamedTuple):
    """One difference between the paper and this package.

    ``fields`` are the TrackerParams fields that switch it (empty: no switch,
    ``kernel`` says why); ``preset`` is the preset whose values of them turn
    it off: ``paper``, or ``release`` for a rule where we follow the paper and
    the release does not.
    """

    name: str
    fields: tuple[str, ...]
    paper: str
    ours: str
    why: str
    kernel: str = ''
    preset: str = 'paper'


#: every deviation from the paper, switchable ones first (deviations.json; docs/DEVIATIONS.md)
DEVIATIONS: list[Deviation] = [
    Deviation(**{**row, 'fields': tuple(row['fields'])}) for row in read_table('deviations.json')]


def apply_preset(name: str, overrides: dict[str, Any] | None = None) -> TrackerParams:
    """TrackerParams of preset ``name`` with ``overrides`` (field -> value) on top.

    Raises
    ------
    ValueError
        Unknown preset or field, or a value out of range.
    """
    if name not in PRESETS:
        raise ValueError(f'unknown preset {name!r}: choose {", ".join(PRESETS)}')
    return TrackerParams.from_dict({**PRESETS[name], **(overrides or {})})


def switch_fields() -> set[str]:
    """Every TrackerParams field that switches a deviation."""
    return {f for d in DEVIATIONS for f in d.fields}


def mixed(base: str, source: str, names: tuple[str, ...]) -> dict[str, Any]:
    """Overrides of preset ``base`` with the fields ``names`` taken from preset ``source``.

    The BTO bounds hold on the ratio that ``bto_ratio`` selects; a bound that
    ends up under the other ratio than the one it was set for is converted
    (b / (1 + b) from C_band / C_core to C_band / (C_band + C_core), b / (1 - b)
    back), so that one deviation can be switched alone.
    """
    out = dict(PRESETS[base])
    src = apply_preset(source)
    for name in names:
        out[name] = getattr(src, name)
    ratio = apply_preset('default', out).bto_ratio
    for name in _BTO_BOUNDS:
        origin = src if name in names else apply_preset(base)
        b = getattr(origin, name)
        if origin.bto_ratio != ratio and b >= 0.0:
            out[name] = b / (1.0 + b) if ratio else b / (1.0 - b)
    return out


def deviation_off(d: Deviation) -> dict[str, Any]:
    """Overrides on the default that turn deviation ``d`` off (its preset's values)."""
    return mixed('default', d.preset, d.fields)


def deviation_on(d: Deviation) -> dict[str, Any]:
    """Overrides: ``d``'s preset with ``d`` on (the default's values of its fields)."""
    return mixed(d.preset, 'default', d.fields)
