# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The ``~/debug_image`` picture: an event frame with tracked and detected rotors.

ROS-free (numpy and the core's Eq. (1) only), so that drawing can be tested
and reused without a ROS install; the node wraps the array in a
``sensor_msgs/Image``. Tracked rotors are solid ellipses with their RPM,
coloured by health level in rgb8; recent detections are dashed ellipses
labelled name, blades, direction, RPM.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from helixtrack_ros.core.homography import homography_from_paper_q

#: The debug image shows detections of this much recent sensor time [us].
DETECTION_SHOW_US = 1_000_000

# A 3 x 5 pixel font, one string of 15 bits per glyph (rows top to bottom).
_GLYPHS = {
    '0': '111101101101111', '1': '010110010010111', '2': '111001111100111',
    '3': '111001111001111', '4': '101101111001001', '5': '111100111001111',
    '6': '111100111101111', '7': '111001001001001', '8': '111101111101111',
    '9': '111101111001111', '-': '000000111000000', '.': '000000000000010',
    ' ': '000000000000000', 'R': '110101110101101', 'P': '110101110100100',
    'M': '101111111101101', '?': '111001011000010', '+': '000010111010000',
    '_': '000000000000111', 'A': '010101111101101', 'B': '110101110101110',
    'C': '011100100100011', 'D': '110101101101110', 'E': '111100110100111',
    'F': '111100110100100', 'G': '011100101101011', 'H': '101101111101101',
    'I': '111010010010111', 'J': '001001001101010', 'K': '101101110101101',
    'L': '100100100100111', 'N': '110101101101101', 'O': '010101101101010',
    'Q': '010101101110011', 'S': '011100010001110', 'T': '111010010010010',
    'U': '101101101101111', 'V': '101101101101010', 'W': '101101111111101',
    'X': '101101010101101', 'Y': '101101010010010', 'Z': '111001010100111',
}
_GLYPH_MASKS = {c: np.array([int(b) for b in bits], bool).reshape(5, 3)
                for c, bits in _GLYPHS.items()}

_LEVEL_RGB = [(0, 200, 0), (230, 180, 0), (230, 0, 0)]
_DETECTION_RGB = (0, 200, 230)


def draw_text(img: np.ndarray, text: str, x: int, y: int, color: Any, scale: int = 2) -> None:
    """Draw ``text`` into ``img`` with the built-in 3 x 5 font (top-left at x, y).

    Parameters
    ----------
    img : numpy.ndarray
        (H, W) or (H, W, 3) uint8 image, changed in place.
    text : str
        Digits, letters (drawn upper case), ``-``, ``+``, ``_``, ``.`` and space;
        others show as ``?``.
    x, y : int
        Top-left corner [px].
    color : int or tuple of int
        Grey value or RGB triple.
    scale : int
        Pixel size of one font dot.
    """
    h, w = img.shape[:2]
    for i, ch in enumerate(text):
        mask = _GLYPH_MASKS.get(ch.upper(), _GLYPH_MASKS['?'])
        big = np.kron(mask, np.ones((scale, scale), bool))
        x0 = x + i * 4 * scale
        y0 = y
        ys, xs = np.nonzero(big)
        ys = ys + y0
        xs = xs + x0
        keep = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
        img[ys[keep], xs[keep]] = color


def ellipse_points(H: np.ndarray, n: int = 180) -> np.ndarray:
    """Project the unit circle of the rotor plane into the image.

    Parameters
    ----------
    H : numpy.ndarray
        3 x 3 homography, rotor plane -> image.
    n : int
        Number of samples.

    Returns
    -------
    numpy.ndarray
        (m, 2) float image points (x, y); points behind the camera are dropped.
    """
    a = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    u = np.stack([np.cos(a), np.sin(a), np.ones_like(a)])
    z = np.asarray(H, dtype=np.float64).reshape(3, 3) @ u
    ok = z[2] > 1e-9
    return np.stack([z[0, ok] / z[2, ok], z[1, ok] / z[2, ok]], axis=1)


def draw_polyline(img: np.ndarray, pts: np.ndarray, color: Any, closed: bool = True) -> None:
    """Draw straight segments through ``pts`` (2 px thick) into ``img``."""
    if len(pts) < 2:
        return
    h, w = img.shape[:2]
    p = np.asarray(pts, dtype=np.float64)
    q = np.roll(p, -1, axis=0) if closed else p[1:]
    p = p if closed else p[:-1]
    seg = np.maximum(np.abs(q - p).max(axis=1), 1.0)
    steps = np.minimum(np.ceil(seg).astype(np.int64), 4096)
    xs, ys = [], []
    for (x0, y0), (x1, y1), k in zip(p, q, steps, strict=True):
        t = np.linspace(0.0, 1.0, int(k) + 1)
        xs.append(x0 + (x1 - x0) * t)
        ys.append(y0 + (y1 - y0) * t)
    x = np.rint(np.concatenate(xs)).astype(np.int64)
    y = np.rint(np.concatenate(ys)).astype(np.int64)
    for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
        xx, yy = x + dx, y + dy
        keep = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
        img[yy[keep], xx[keep]] = color


def render_debug_image(width: int, height: int, events: Any, rotors: list[Any],
                       encoding: str = 'mono8',
                       detections: list[tuple[str, Any]] | None = None) -> np.ndarray:
    """Render an event frame with each rotor's ellipse and RPM, and recent detections.

    Parameters
    ----------
    width, height : int
        Image size [px].
    events : sequence of (x, y, p) array triples
        Events to accumulate (ON brighter, OFF darker).
    rotors : list of RotorOutput
        Rotor states (``homography``, ``rpm_shaft``, ``level``).
    encoding : str
        ``mono8`` or ``rgb8``.
    detections : list of (label, DetectedRotor), optional
        Rotors found by detection (start-up or re-detection), drawn as a
        dashed ellipse (cyan in rgb8) labelled with the name, blade count,
        direction and RPM the detector measured.

    Returns
    -------
    numpy.ndarray
        (height, width) or (height, width, 3) uint8 image.
    """
    rgb = encoding == 'rgb8'
    img = np.full((height, width, 3) if rgb else (height, width), 128, np.uint8)
    for x, y, p in events:
        x = np.asarray(x, np.int64)
        y = np.asarray(y, np.int64)
        on = np.asarray(p) > 0
        keep = (x < width) & (y < height)
        xk, yk, onk = x[keep], y[keep], on[keep]
        if rgb:
            img[yk[onk], xk[onk]] = (255, 255, 255)
            img[yk[~onk], xk[~onk]] = (0, 0, 0)
        else:
            img[yk[onk], xk[onk]] = 255
            img[yk[~onk], xk[~onk]] = 0
    for r in rotors:
        H = np.asarray(r.homography, dtype=np.float64).reshape(3, 3)
        if not np.all(np.isfinite(H)):
            continue
        color: Any = _LEVEL_RGB[min(max(int(r.level), 0), 2)] if rgb else 255
        pts = ellipse_points(H)
        draw_polyline(img, pts, color)
        c = H @ np.array([0.0, 0.0, 1.0])
        if abs(c[2]) < 1e-9 or len(pts) == 0:
            continue
        cx, cy = c[0] / c[2], c[1] / c[2]
        draw_polyline(img, np.array([[cx - 4, cy], [cx + 4, cy]]), color, closed=False)
        draw_polyline(img, np.array([[cx, cy - 4], [cx, cy + 4]]), color, closed=False)
        rpm = r.rpm_shaft
        text = (f'{rpm:.0f}' if math.isfinite(rpm) else '?') + ' RPM'
        top = int(pts[:, 1].min()) - 14
        if top < 0:
            top = int(pts[:, 1].max()) + 4
        draw_text(img, text, int(cx) - len(text) * 4, top, color, scale=2)
    for label, det in detections or []:
        H = detection_homography(det)
        if not np.all(np.isfinite(H)):
            continue
        color = _DETECTION_RGB if rgb else 200
        pts = ellipse_points(H, n=72)
        for k in range(0, len(pts) - 1, 4):
            # dashed: every other pair of segments
            draw_polyline(img, pts[k:k + 3], color, closed=False)
        if len(pts) == 0:
            continue
        text = (f'{label} {det.blades}B {"+" if det.direction >= 0 else "-"} '
                f'{det.rpm_shaft:.0f}')
        draw_text(img, text, int(det.center_px[0]) - len(text) * 4,
                  int(pts[:, 1].max()) + 6, color, scale=2)
    return img


def detection_homography(det: Any) -> np.ndarray:
    """H of a detection (Eq. 1 with s = tip radius, psi, centre and perspective)."""
    return homography_from_paper_q(float(det.radius_px), det.psi_rad, det.center_px[0],
                                   det.center_px[1], det.perspective[0], det.perspective[1])
