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
"""

from __future__ import annotations

from dataclasses import dataclass
import math
import warnings

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.homography import homography_from_paper_q
from helixtrack_ros.core.jit import kernel

_RANK_WARNING = getattr(getattr(np, 'exceptions', np), 'RankWarning', Warning)

__all__ = ['DetectedRotor', 'DetectionParams', 'detect_rotors']


# --------------------------------------------------------------------------- data
@dataclass(frozen=True)
class DetectionParams:
    """Settings of :func:`detect_rotors` (defaults suit the TQE-like simulator scenes).

    Attributes
    ----------
    window_us : int
        Longest analysed span from the first event [us].
    min_window_us : int
        Shortest usable span [us]; shorter input gives no detection.
    motion_step_us : int
        Sub-window length of the egomotion registration [us].
    motion_cell_px : int
        Cell size of the registration count images [px].
    motion_min_corr : float
        Minimum normalised correlation of a sub-window with the reference.
    motion_max_px_per_ms : float
        Largest plausible image speed of the scene [px/ms] (simulator level 5:
        <= 1.3, level 7: <= 5); faster registered jumps are rejected.
    block_px : int
        Block size of the periodicity map [px].
    bin_us : int
        Time bin of the block series [us].
    min_rate_hz_px : float
        Minimum mean event rate of a block [events per pixel per second].
    periodicity_min : float
        Minimum ratio of a block's in-band spectral peak to its in-band median.
    rpm_min, rpm_max : float
        Shaft RPM search range.
    blades_min, blades_max : int
        Blade count search range.
    radius_min_px, radius_max_px : float
        Tip radius search range [px].
    angle_bin_us : int
        Time bin of the angular harmonics [us]; B * omega * bin must stay below pi.
    ring_inner, ring_outer : float
        Annulus (tip radii) whose events enter the angular analysis.
    coherence_min : float
        Minimum coherence (0..1) of the rotating B-fold angular harmonic (rotors
        score 0.5-0.96 in the simulator, background clutter < 0.35).
    consistency_min : float
        Minimum fraction (0..1) of the B-fold harmonic explained by one smoothly
        advancing phase (rotors ~1, clutter mostly < 0.6).
    rate_tolerance : float
        Allowed relative mismatch between the block-spectrum blade-pass frequency
        and B times the phase-slope shaft rate.
    squash_min : float
        Below this relative axis difference the perspective is left at zero.
    vortex_votes_min : float
        Minimum (3 x 3 summed) vote count of a blade-phase vortex centre (a 14 px
        rotor gets ~50, a 50 px one ~200).
    max_candidates : int
        Largest number of disc candidates examined.
    """

    window_us: int = 100_000
    min_window_us: int = 20_000
    motion_step_us: int = 5_000
    motion_cell_px: int = 4
    motion_min_corr: float = 0.15
    motion_max_px_per_ms: float = 4.0
    block_px: int = 8
    bin_us: int = 200
    min_rate_hz_px: float = 20.0
    periodicity_min: float = 40.0
    rpm_min: float = 800.0
    rpm_max: float = 20_000.0
    blades_min: int = 1
    blades_max: int = 6
    radius_min_px: float = 12.0
    radius_max_px: float = 320.0
    angle_bin_us: int = 100
    ring_inner: float = 0.3
    ring_outer: float = 0.92
    coherence_min: float = 0.25
    consistency_min: float = 0.8
    rate_tolerance: float = 0.12
    squash_min: float = 0.02
    vortex_votes_min: float = 20.0
    max_candidates: int = 24

    def __post_init__(self) -> None:
        """Validate; raise ValueError naming the field."""
        ints = ('window_us', 'min_window_us', 'motion_step_us', 'motion_cell_px', 'block_px',
                'bin_us', 'blades_min', 'blades_max', 'angle_bin_us', 'max_candidates')
        for key in ints:
            v = getattr(self, key)
            if isinstance(v, bool) or int(v) != v or int(v) <= 0:
                raise ValueError(f'{key} must be a positive integer, got {v!r}')
            object.__setattr__(self, key, int(v))
        for key in ('motion_min_corr', 'motion_max_px_per_ms', 'min_rate_hz_px',
                    'periodicity_min', 'rpm_min', 'rpm_max', 'radius_min_px',
                    'radius_max_px', 'ring_inner', 'ring_outer', 'coherence_min',
                    'consistency_min', 'rate_tolerance', 'squash_min', 'vortex_votes_min'):
            v = float(getattr(self, key))
            if not math.isfinite(v) or v < 0.0:
                raise ValueError(f'{key} must be finite and >= 0, got {v!r}')
            object.__setattr__(self, key, v)
        if self.block_px % self.motion_cell_px:
            raise ValueError('block_px must be a multiple of motion_cell_px')
        if self.min_window_us > self.window_us:
            raise ValueError('min_window_us must not exceed window_us')
        if not 0.0 < self.rpm_min < self.rpm_max:
            raise ValueError('need 0 < rpm_min < rpm_max')
        if not 1 <= self.blades_min <= self.blades_max <= 16:
            raise ValueError('need 1 <= blades_min <= blades_max <= 16')
        if not 0.0 < self.radius_min_px < self.radius_max_px:
            raise ValueError('need 0 < radius_min_px < radius_max_px')
        if not 0.0 <= self.ring_inner < self.ring_outer <= 1.0:
            raise ValueError('need 0 <= ring_inner < ring_outer <= 1')
        if self.blades_max * self.rpm_max / 60.0 * self.bin_us * 1e-6 >= 0.5:
            raise ValueError('bin_us too long for blades_max * rpm_max (blade-pass '
                             'frequency above Nyquist)')
        if (self.blades_max * self.rpm_max / 60.0 * 2.0 * math.pi * self.angle_bin_us * 1e-6
                >= math.pi):
            raise ValueError('angle_bin_us too long for blades_max * rpm_max')


@dataclass(frozen=True)
class DetectedRotor:
    """One detected rotor: coarse initial state for the tracker.

    Attributes
    ----------
    center_px : tuple of float
        Rotor centre (tx, ty) in the image at ``t_us`` [px].
    radius_px : float
        Homography scale s, the tip radius [px].
    psi_rad : float
        In-plane rotation psi [rad]; the circle alone leaves it free, it is chosen so
        that a blade lies on the rotor-plane x axis at ``t_us``.
    perspective : tuple of float
        (p31, p32) of the homography (small-tilt solution; zero for a round disc).
    blades : int
        Blade count B.
    direction : int
        +1 when the rotor-plane blade angle increases with time, else -1.
    rpm_shaft : float
        Shaft RPM at ``t_us``.
    score : float
        Coherence (0..1) of the rotating B-fold angular pattern: the confidence.
    t_us : int
        Time the estimate refers to (end of the analysed window) [us].
    blade_pass_hz : float
        Blade-pass frequency B * RPM / 60 at ``t_us`` [Hz].
    axes_px : tuple of float
        Semi-axes (major, minor) of the fitted tip ellipse [px].
    """

    center_px: tuple[float, float]
    radius_px: float
    psi_rad: float
    perspective: tuple[float, float]
    blades: int
    direction: int
    rpm_shaft: float
    score: float
    t_us: int
    blade_pass_hz: float = 0.0
    axes_px: tuple[float, float] = (0.0, 0.0)

    def homography(self) -> np.ndarray:
        """The 3x3 rotor-plane -> image homography of the paper's Eq. (1)."""
        return homography_from_paper_q(self.radius_px, self.psi_rad, self.center_px[0],
                                       self.center_px[1], self.perspective[0],
                                       self.perspective[1])

    def to_params_dict(self, name: str) -> dict:
        """Rotor entry in the parameter-file layout (as ``Scene.initial_rotor_params``).

        Parameters
        ----------
        name : str
            Rotor name.

        Returns
        -------
        dict
            Keys name, center_px, radius_px, rpm, blades, direction, psi_rad, perspective.
        """
        return {'name': str(name), 'center_px': [float(self.center_px[0]),
                                                 float(self.center_px[1])],
                'radius_px': float(self.radius_px), 'rpm': float(self.rpm_shaft),
                'blades': int(self.blades), 'direction': int(self.direction),
                'psi_rad': float(self.psi_rad),
                'perspective': [float(self.perspective[0]), float(self.perspective[1])]}


# ------------------------------------------------------------------ numba kernels
@kernel
def _cell_counts(t_us, x, y, t0_us, step_us, n_sub, cell_of_x, cell_of_y, out):
    """Event counts per (sub-window, cell row, cell column).

    Sub-window k spans [t0 + k step, t0 + (k + 1) step); ``cell_of_x[x]`` and
    ``cell_of_y[y]`` give the cell column / row of a pixel (-1 = outside the
    region). Events must be time-sorted.
    """
    k = 0
    edge = t0_us + step_us
    nx = cell_of_x.shape[0]
    ny = cell_of_y.shape[0]
    for i in range(t_us.shape[0]):
        t = t_us[i]
        if t < t0_us:
            continue
        while t >= edge:
            k += 1
            edge += step_us
        if k >= n_sub:
            break
        xi = x[i]
        yi = y[i]
        if xi >= nx or yi >= ny:
            continue
        cx = cell_of_x[xi]
        cy = cell_of_y[yi]
        if cx >= 0 and cy >= 0:
            out[k, cy, cx] += 1.0


@kernel
def _compensate(t_us, x, y, knot0_us, knot_step_us, sx, sy, x0, y0, x1, y1, t0_us, bin_us,
                n_bins, block_of_x, block_of_y, row_of, xc, yc, pix, series):
    """Move events to the window end, round to pixels, count them, fill block series.

    The shift at time t is the linear interpolation (extrapolated beyond the ends)
    of the knots ``(sx, sy)`` at ``knot0 + k knot_step``. Writes the compensated
    pixel of event i to ``xc[i], yc[i]`` (-1 when it leaves the region [x0, x1) x
    [y0, y1)), counts it in ``pix[y, x]`` and, when its block has a row
    ``row_of[block_of_y[y], block_of_x[x]] >= 0``, in ``series[bin, row]`` with bin
    ``(t - t0) // bin_us`` (bin-major: consecutive events write to one short row).
    Events must be time-sorted and not before t0.
    """
    n_knots = sx.shape[0]
    inv_step = 1.0 / knot_step_us if knot_step_us > 0.0 else 0.0
    k = 0
    b = 0
    edge = t0_us + bin_us
    for i in range(t_us.shape[0]):
        t = t_us[i]
        f = (t - knot0_us) * inv_step
        while k < n_knots - 2 and f >= k + 1:
            k += 1
        w = f - k
        xi = int(math.floor(x[i] + sx[k] + w * (sx[k + 1] - sx[k]) + 0.5))
        yi = int(math.floor(y[i] + sy[k] + w * (sy[k + 1] - sy[k]) + 0.5))
        if not (x0 <= xi < x1 and y0 <= yi < y1):
            xc[i] = -1
            yc[i] = -1
            continue
        xc[i] = xi
        yc[i] = yi
        pix[yi, xi] += 1
        while t >= edge:
            b += 1
            edge += bin_us
        if b < n_bins:
            r = row_of[block_of_y[yi], block_of_x[xi]]
            if r >= 0:
                series[b, r] += 1.0


@kernel
def _angular_hist(t_us, xc, yc, t0_us, bin_us, n_bins, pix_code, out):
    """Event counts per (time bin, disc-sector code); ``pix_code[y, x] < 0`` = no disc.

    The code of a pixel is ``candidate * n_sectors + sector`` of its rotor-plane
    azimuth. Events must be time-sorted and not before t0.
    """
    b = 0
    edge = t0_us + bin_us
    for j in range(xc.shape[0]):
        if xc[j] < 0:
            continue
        code = pix_code[yc[j], xc[j]]
        if code < 0:
            continue
        t = t_us[j]
        while t >= edge:
            b += 1
            edge += bin_us
        if b >= n_bins:
            break
        out[b, code] += 1.0


@kernel
def _chamfer_distance(mask, out):
    """Chamfer (1, sqrt 2) distance of every masked cell to the nearest unmasked cell.

    Two raster passes (forward, backward) over a grid whose border is unmasked;
    within 8 % of the Euclidean distance.
    """
    h, w = mask.shape
    big = 1e30
    d2 = math.sqrt(2.0)
    for i in range(h):
        for j in range(w):
            out[i, j] = big if mask[i, j] else 0.0
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            if mask[i, j]:
                v = out[i, j]
                v = min(v, out[i - 1, j - 1] + d2, out[i - 1, j] + 1.0,
                        out[i - 1, j + 1] + d2, out[i, j - 1] + 1.0)
                out[i, j] = v
    for i in range(h - 2, 0, -1):
        for j in range(w - 2, 0, -1):
            if mask[i, j]:
                v = out[i, j]
                v = min(v, out[i + 1, j + 1] + d2, out[i + 1, j] + 1.0,
                        out[i + 1, j - 1] + d2, out[i, j + 1] + 1.0)
                out[i, j] = v


# ------------------------------------------------------------------ helpers
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


_MOTION_SPANS_US = (30_000, 50_000)  # longer registration windows for slow rotors


def _register(t_w, x_w, y_w, t0: int, t_end: int, box, prm: DetectionParams):
    """Knot times and the per-knot image shift that moves an event to the window end.

    Returns ((knot0_us, knot_step_us, sx, sy), cells): the shift at time t is the
    linear interpolation (extrapolation beyond the ends) of the knots ``knot0 + k
    step``; ``cells`` holds the uncompensated event counts per cell of the region.

    Notes
    -----
    Count images (square-root compressed, 4 px cells) of short sub-windows
    (``motion_step_us``) are cross-correlated with the last one (FFT, parabolic
    sub-cell peak). A slow rotor fills only a sector of its disc in a few ms and its
    blades then dominate the correlation, so the registration is repeated on
    sliding sums spanning ~30 and ~50 ms. Registrations with implausibly fast jumps
    are dropped; among the rest and 'no motion' the one whose
    motion-compensated sum image is sharpest (largest energy of the sum of the
    shifted sub-window images, i.e. of all their pairwise correlations) is kept.
    """
    step = prm.motion_step_us
    n_sub = max((t_end - t0) // step, 1)
    zero = (float(t0), 1.0, np.zeros(2), np.zeros(2))
    x0, y0, x1, y1 = box
    cell = prm.motion_cell_px
    ncx, ncy = -(-(x1 - x0) // cell), -(-(y1 - y0) // cell)
    sub0 = t_end - n_sub * step
    raw = np.zeros((n_sub, ncy, ncx), np.float32)
    cell_x = np.full(65536, -1, np.int32)
    cell_y = np.full(65536, -1, np.int32)
    cell_x[x0:x1] = (np.arange(x0, x1) - x0) // cell
    cell_y[y0:y1] = (np.arange(y0, y1) - y0) // cell
    _cell_counts(t_w, x_w, y_w, sub0, step, n_sub, cell_x[:x1], cell_y[:y1], raw)
    cells = raw.sum(axis=0)
    if n_sub < 3 or ncx < 8 or ncy < 8:
        return zero, cells
    tc = sub0 + step * (np.arange(n_sub) + 0.5)
    base = np.sqrt(raw)
    base -= base.mean(axis=(1, 2), keepdims=True)
    base_spec = np.fft.rfft2(base)
    best = zero
    best_sharp = _sharpness(base_spec, np.zeros(n_sub), np.zeros(n_sub))
    spans = sorted({1, *(max(1, round(v / step)) for v in _MOTION_SPANS_US)})
    csum = np.cumsum(np.concatenate([np.zeros((1, ncy, ncx), np.float32), raw]), axis=0)
    for span in spans:
        # sliding sums, the last ending at the window end; long sums need fewer knots
        stride = max(1, span // 2)
        starts = np.arange(n_sub - span, -1, -stride)[::-1]
        if starts.size < 2:
            continue
        img = np.sqrt(csum[starts + span] - csum[starts])
        img -= img.mean(axis=(1, 2), keepdims=True)
        shifts = _correlate_to_last(img, prm.motion_min_corr)
        if shifts is None:
            continue
        shifts *= cell
        dt_k = step * stride
        # camera motion is smooth: a jump beyond the speed limit means the blades,
        # not the scene, were registered
        jump = np.hypot(*np.diff(shifts, axis=0).T)
        if np.any(jump > prm.motion_max_px_per_ms * dt_k * 1e-3 + 2.0 * cell):
            continue
        tk = sub0 + step * (starts + 0.5 * span)
        slope = (shifts[-1] - shifts[-2]) / dt_k
        s_end = shifts[-1] + slope * (t_end - tk[-1])
        comp = s_end[None, :] - shifts
        # shift of each sub-window (linear, extrapolated at the ends)
        f = np.clip(np.floor((tc - tk[0]) / dt_k), 0, tk.size - 2).astype(np.int64)
        w = (tc - tk[f]) / dt_k
        dx = comp[f, 0] + w * (comp[f + 1, 0] - comp[f, 0])
        dy = comp[f, 1] + w * (comp[f + 1, 1] - comp[f, 1])
        sharp = _sharpness(base_spec, dx / cell, dy / cell)
        if sharp > best_sharp:
            best_sharp = sharp
            best = (float(tk[0]), float(dt_k), comp[:, 0].copy(), comp[:, 1].copy())
    return best, cells


def _correlate_to_last(img: np.ndarray, min_corr: float) -> np.ndarray | None:
    """(n, 2) shift [cells] of each image's content relative to the last image."""
    n_k, ncy, ncx = img.shape
    norms = np.sqrt(np.einsum('kij,kij->k', img, img))
    if norms[-1] <= 0.0:
        return None
    spec = np.fft.rfft2(img)
    ref = np.conj(spec[-1])
    shifts = np.full((n_k, 2), np.nan)
    for k in range(n_k):
        if norms[k] <= 0.0:
            continue
        corr = np.fft.irfft2(spec[k] * ref, s=(ncy, ncx))
        iy, ix = np.unravel_index(int(np.argmax(corr)), corr.shape)
        if corr[iy, ix] / (norms[k] * norms[-1]) < min_corr:
            continue
        dy = iy + _parabola_peak(corr[iy - 1, ix], corr[iy, ix], corr[(iy + 1) % ncy, ix])
        dx = ix + _parabola_peak(corr[iy, ix - 1], corr[iy, ix], corr[iy, (ix + 1) % ncx])
        shifts[k] = (dx - ncx if dx > ncx / 2 else dx, dy - ncy if dy > ncy / 2 else dy)
    ok = np.isfinite(shifts[:, 0])
    if ok.sum() < 2 or not ok[-1]:
        return None
    idx = np.arange(n_k)
    for d in range(2):
        shifts[~ok, d] = np.interp(idx[~ok], idx[ok], shifts[ok, d])
    return shifts


def _sharpness(spec: np.ndarray, dx: np.ndarray, dy: np.ndarray) -> float:
    """Energy of the sum of images k moved by (dx[k], dy[k]) cells (Fourier shift).

    ``spec`` holds the rfft2 of the images; shifting by a phase ramp is exact for
    fractional shifts, so no interpolation blur favours integer shifts.
    """
    n_k, ncy, nfx = spec.shape
    ncx = (nfx - 1) * 2
    ky = np.fft.fftfreq(ncy)
    kx = np.fft.rfftfreq(ncx)
    acc = np.zeros((ncy, nfx), np.complex128)
    for k in range(n_k):
        ramp_y = np.exp(-2j * math.pi * ky * dy[k])
        ramp_x = np.exp(-2j * math.pi * kx * dx[k])
        acc += spec[k] * ramp_y[:, None] * ramp_x[None, :]
    w = np.full(nfx, 2.0)
    w[0] = 1.0
    w[-1] = 1.0
    return float(np.sum((acc.real ** 2 + acc.imag ** 2) * w[None, :]))


def _parabola_peak(cm: float, c0: float, cp: float) -> float:
    d = cm - 2.0 * c0 + cp
    if d >= 0.0:
        return 0.0
    return float(np.clip(0.5 * (cm - cp) / d, -0.5, 0.5))


def _active_blocks(cells: np.ndarray, box, t0: int, t_end: int, prm: DetectionParams):
    """Row index per region block (-1 = too few events).

    Activity is judged on the uncompensated counts: motion only spreads a disc's
    events over more blocks, so no compensated disc block falls below the
    threshold.
    """
    blk, cell = prm.block_px, prm.motion_cell_px
    x0, y0, x1, y1 = box
    nbx, nby = -(-(x1 - x0) // blk), -(-(y1 - y0) // blk)
    f = blk // cell
    padded = np.zeros((nby * f, nbx * f), np.float32)
    hh, ww = min(cells.shape[0], nby * f), min(cells.shape[1], nbx * f)
    padded[:hh, :ww] = cells[:hh, :ww]
    counts = padded.reshape(nby, f, nbx, f).sum(axis=(1, 3))
    active = counts >= prm.min_rate_hz_px * (t_end - t0) * 1e-6 * blk * blk
    row_of = np.full((nby, nbx), -1, np.int32)
    row_of[active] = np.arange(int(active.sum()), dtype=np.int32)
    return row_of


def _block_lookup(box, width: int, height: int, blk: int):
    """Block column of every pixel column and block row of every pixel row (region)."""
    x0, y0, x1, y1 = box
    bx = np.full(width, 0, np.int32)
    by = np.full(height, 0, np.int32)
    bx[x0:x1] = (np.arange(x0, x1) - x0) // blk
    by[y0:y1] = (np.arange(y0, y1) - y0) // blk
    return bx, by


def _block_spectra(series: np.ndarray, row_of: np.ndarray, prm: DetectionParams):
    """Periodicity score per block, power spectra of the active blocks, frequency axis.

    ``series`` is (n_bins, n_active), bin-major.

    Returns (score (nby, nbx), complex spectra and power (n_active, n_freq), freq [Hz],
    in-band mask).
    The score is the in-band spectral peak over the in-band median (Hann window,
    mean removed): ~5 for aperiodic counts, hundreds for a blade-swept block.
    """
    n_bins = series.shape[0]
    freq = np.fft.rfftfreq(n_bins, prm.bin_us * 1e-6)
    f_lo = prm.rpm_min * prm.blades_min / 60.0
    f_hi = min(prm.rpm_max * prm.blades_max / 60.0, 0.45 / (prm.bin_us * 1e-6))
    band = (freq >= f_lo) & (freq <= f_hi)
    score = np.zeros(row_of.shape)
    if series.shape[1] == 0 or band.sum() < 3:
        empty = np.zeros((0, freq.size), np.complex64)
        return score, empty, np.zeros((0, freq.size), np.float32), freq, band
    series = series.T - series.mean(axis=0)[:, None]
    series *= np.hanning(n_bins).astype(np.float32)
    spec = np.fft.rfft(series, axis=1)
    power = (spec.real ** 2 + spec.imag ** 2).astype(np.float32)
    pb = power[:, band]
    med = np.median(pb, axis=1)
    score[row_of >= 0] = pb.max(axis=1) / np.maximum(med, 1e-12)
    return score, spec, power, freq, band


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    """Mask with every hole (background not connected to the border) filled."""
    free = ~mask
    reach = np.zeros_like(mask)
    reach[0, :] = free[0, :]
    reach[-1, :] = free[-1, :]
    reach[:, 0] |= free[:, 0]
    reach[:, -1] |= free[:, -1]
    while True:
        grown = reach.copy()
        grown[1:, :] |= reach[:-1, :]
        grown[:-1, :] |= reach[1:, :]
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        grown &= free
        if np.array_equal(grown, reach):
            return ~reach
        reach = grown


def _disc_seeds(mask: np.ndarray, blk: int, prm: DetectionParams) -> list:
    """Disc seeds (cx, cy, r) [px] at the maxima of the distance transform of ``mask``.

    The distance of a masked block to the nearest unmasked block (or the grid edge)
    peaks at disc centres; touching discs are joined only by narrow necks whose
    distance is lower, so each disc keeps its own maximum.
    """
    filled = _fill_holes(mask)
    iy, ix = np.nonzero(filled)
    if iy.size == 0:
        return []
    dpad = np.zeros((filled.shape[0] + 2, filled.shape[1] + 2))
    _chamfer_distance(np.pad(filled, 1).astype(np.uint8), dpad)
    dist = dpad[iy + 1, ix + 1]
    is_max = np.ones(iy.size, bool)
    for oy in (-1, 0, 1):
        for ox in (-1, 0, 1):
            if oy or ox:
                is_max &= dist >= dpad[iy + 1 + oy, ix + 1 + ox]
    # a disc of the smallest radius is >= 3 blocks wide; thin edges and lone blocks
    # (distance 1) never seed
    r_min = max(0.8 * prm.radius_min_px / blk, 1.5)
    cand = np.nonzero(is_max & (dist >= r_min))[0]
    cand = cand[np.argsort(-dist[cand], kind='stable')]
    seeds: list = []
    for c in cand:
        cy, cx, r = float(iy[c]), float(ix[c]), float(dist[c])
        if any(math.hypot(cx - sx, cy - sy) < max(sr, r) for sx, sy, sr in seeds):
            continue
        seeds.append((cx, cy, r))
        if len(seeds) >= prm.max_candidates:
            break
    return [((sx + 0.5) * blk, (sy + 0.5) * blk, sr * blk) for sx, sy, sr in seeds]


def _vortex_seeds(spec: np.ndarray, power: np.ndarray, band: np.ndarray,
                  row_of: np.ndarray, periodic: np.ndarray, blk: int,
                  prm: DetectionParams) -> list:
    """Disc seeds (cx, cy, r) [px, region frame] where blade-phase vortex lines meet.

    Notes
    -----
    The blade-pass component of a block's event series has the phase
    direction * B * azimuth (+ const) around its rotor centre: its spatial gradient
    (from the neighbours' spectra at the block's own peak frequency) is tangential
    with magnitude B / r. Each periodic block therefore votes for the centre at
    distance B / |grad| perpendicular to the gradient, for every B of the search
    range and both rotation senses; only the true B and sense converge. Touching
    discs keep separate vote peaks (their blocks point at their own centres),
    unlike the distance transform of a merged mask. The radius seed is from the
    distances of the blocks that voted for the peak (90th percentile ~ 0.95 R).
    """
    nby, nbx = row_of.shape
    by, bx = np.nonzero(periodic)
    if by.size < 4:
        return []
    pk = np.argmax(np.where(band[None, :], power, 0.0), axis=1)
    rows = row_of[by, bx]
    k = pk[rows]
    xb = np.conj(spec[rows, k])

    def dphase(dy: int, dx: int):
        ny, nx = by + dy, bx + dx
        ok = (ny >= 0) & (ny < nby) & (nx >= 0) & (nx < nbx)
        ok[ok] = periodic[ny[ok], nx[ok]]
        d = np.zeros(by.size)
        d[ok] = np.angle(spec[row_of[ny[ok], nx[ok]], k[ok]] * xb[ok])
        return ok, d

    def central(ok_p, d_p, ok_m, d_m):
        g = np.full(by.size, np.nan)
        g[ok_m] = -d_m[ok_m]
        g[ok_p] = d_p[ok_p]
        both = ok_p & ok_m
        g[both] = 0.5 * (d_p[both] - d_m[both])
        return g

    gx = central(*dphase(0, 1), *dphase(0, -1))
    gy = central(*dphase(1, 0), *dphase(-1, 0))
    gn = np.hypot(gx, gy)
    ok = np.isfinite(gn) & (gn > 0.02) & (gn < 2.5)
    if ok.sum() < 4:
        return []
    px, py, gx, gy, gn = bx[ok].astype(float), by[ok].astype(float), gx[ok], gy[ok], gn[ok]
    ux, uy = -gy / gn, gx / gn
    acc = np.zeros((nby + 2, nbx + 2))
    votes = []
    r_lo, r_hi = 0.5 * prm.radius_min_px / blk, prm.radius_max_px / blk
    for b in range(prm.blades_min, prm.blades_max + 1):
        r = b / gn
        use = (r >= r_lo) & (r <= r_hi)
        for sgn in (1.0, -1.0):
            vx = px[use] + sgn * r[use] * ux[use]
            vy = py[use] + sgn * r[use] * uy[use]
            votes.append((vx, vy, np.nonzero(use)[0]))
            inside = (vx > -1) & (vx < nbx) & (vy > -1) & (vy < nby)
            vx, vy = vx[inside] + 1.0, vy[inside] + 1.0
            ix, iy = np.floor(vx).astype(np.int64), np.floor(vy).astype(np.int64)
            fx, fy = vx - ix, vy - iy
            for oy, wy in ((0, 1.0 - fy), (1, fy)):
                for ox, wx in ((0, 1.0 - fx), (1, fx)):
                    np.add.at(acc, (iy + oy, ix + ox), wx * wy)
    acc = acc[1:-1, 1:-1]
    sm = np.zeros_like(acc)
    pad = np.pad(acc, 1)
    for oy in range(3):
        for ox in range(3):
            sm += pad[oy:oy + nby, ox:ox + nbx]
    pad = np.pad(sm, 2)
    is_max = np.ones(sm.shape, bool)
    for oy in range(5):
        for ox in range(5):
            if oy != 2 or ox != 2:
                is_max &= sm >= pad[oy:oy + nby, ox:ox + nbx]
    cy, cx = np.nonzero(is_max & (sm >= prm.vortex_votes_min))
    order = np.argsort(-sm[cy, cx], kind='stable')
    seeds = []
    for i in order[:prm.max_candidates]:
        x0, y0 = float(cx[i]), float(cy[i])
        d_vote = [np.hypot(vx - x0, vy - y0) for vx, vy, _ in votes]
        voters = np.unique(np.concatenate([idx[d < 1.5] for d, (_, _, idx) in
                                           zip(d_vote, votes)]))
        if voters.size < 3:
            continue
        dist = np.hypot(px[voters] - x0, py[voters] - y0)
        r0 = (float(np.percentile(dist, 90)) / 0.95 + 0.5) * blk
        seeds.append(((x0 + 0.5) * blk, (y0 + 0.5) * blk, r0, float(sm[cy[i], cx[i]])))
    return seeds


def _box3(img: np.ndarray) -> np.ndarray:
    """3 x 3 box mean (edges replicated)."""
    p = np.pad(img.astype(np.float32), 1, mode='edge')
    h, w = img.shape
    out = np.zeros((h, w), np.float32)
    for oy in range(3):
        for ox in range(3):
            out += p[oy:oy + h, ox:ox + w]
    return out / 9.0


def _tip_points(smooth: np.ndarray, box, cx: float, cy: float, r0: float,
                n_rays: int = 72) -> tuple[np.ndarray, np.ndarray]:
    """Tip-edge points: where the event count falls below half of the disc level.

    Along each ray from (cx, cy), the disc level is the median of the counts
    between 0.3 r0 and 0.9 r0 (thin background edges crossing the disc, which can
    outshine a slow rotor under strong egomotion, do not move it); the edge is the
    first half-level crossing
    (two samples in a row below) beyond the level's position, linearly
    interpolated. Rays that leave the region first give no point.
    """
    x0, y0, x1, y1 = box
    step = 0.5
    radii = np.arange(0.3 * r0, 1.7 * r0 + step, step)
    ang = np.linspace(0.0, 2.0 * math.pi, n_rays, endpoint=False)
    ca, sa = np.cos(ang), np.sin(ang)
    px = cx + ca[:, None] * radii[None, :]
    py = cy + sa[:, None] * radii[None, :]
    xi = np.floor(px + 0.5).astype(np.int64)
    yi = np.floor(py + 0.5).astype(np.int64)
    inside = (xi >= x0) & (xi < x1) & (yi >= y0) & (yi < y1)
    prof = np.full(xi.shape, np.nan, np.float32)
    prof[inside] = smooth[yi[inside], xi[inside]]
    inner = radii <= 0.9 * r0
    ok = np.all(np.isfinite(prof[:, inner]), axis=1)
    prof, ca, sa = prof[ok], ca[ok], sa[ok]
    if prof.shape[0] == 0:
        return np.empty(0), np.empty(0)
    seg = prof[:, inner]
    level = np.median(seg, axis=1)
    start = np.argmax(seg >= level[:, None], axis=1)
    half = 0.5 * level[:, None]
    finite = np.isfinite(prof)
    below = finite & (prof < half)
    run = (below[:, :-1] & below[:, 1:]) | ~finite[:, :-1]
    run &= np.arange(run.shape[1])[None, :] >= start[:, None]
    j = np.argmax(run, axis=1)
    rows = np.arange(prof.shape[0])
    good = run[rows, j] & finite[rows, j] & (j > 0) & (level > 0.0)
    rows, j = rows[good], j[good]
    a = prof[rows, j - 1].astype(np.float64)
    b = prof[rows, j].astype(np.float64)
    frac = np.clip((a - half[rows, 0]) / np.maximum(a - b, 1e-9), 0.0, 1.0)
    r = radii[j - 1] + step * frac
    return cx + ca[rows] * r, cy + sa[rows] * r


def _fit_conic(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Direct least-squares ellipse fit (constraint 4ac - b^2 = 1, stable 3x3 form).

    Returns conic coefficients (a, b, c, d, e, f) of a x^2 + b xy + c y^2 + d x + e y
    + f = 0 in the original coordinates, or None.
    """
    if x.size < 6:
        return None
    mx, my = float(x.mean()), float(y.mean())
    sc = float(np.sqrt(np.mean((x - mx) ** 2 + (y - my) ** 2)))
    if not sc > 0.0:
        return None
    u, v = (x - mx) / sc, (y - my) / sc
    d1 = np.column_stack([u * u, u * v, v * v])
    d2 = np.column_stack([u, v, np.ones_like(u)])
    s1, s2, s3 = d1.T @ d1, d1.T @ d2, d2.T @ d2
    try:
        tmat = -np.linalg.solve(s3, s2.T)
    except np.linalg.LinAlgError:
        return None
    m = s1 + s2 @ tmat
    m = np.vstack([m[2] / 2.0, -m[1], m[0] / 2.0])
    vals, vecs = np.linalg.eig(m)
    vecs = np.real(vecs)
    cond = 4.0 * vecs[0] * vecs[2] - vecs[1] ** 2
    good = np.nonzero(cond > 0)[0]
    if good.size == 0:
        return None
    a1 = vecs[:, good[0]]
    a, b, c = a1
    d, e, f = tmat @ a1
    # back to pixel coordinates: u = (x - mx) / sc
    A, B, C = a / sc ** 2, b / sc ** 2, c / sc ** 2
    D = d / sc - 2.0 * A * mx - B * my
    E = e / sc - 2.0 * C * my - B * mx
    F = f + A * mx * mx + B * mx * my + C * my * my - d * mx / sc - e * my / sc
    return np.array([A, B, C, D, E, F])


def _conic_ellipse(coef: np.ndarray):
    """Centre (2,), shape matrix M ((z-c)^T M^-1 (z-c) = 1) and semi-axes of a conic."""
    A, B, C, D, E, F = coef
    q = np.array([[A, 0.5 * B], [0.5 * B, C]])
    try:
        c = np.linalg.solve(2.0 * q, -np.array([D, E]))
    except np.linalg.LinAlgError:
        return None
    fc = A * c[0] ** 2 + B * c[0] * c[1] + C * c[1] ** 2 + D * c[0] + E * c[1] + F
    if fc == 0.0:
        return None
    minv = q / (-fc)
    vals = np.linalg.eigvalsh(minv)
    if not np.all(vals > 0):
        return None
    m = np.linalg.inv(minv)
    axes = 1.0 / np.sqrt(vals)          # ascending eigenvalues: major first
    return c, m, (float(axes[0]), float(axes[1]))


def _fit_tip_ellipse(smooth: np.ndarray, box, cx: float, cy: float, r0: float):
    """Robust ellipse through the tip edge around a seed: two ray passes, outliers out."""
    best = None
    for _ in range(2):
        px, py = _tip_points(smooth, box, cx, cy, r0)
        if px.size < 24:
            return None
        keep = np.ones(px.size, bool)
        fit = None
        for _ in range(3):
            coef = _fit_conic(px[keep], py[keep])
            if coef is None:
                return None
            fit = _conic_ellipse(coef)
            if fit is None:
                return None
            c, m, axes = fit
            dz = np.column_stack([px - c[0], py - c[1]])
            rho = np.sqrt(np.einsum('ni,ij,nj->n', dz, np.linalg.inv(m), dz))
            res = (rho - 1.0) * math.sqrt(axes[0] * axes[1])
            mad = float(np.median(np.abs(res[keep] - np.median(res[keep]))))
            new = np.abs(res) <= max(3.0 * 1.4826 * mad, 1.5)
            if new.sum() < 20 or np.array_equal(new, keep):
                keep = new if new.sum() >= 20 else keep
                break
            keep = new
        c, m, axes = fit
        best = (c, m, axes, int(keep.sum()), px.size)
        cx, cy, r0 = float(c[0]), float(c[1]), math.sqrt(axes[0] * axes[1])
    return best


def _q_from_ellipse(c: np.ndarray, m: np.ndarray, axes, squash_min: float):
    """Small-tilt q-homography (psi = 0) whose unit circle maps onto the ellipse.

    Returns (s, tx, ty, w1, w2) with H = [[s, 0, tx], [0, s, ty], [w1, w2, 1]]; for
    another psi the perspective becomes R(psi)^T w.

    Notes
    -----
    To first order the image of the unit circle is the ellipse of the Jacobian
    J = s I - t w^T at the centre, so the tilt shows only through the squash along
    t. Starting from the round solution (w = 0, s = major semi-axis, t = ellipse
    centre), Gauss-Newton on the back-warped radii |H^-1 z| - 1 of points z on
    the ellipse converges to the solution nearest to no tilt (the other sign
    would flip the disc). A disc whose axes differ by less than ``squash_min`` is
    taken as round.
    """
    a, b = axes
    if (a - b) / a < squash_min:
        return 0.5 * (a + b), float(c[0]), float(c[1]), 0.0, 0.0
    vals, vecs = np.linalg.eigh(m)
    th = np.linspace(0.0, 2.0 * math.pi, 48, endpoint=False)
    pts = (c[:, None] + vecs @ (np.sqrt(np.maximum(vals, 0.0))[:, None]
                                * np.vstack([np.cos(th), np.sin(th)])))
    zh = np.vstack([pts, np.ones(th.size)])

    def resid(q):
        h = np.array([[q[0], 0.0, q[1]], [0.0, q[0], q[2]], [q[3], q[4], 1.0]])
        try:
            u = np.linalg.solve(h, zh)
        except np.linalg.LinAlgError:
            return None
        return np.hypot(u[0] / u[2], u[1] / u[2]) - 1.0

    q = np.array([a, c[0], c[1], 0.0, 0.0])
    scale = np.array([1.0, 1.0, 1.0, 1e-5, 1e-5])
    r = resid(q)
    for _ in range(20):
        jac = np.empty((th.size, 5))
        for i in range(5):
            dq = np.zeros(5)
            dq[i] = scale[i] * 1e-3
            rp = resid(q + dq)
            if rp is None:
                return 0.5 * (a + b), float(c[0]), float(c[1]), 0.0, 0.0
            jac[:, i] = (rp - r) / dq[i]
        step, *_ = np.linalg.lstsq(jac, -r, rcond=None)
        q_new = q + step
        r_new = resid(q_new)
        if r_new is None or not np.all(np.isfinite(r_new)):
            break
        q, r = q_new, r_new
        if np.all(np.abs(step / scale) < 1e-6):
            break
    if not (np.all(np.isfinite(q)) and q[0] > 0 and abs(q[0] / a - 1.0) < 0.5):
        return 0.5 * (a + b), float(c[0]), float(c[1]), 0.0, 0.0
    return float(q[0]), float(q[1]), float(q[2]), float(q[3]), float(q[4])


N_SECTORS = 128  # azimuth sectors of the angular histograms


def _sector_codes(cands: list, box, ring_in: float, ring_out: float,
                  shape: tuple[int, int]) -> np.ndarray:
    """Per-pixel code ``candidate * N_SECTORS + azimuth sector`` on the disc annuli.

    The azimuth is atan2(u_y, u_x) of the pixel back-warped by the candidate's
    psi = 0 homography; a pixel on two annuli goes to the disc where it lies
    deeper inside. -1 marks pixels on no annulus.
    """
    x0, y0, x1, y1 = box
    code = np.full(shape, -1, np.int32)
    best_r = np.full(shape, np.inf)
    for ci, cd in enumerate(cands):
        hinv = np.linalg.inv(cd['H0'])
        a = cd['axes'][0] * ring_out * 1.2 + 2.0
        bx0, bx1 = max(int(cd['c'][0] - a), x0), min(int(cd['c'][0] + a) + 2, x1)
        by0, by1 = max(int(cd['c'][1] - a), y0), min(int(cd['c'][1] + a) + 2, y1)
        if bx1 <= bx0 or by1 <= by0:
            continue
        yy, xx = np.mgrid[by0:by1, bx0:bx1].astype(np.float64)
        u = hinv @ np.vstack([xx.ravel(), yy.ravel(), np.ones(xx.size)])
        ux, uy = u[0] / u[2], u[1] / u[2]
        rr = np.hypot(ux, uy).reshape(xx.shape)
        sector = np.floor((np.arctan2(uy, ux) + math.pi) * (N_SECTORS / (2.0 * math.pi)))
        sector = np.clip(sector, 0, N_SECTORS - 1).astype(np.int32).reshape(xx.shape)
        sub_best = best_r[by0:by1, bx0:bx1]
        sel = (rr >= ring_in) & (rr <= ring_out) & (rr < sub_best)
        code[by0:by1, bx0:bx1][sel] = ci * N_SECTORS + sector[sel]
        sub_best[sel] = rr[sel]
    return code


def _harmonics(hist: np.ndarray, n_cand: int, n_h: int) -> np.ndarray:
    """(n_cand, n_bins, n_h) sums of exp(i m azimuth), m = 1..n_h, from sector counts."""
    n_bins = hist.shape[0]
    az = (np.arange(N_SECTORS) + 0.5) * (2.0 * math.pi / N_SECTORS) - math.pi
    ang = az[:, None] * np.arange(1, n_h + 1)[None, :]
    h = hist.reshape(n_bins * n_cand, N_SECTORS)
    z = (h @ np.cos(ang)) + 1j * (h @ np.sin(ang))
    return z.reshape(n_bins, n_cand, n_h).transpose(1, 0, 2)


def _rotation(z: np.ndarray, n: np.ndarray, bin_us: int, t0: int, t_end: int,
              prm: DetectionParams):
    """Blade count, signed B-fold phase rate at the window end, phase, coherence.

    Parameters are one candidate's (n_bins, n_h) harmonic sums and (n_bins,) counts.
    Returns a dict or None when there is no rotating pattern.

    Notes
    -----
    Z_m(k) = sum over the events of bin k of exp(i m azimuth). The static part
    (texture, hub, arms) is the count-weighted mean of Z_m and is subtracted; the
    coherence of harmonic m is (sum |Z_m|^2 - N) / sum (N^2 - N), 1 when every event
    of a bin sits on the same B-fold angle, ~0 for random azimuths. B is the
    strongest harmonic in the blade range, replaced by a divisor that keeps at
    least half of its coherence. The B-fold phase rate comes from the lag-one
    product sum Z(k + 1) conj Z(k) (unambiguous while B omega bin < pi), then the
    demodulated coefficients, summed over ~1 ms groups, are unwrapped and fitted
    with a weighted quadratic in time; its slope at the window end gives the rate
    there and its value the phase.
    """
    tot = float(n.sum())
    if tot < 200.0:
        return None
    z = z - n[:, None] * (z.sum(axis=0) / tot)[None, :]
    noise = float(np.sum(n * n - n))
    if noise <= 0.0:
        return None
    coh = (np.sum(np.abs(z) ** 2, axis=0) - tot) / noise
    lo, hi = prm.blades_min, prm.blades_max
    m_best = lo + int(np.argmax(coh[lo - 1:hi]))
    blades = m_best
    for d in range(lo, m_best):
        if m_best % d == 0 and coh[d - 1] >= 0.5 * coh[m_best - 1]:
            blades = d
            break
    zb = z[:, blades - 1]
    lag = np.sum(zb[1:] * np.conj(zb[:-1]))
    dt = bin_us * 1e-6
    omega = float(np.angle(lag)) / dt
    tk = t0 + bin_us * (np.arange(zb.size) + 0.5) - t_end
    tk_s = tk * 1e-6
    y = zb * np.exp(-1j * omega * tk_s)
    g = max(1, int(round(1000.0 / bin_us)))
    n_g = y.size // g
    if n_g < 6:
        return None
    yg = y[y.size - n_g * g:].reshape(n_g, g).sum(axis=1)
    tg = tk_s[y.size - n_g * g:].reshape(n_g, g).mean(axis=1)
    wg = np.abs(yg)
    if not np.any(wg > 0):
        return None
    ph = np.unwrap(np.angle(yg))
    with warnings.catch_warnings():
        # a poorly conditioned fit (few weighted bins) is judged by its consistency below
        warnings.simplefilter('ignore', _RANK_WARNING)
        coef = np.polyfit(tg, ph, 2, w=np.sqrt(wg))
    fit = np.polyval(coef, tg)
    consistency = float(np.abs(np.sum(yg * np.exp(-1j * fit))) / np.sum(wg))
    omega_end = omega + float(coef[1])
    omega_mean = omega + float(np.polyval(np.polyder(coef), tg).mean())
    phase_end = float(coef[2])
    return {'blades': blades, 'omega_end': omega_end, 'omega_mean': omega_mean,
            'phase_end': phase_end, 'coherence': float(coh[blades - 1]),
            'consistency': consistency}


def _inside(cand: dict, x: float, y: float) -> bool:
    dz = np.array([x - cand['c'][0], y - cand['c'][1]])
    return float(dz @ cand['minv'] @ dz) < 1.0


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
    if len(ev) < 100:
        return []
    t0 = int(ev.t_us[0])
    i1 = int(np.searchsorted(ev.t_us, t0 + prm.window_us, side='left'))
    if np.any(ev.t_us[1:i1] < ev.t_us[:i1 - 1]):
        raise ValueError('event times must be non-decreasing')
    t_end = t0 + prm.window_us if i1 < len(ev) else int(ev.t_us[i1 - 1]) + 1
    if t_end - t0 < prm.min_window_us:
        return []
    t_w, x_w, y_w = ev.t_us[:i1], ev.x[:i1], ev.y[:i1]
    # 1. egomotion
    (k0, kstep, sx, sy), cells = _register(t_w, x_w, y_w, t0, t_end, box, prm)
    # 2. block periodicity (events moved to the window end)
    blk = prm.block_px
    row_of = _active_blocks(cells, box, t0, t_end, prm)
    bx_of, by_of = _block_lookup(box, width, height, blk)
    n_bins = (t_end - t0) // prm.bin_us
    series = np.zeros((n_bins, int((row_of >= 0).sum())), np.float32)
    xc = np.empty(i1, np.int16)
    yc = np.empty(i1, np.int16)
    pix = np.zeros((height, width), np.int32)
    _compensate(t_w, x_w, y_w, k0, kstep, sx, sy, box[0], box[1], box[2], box[3], t0,
                prm.bin_us, n_bins, bx_of, by_of, row_of, xc, yc, pix, series)
    score, spec, power, freq, band = _block_spectra(series, row_of, prm)
    periodic = score >= prm.periodicity_min
    if not periodic.any():
        return []
    seeds = [sd[:3] for sd in _vortex_seeds(spec, power, band, row_of, periodic, blk, prm)]
    seeds += _disc_seeds(periodic, blk, prm)
    # 3. discs: vortex seeds first; a seed inside an accepted disc, or a fit that
    # overlaps one (e.g. a merged blob of touching discs), is skipped
    smooth = _box3(pix)
    cands = []
    for cx, cy, r0 in seeds[:2 * prm.max_candidates]:
        cx, cy = cx + box[0], cy + box[1]
        if any(_inside(o, cx, cy) for o in cands):
            continue
        fit = _fit_tip_ellipse(smooth, box, cx, cy, max(r0, prm.radius_min_px))
        if fit is None:
            continue
        c, m, axes = fit[:3]
        if not (prm.radius_min_px <= axes[1] and axes[0] <= prm.radius_max_px
                and axes[1] >= 0.5 * axes[0]):
            continue
        if not (box[0] <= c[0] < box[2] and box[1] <= c[1] < box[3]):
            continue
        r_new = math.sqrt(axes[0] * axes[1])
        if any(math.hypot(c[0] - o['c'][0], c[1] - o['c'][1])
               < 0.8 * (r_new + math.sqrt(o['axes'][0] * o['axes'][1])) for o in cands):
            continue
        s, tx, ty, w1, w2 = _q_from_ellipse(c, m, axes, prm.squash_min)
        h0 = homography_from_paper_q(s, 0.0, tx, ty, w1, w2)
        cands.append({'c': c, 'm': m, 'axes': axes, 'q': (s, tx, ty, w1, w2), 'H0': h0,
                      'minv': np.linalg.inv(m)})
        if len(cands) >= prm.max_candidates:
            break
    if not cands:
        return []
    # 4. angular harmonics
    code = _sector_codes(cands, box, prm.ring_inner, prm.ring_outer, (height, width))
    n_ab = (t_end - t0) // prm.angle_bin_us
    hist = np.zeros((n_ab, len(cands) * N_SECTORS), np.float32)
    _angular_hist(t_w, xc, yc, t0, prm.angle_bin_us, n_ab, code, hist)
    zs = _harmonics(hist, len(cands), prm.blades_max)
    cnt = hist.reshape(n_ab, len(cands), N_SECTORS).sum(axis=2, dtype=np.float64).T
    nby, nbx = row_of.shape
    by, bx = np.mgrid[0:nby, 0:nbx]
    bcx, bcy = box[0] + (bx + 0.5) * blk, box[1] + (by + 0.5) * blk
    out = []
    for ci, cd in enumerate(cands):
        rot = _rotation(zs[ci], cnt[ci], prm.angle_bin_us, t0, t_end, prm)
        if (rot is None or rot['coherence'] < prm.coherence_min
                or rot['consistency'] < prm.consistency_min):
            continue
        blades = rot['blades']
        rpm = abs(rot['omega_end']) / blades * 60.0 / (2.0 * math.pi)
        if not prm.rpm_min <= rpm <= prm.rpm_max:
            continue
        # the block spectrum of the disc must peak at the blade-pass frequency
        dz = np.stack([bcx - cd['c'][0], bcy - cd['c'][1]], axis=-1)
        rho2 = np.einsum('...i,ij,...j->...', dz, np.linalg.inv(cd['m']), dz)
        rows = row_of[(rho2 <= 0.8) & (row_of >= 0)]
        if rows.size == 0:
            continue
        p_disc = power[rows].sum(axis=0)
        f_bp = abs(rot['omega_mean']) / (2.0 * math.pi)
        near = band & (np.abs(freq - f_bp) <= max(prm.rate_tolerance * f_bp,
                                                  1.5 * (freq[1] - freq[0])))
        med = float(np.median(p_disc[band]))
        if not near.any() or p_disc[near].max() < prm.periodicity_min * max(med, 1e-12):
            continue
        s, tx, ty, w1, w2 = cd['q']
        psi = math.remainder(rot['phase_end'] / blades, 2.0 * math.pi)
        cp, sp = math.cos(psi), math.sin(psi)
        persp = (w1 * cp + w2 * sp, -w1 * sp + w2 * cp)
        out.append(DetectedRotor(center_px=(tx, ty), radius_px=s, psi_rad=psi,
                                 perspective=persp, blades=blades,
                                 direction=1 if rot['omega_end'] > 0 else -1,
                                 rpm_shaft=rpm, score=rot['coherence'], t_us=int(t_end),
                                 blade_pass_hz=rpm * blades / 60.0,
                                 axes_px=(float(cd['axes'][0]), float(cd['axes'][1]))))
    out.sort(key=lambda r: (r.center_px[1], r.center_px[0]))
    return out
