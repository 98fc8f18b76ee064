# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Automatic rotor detection and initialisation from a short window of events.

HelixTrack needs a coarse initial pose and RPM per rotor (paper Sec. 3); this
module finds every spinning rotor in view from the first <= 100 ms of events and
returns its homography (centre, tip radius, in-plane rotation, perspective), blade
count, rotation direction and shaft RPM.

Pipeline (each step one pass of a numba kernel over the events, or none):

1. Egomotion: event-count images of 5 ms sub-windows (and of sliding ~30 / ~50 ms
   sums, for slow rotors whose blades fill only a sector of the disc in a few ms)
   are registered to the last one by FFT cross-correlation; the sharpest
   plausible result (or no motion) is kept and every event is moved to the
   window end with the interpolated image shift (rotors and background share
   the camera motion).
2. Periodicity: per 8 x 8 px block, an event-count time series at 0.2 ms bins;
   blocks whose temporal spectrum peaks in the blade-pass band (B * RPM / 60) far
   above its median level are periodic. Background edges swept by the camera are
   bursty, not periodic, and thin.
3. Discs: the blade-pass phase of a block is direction * B * azimuth around its
   rotor centre, so the phase gradient between neighbouring blocks points
   tangentially with magnitude B / r; each block votes for a centre at B / |grad|
   across the gradient, and the vote peaks seed the discs, separately even for
   touching neighbours (fallback seeds: maxima of the distance transform of the
   periodic mask). The tip edge of each disc is found along rays in the
   motion-compensated pixel-count image and fitted with an ellipse, from which
   the q-homography follows (small-tilt solution).
4. Rotation: events on each disc are warped to the rotor plane; per 0.1 ms bin the
   angular Fourier coefficients m = 1..B_max of their azimuths are accumulated.
   The rotating B-fold pattern of the blades gives B (strongest coherent
   harmonic), the direction (sign of its phase drift) and the shaft RPM (phase
   slope / B, quadratic phase fit evaluated at the window end). Static texture
   gives a constant coefficient and is removed; a candidate without a coherent,
   steadily advancing harmonic, or whose disc spectrum does not peak at B times
   that rate, is rejected.

This module holds the public API and runs the stages; each stage lives in its
own module: ``detection_motion`` (1), ``detection_periodicity`` (2),
``detection_centres``, ``detection_discs`` and ``detection_ellipse`` (3),
``detection_rotation`` (4), the settings and result types in ``detection_types``.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from helixtrack_ros.core.detection_centres import (
    _chamfer_distance,  # noqa: F401 (re-exported: tests use it from here)
    _disc_seeds,
    _vortex_seeds,
)
from helixtrack_ros.core.detection_discs import _disc_candidates
from helixtrack_ros.core.detection_motion import (
    _cell_counts,  # noqa: F401 (re-exported: tests use it from here)
    _register,
)
from helixtrack_ros.core.detection_periodicity import (
    _active_blocks,
    _block_lookup,
    _block_spectra,
    _compensate,
)
from helixtrack_ros.core.detection_rotation import (
    _angular_hist,  # noqa: F401 (re-exported: tests use it from here)
    _candidate_harmonics,
    _rotation,
)
from helixtrack_ros.core.detection_types import DetectedRotor, DetectionParams
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.fastmath import shaft_rpm

__all__ = ['DetectedRotor', 'DetectionParams', 'detect_rotors', 'warmup']


def _region_box(region, width: int, height: int) -> tuple[int, int, int, int]:
    if region is None:
        return 0, 0, width, height
    try:
        x0, y0, x1, y1 = (int(round(float(v))) for v in region)
    except (TypeError, ValueError):
        raise ValueError('region must be four numbers (x0, y0, x1, y1)') from None
    x0, y0 = max(x0, 0), max(y0, 0)
    x1, y1 = min(x1, width), min(y1, height)
    if x1 - x0 < 8 or y1 - y0 < 8:
        raise ValueError(f'region {region!r} is empty or smaller than 8 px inside the sensor')
    return x0, y0, x1, y1


def _check_events(events: EventArrays) -> EventArrays:
    if not isinstance(events, tuple) or tuple.__len__(events) != 4:
        raise TypeError('events must be an EventArrays (t_us, x, y, p)')
    t, x, y, p = (np.asarray(a) for a in tuple.__iter__(events))
    n = t.shape[0]
    if t.ndim != 1 or any(a.shape != (n,) for a in (x, y, p)):
        raise ValueError('event arrays must be 1-D and of equal length')
    t = np.ascontiguousarray(t, np.int64)
    return EventArrays(t, np.ascontiguousarray(x, np.uint16),
                       np.ascontiguousarray(y, np.uint16), np.ascontiguousarray(p, np.uint8))


def detect_rotors(events: EventArrays, width: int = 1280, height: int = 720,
                  params: DetectionParams | None = None,
                  region: tuple[int, int, int, int] | None = None) -> list[DetectedRotor]:
    """Find every spinning rotor in the first ``params.window_us`` of ``events``.

    Parameters
    ----------
    events : EventArrays
        Time-sorted events; only the span from the first event up to
        ``params.window_us`` later is used.
    width, height : int
        Sensor size [px] (<= 32767); events outside are ignored.
    params : DetectionParams or None
        Settings (None = defaults).
    region : tuple of int or None
        (x0, y0, x1, y1) [px]: use only events there and report only rotors whose
        centre lies inside (e.g. re-detection of a lost rotor near its last place;
        the region should hold the whole disc).

    Returns
    -------
    list of DetectedRotor
        Sorted by image position (top to bottom, then left to right); empty when
        nothing rotates (or the window is shorter than ``params.min_window_us``).

    Notes
    -----
    See the module docstring for the four stages (egomotion registration, block
    periodicity, disc fitting, angular harmonics). The state refers to the window
    end ``t_us``: the image motion is compensated to that instant and the RPM is the
    slope of a quadratic phase fit there.
    """
    prm = DetectionParams() if params is None else params
    if not isinstance(prm, DetectionParams):
        raise TypeError('params must be a DetectionParams')
    width, height = int(width), int(height)
    if not (0 < width <= 32767 and 0 < height <= 32767):
        raise ValueError('width and height must be in 1..32767')
    ev = _check_events(events)
    box = _region_box(region, width, height)
    span = _window(ev, prm)
    if span is None:
        return []
    i1, t0, t_end = span
    t_w, x_w, y_w = ev.t_us[:i1], ev.x[:i1], ev.y[:i1]
    blocks = _periodic_blocks(t_w, x_w, y_w, t0, t_end, box, width, height, prm)
    if blocks is None:
        return []
    blk = prm.block_px
    seeds = [sd[:3] for sd in _vortex_seeds(blocks.spec, blocks.power, blocks.band,
                                            blocks.row_of, blocks.periodic, blk, prm)]
    seeds += _disc_seeds(blocks.periodic, blk, prm)
    cands = _disc_candidates(seeds, blocks.pix, box, prm)
    if not cands:
        return []
    zs, cnt = _candidate_harmonics(cands, t_w, blocks.xc, blocks.yc, t0, t_end, box,
                                   (height, width), prm)
    return _rotors(cands, zs, cnt, blocks, t0, t_end, box, prm)


def _window(ev: EventArrays, prm: DetectionParams) -> tuple[int, int, int] | None:
    """(i1, t0, t_end): the analysed events ``[:i1]`` and span; None when too short."""
    if len(ev) < 100:
        return None
    t0 = int(ev.t_us[0])
    i1 = int(np.searchsorted(ev.t_us, t0 + prm.window_us, side='left'))
    if np.any(ev.t_us[1:i1] < ev.t_us[:i1 - 1]):
        raise ValueError('event times must be non-decreasing')
    t_end = t0 + prm.window_us if i1 < len(ev) else int(ev.t_us[i1 - 1]) + 1
    if t_end - t0 < prm.min_window_us:
        return None
    return i1, t0, t_end


class _Blocks(NamedTuple):
    """Motion-compensated events and the block spectra of stages 1 and 2."""

    row_of: np.ndarray    # (nby, nbx) row of each active block in spec / power, -1: inactive
    periodic: np.ndarray  # (nby, nbx) bool
    spec: np.ndarray      # (n_active, n_freq) complex block spectra
    power: np.ndarray     # (n_active, n_freq)
    freq: np.ndarray      # (n_freq,) [Hz]
    band: np.ndarray      # (n_freq,) bool, the blade-pass search band
    xc: np.ndarray        # compensated event pixels (-1: left the region)
    yc: np.ndarray
    pix: np.ndarray       # (height, width) compensated event counts


def _periodic_blocks(t_w, x_w, y_w, t0: int, t_end: int, box, width: int, height: int,
                     prm: DetectionParams) -> _Blocks | None:
    """Stages 1 and 2: egomotion, then the block periodicity of the moved events.

    None when no block is periodic.
    """
    # 1. egomotion
    (k0, kstep, sx, sy), cells = _register(t_w, x_w, y_w, t0, t_end, box, prm)
    # 2. block periodicity (events moved to the window end)
    blk = prm.block_px
    row_of = _active_blocks(cells, box, t0, t_end, prm)
    bx_of, by_of = _block_lookup(box, width, height, blk)
    n_bins = (t_end - t0) // prm.bin_us
    series = np.zeros((n_bins, int((row_of >= 0).sum())), np.float32)
    xc = np.empty(t_w.shape[0], np.int16)
    yc = np.empty(t_w.shape[0], np.int16)
    pix = np.zeros((height, width), np.int32)
    _compensate(t_w, x_w, y_w, k0, kstep, sx, sy, box[0], box[1], box[2], box[3], t0,
                prm.bin_us, n_bins, bx_of, by_of, row_of, xc, yc, pix, series)
    score, spec, power, freq, band = _block_spectra(series, row_of, prm)
    periodic = score >= prm.periodicity_min
    if not periodic.any():
        return None
    return _Blocks(row_of, periodic, spec, power, freq, band, xc, yc, pix)


def _rotors(cands: list, zs: np.ndarray, cnt: np.ndarray, blocks: _Blocks, t0: int,
            t_end: int, box, prm: DetectionParams) -> list[DetectedRotor]:
    """Stage 4: the candidates with a steadily rotating blade pattern, sorted by position.

    ``zs`` and ``cnt`` are the candidates' angular harmonics and event counts per
    time bin (:func:`_candidate_harmonics`).
    """
    blk = prm.block_px
    nby, nbx = blocks.row_of.shape
    by, bx = np.mgrid[0:nby, 0:nbx]
    bcx, bcy = box[0] + (bx + 0.5) * blk, box[1] + (by + 0.5) * blk
    out = []
    for ci, cd in enumerate(cands):
        rot = _rotation(zs[ci], cnt[ci], prm.angle_bin_us, t0, t_end, prm)
        if (rot is None or rot['coherence'] < prm.coherence_min
                or rot['consistency'] < prm.consistency_min):
            continue
        blades = rot['blades']
        rpm = shaft_rpm(rot['omega_end'], blades)
        if not prm.rpm_min <= rpm <= prm.rpm_max:
            continue
        if not _blade_pass_confirmed(cd, rot, bcx, bcy, blocks, prm):
            continue
        out.append(_detected_rotor(cd, rot, rpm, t_end))
    out.sort(key=lambda r: (r.center_px[1], r.center_px[0]))
    return out


def _blade_pass_confirmed(cd: dict, rot: dict, bcx: np.ndarray, bcy: np.ndarray,
                          blocks: _Blocks, prm: DetectionParams) -> bool:
    """True when the block spectrum of the disc peaks at the blade-pass frequency.

    ``bcx``, ``bcy`` are the block centres [px]; the frequency is B times the
    mean phase-slope rate of :func:`_rotation`.
    """
    row_of, power, freq, band = blocks.row_of, blocks.power, blocks.freq, blocks.band
    dz = np.stack([bcx - cd['c'][0], bcy - cd['c'][1]], axis=-1)
    rho2 = np.einsum('...i,ij,...j->...', dz, np.linalg.inv(cd['m']), dz)
    rows = row_of[(rho2 <= 0.8) & (row_of >= 0)]
    if rows.size == 0:
        return False
    p_disc = power[rows].sum(axis=0)
    f_bp = abs(rot['omega_mean']) / (2.0 * math.pi)
    near = band & (np.abs(freq - f_bp) <= max(prm.rate_tolerance * f_bp,
                                              1.5 * (freq[1] - freq[0])))
    med = float(np.median(p_disc[band]))
    if not near.any() or p_disc[near].max() < prm.periodicity_min * max(med, 1e-12):
        return False
    return True


def _detected_rotor(cd: dict, rot: dict, rpm: float, t_end: int) -> DetectedRotor:
    """The rotor state of a confirmed candidate at the window end (psi from the phase)."""
    blades = rot['blades']
    s, tx, ty, w1, w2 = cd['q']
    psi = math.remainder(rot['phase_end'] / blades, 2.0 * math.pi)
    cp, sp = math.cos(psi), math.sin(psi)
    persp = (w1 * cp + w2 * sp, -w1 * sp + w2 * cp)
    return DetectedRotor(center_px=(tx, ty), radius_px=s, psi_rad=psi,
                         perspective=persp, blades=blades,
                         direction=1 if rot['omega_end'] > 0 else -1,
                         rpm_shaft=rpm, score=rot['coherence'], t_us=int(t_end),
                         blade_pass_hz=rpm * blades / 60.0,
                         axes_px=(float(cd['axes'][0]), float(cd['axes'][1])))


def warmup() -> float:
    """Load (or compile) every detection kernel on a small synthetic rotor; seconds taken.

    The live node runs this before it subscribes: its first re-detection (on the
    detector thread) otherwise loaded them then, 0.4 s on this VM, while its rotors
    were lost and the packets waited for the interpreter.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    n = 20_000
    t_us = np.sort(rng.integers(0, 30_000, n)).astype(np.int64)
    # two blades at 8,000 RPM, radius 20 px, centred at (40, 40) of an 80 x 80 sensor
    azimuth = (2.0 * math.pi * 8000.0 / 60.0 * t_us * 1e-6 + math.pi * rng.integers(0, 2, n)
               + rng.normal(0.0, 0.05, n))
    radius = rng.uniform(3.0, 20.0, n)
    x = (40.0 + radius * np.cos(azimuth)).astype(np.uint16)
    y = (40.0 + radius * np.sin(azimuth)).astype(np.uint16)
    detect_rotors(EventArrays(t_us, x, y, rng.integers(0, 2, n).astype(np.uint8)), 80, 80)
    return time.perf_counter() - t0
