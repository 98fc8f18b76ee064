# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Offline pictures: event frames with each rotor's ellipse and label (detect.png, overlay.png).

:func:`draw_frames` draws a row of event frames with matplotlib; every rotor
gets its ellipse (the unit circle of its plane through its homography), a
centre cross and a label with name, blade count, direction and shaft RPM.
Labels are placed one after the other at the first free spot around the
ellipse (above, below, right, left, then further out), so none covers
another; the function returns the label boxes so that tests can check it.
:class:`FrameSampler` keeps a few short frames of a tracking run.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from helixtrack_ros.debug_image import ellipse_points, render_debug_image

#: a frame accumulates this much sensor time of events [us]
FRAME_US = 2_000
#: pixels kept free around each label box
_LABEL_GAP_PX = 3.0
#: padding of a label's box, in font sizes
_LABEL_PAD = 0.25


class Mark(NamedTuple):
    """One rotor to draw: name, homography (rotor plane -> image), blades, direction, RPM."""

    name: str
    homography: np.ndarray
    blades: int
    direction: int
    rpm: float


class Frame(NamedTuple):
    """Events of a short span (``x``, ``y``, ``p`` arrays) at ``t_s`` and the rotors then."""

    t_s: float
    x: np.ndarray
    y: np.ndarray
    p: np.ndarray
    marks: list[Mark]


class Label(NamedTuple):
    """A drawn label: its text and box (x0, y0, x1, y1) in figure pixels."""

    text: str
    box: tuple[float, float, float, float]


def mark_text(m: Mark) -> str:
    """The label of a rotor: name; blades and direction; shaft RPM."""
    rpm = f'{m.rpm:.0f} RPM' if math.isfinite(m.rpm) else 'RPM ?'
    return f'{m.name}\n{m.blades} blades, dir {m.direction:+d}\n{rpm}'


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _box(text: Any, renderer: Any) -> tuple[float, float, float, float]:
    """A label's box in figure pixels: its text, the padding of its patch and a gap."""
    bb = text.get_window_extent(renderer)
    g = _LABEL_GAP_PX + _LABEL_PAD * text.get_fontsize() * text.figure.dpi / 72.0
    return (bb.x0 - g, bb.y0 - g, bb.x1 + g, bb.y1 + g)


def _candidates(pts: np.ndarray) -> list[tuple[float, float, str, str]]:
    """Anchor (x, y, ha, va) spots around an ellipse, nearest first (y grows downwards)."""
    x0, x1 = float(pts[:, 0].min()), float(pts[:, 0].max())
    y0, y1 = float(pts[:, 1].min()), float(pts[:, 1].max())
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    out = []
    for k in (0.08, 0.6, 1.2, 2.0):
        d = k * max(x1 - x0, y1 - y0, 20.0)
        out += [(cx, y0 - d, 'center', 'bottom'), (cx, y1 + d, 'center', 'top'),
                (x1 + d, cy, 'left', 'center'), (x0 - d, cy, 'right', 'center'),
                (x1 + d, y0 - d, 'left', 'bottom'), (x0 - d, y1 + d, 'right', 'top'),
                (x1 + d, y1 + d, 'left', 'top'), (x0 - d, y0 - d, 'right', 'bottom')]
    return out


def _into(t: Any, box: tuple[float, ...], inside: Any,
          renderer: Any) -> tuple[float, float, float, float]:
    """Shift a label that sticks out of the axes (``inside``, pixels) back in; its new box."""
    dx = max(0.0, inside.x0 - box[0]) - max(0.0, box[2] - inside.x1)
    dy = max(0.0, inside.y0 - box[1]) - max(0.0, box[3] - inside.y1)
    if not (dx or dy):
        return box
    ax = t.axes
    disp = ax.transData.transform(t.get_position()) + np.array([dx, dy])
    t.set_position(ax.transData.inverted().transform(disp))
    return _box(t, renderer)


def _place_label(ax: Any, m: Mark, pts: np.ndarray, color: Any, placed: list[tuple],
                 discs: list[tuple], renderer: Any) -> Label:
    """Put a rotor's label at the first spot free of ``placed`` labels and of the ``discs``.

    Inside the axes when a free spot there exists; a label that finds no free
    spot at all goes below every other box, so labels never overlap.
    """
    text = mark_text(m)
    style = {'fontsize': 8, 'color': 'black', 'clip_on': False, 'zorder': 5,
             'bbox': {'boxstyle': f'round,pad={_LABEL_PAD}', 'fc': color, 'alpha': 0.85, 'lw': 0}}
    inside = ax.get_window_extent(renderer)
    fallback = None
    for x, y, ha, va in _candidates(pts):
        t = ax.text(x, y, text, ha=ha, va=va, **style)
        box = _into(t, _box(t, renderer), inside, renderer)
        if not any(_overlaps(box, other) for other in (*placed, *discs)):
            if (inside.x0 <= box[0] and box[2] <= inside.x1 and inside.y0 <= box[1]
                    and box[3] <= inside.y1):
                if fallback is not None:
                    fallback[0].remove()
                placed.append(box)
                return Label(text, box)
            if fallback is None:
                fallback = (t, box)
                continue
        t.remove()
    if fallback is None:   # every spot taken: below every label so far (figure pixels)
        low = min(b[1] for b in (*placed, *discs))
        t = ax.text(0, 0, text, ha='center', va='top', **style)
        h = _box(t, renderer)
        x_disp = ax.transData.transform((float(pts[:, 0].mean()), 0.0))[0]
        t.set_position(ax.transData.inverted().transform((x_disp, low - (h[3] - h[1]))))
        fallback = (t, _box(t, renderer))
    placed.append(fallback[1])
    return Label(text, fallback[1])


def _view(width: int, height: int, frames: list[Frame]) -> tuple[float, float, float, float]:
    """The part of the image to show (x0, x1, y0, y1): the rotors with room for labels.

    The whole sensor when the rotors fill much of it or there are none.
    """
    boxes = []
    for f in frames:
        for m in f.marks:
            H = np.asarray(m.homography, np.float64).reshape(3, 3)
            pts = ellipse_points(H) if np.all(np.isfinite(H)) else np.empty((0, 2))
            if len(pts):
                boxes.append((*pts.min(axis=0), *pts.max(axis=0)))
    full = (-0.5, width - 0.5, -0.5, height - 0.5)
    if not boxes:
        return full
    b = np.array(boxes)
    size = float(max(np.max(b[:, 2] - b[:, 0]), np.max(b[:, 3] - b[:, 1]), 20.0))
    x0, y0 = b[:, 0].min() - 1.6 * size, b[:, 1].min() - 1.6 * size
    x1, y1 = b[:, 2].max() + 1.6 * size, b[:, 3].max() + 1.6 * size
    if (x1 - x0) * (y1 - y0) > 0.6 * width * height:
        return full
    return (max(x0, full[0]), min(x1, full[1]), max(y0, full[2]), min(y1, full[3]))


def draw_frames(path: Path, width: int, height: int, frames: list[Frame],
                title: str) -> list[list[Label]]:
    """Write a row of event frames with every rotor's ellipse and label; the labels per frame.

    ``width`` x ``height`` is the sensor size. No label box overlaps another,
    in a frame or across frames.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    n = max(len(frames), 1)
    x0, x1, y0, y1 = _view(width, height, frames)
    panel_w = 6.0
    fig, axes = plt.subplots(1, n, figsize=(panel_w * n, panel_w * (y1 - y0) / (x1 - x0) + 0.9),
                             dpi=100, squeeze=False)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.86, bottom=0.03, wspace=0.06)
    fig.suptitle(title, fontsize=10)
    renderer = fig.canvas.get_renderer()
    placed: list[tuple] = []
    labels: list[list[Label]] = []
    for ax, frame in zip(axes[0], frames):
        img = render_debug_image(width, height, [(frame.x, frame.y, frame.p)], [], 'mono8')
        ax.imshow(img, cmap='gray', vmin=0, vmax=255, interpolation='nearest')
        ax.set_xlim(x0, x1)
        ax.set_ylim(y1, y0)
        ax.apply_aspect()   # (the label placement needs the final axes box)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f'sensor time {frame.t_s:.3f} s, {len(frame.x)} events in '
                     f'{FRAME_US / 1000:g} ms', fontsize=8)
        drawn = []
        for i, m in enumerate(frame.marks):
            H = np.asarray(m.homography, np.float64).reshape(3, 3)
            pts = ellipse_points(H) if np.all(np.isfinite(H)) else np.empty((0, 2))
            if len(pts) == 0:
                continue
            color = plt.get_cmap('tab10')(i % 10)
            ax.plot(*np.vstack([pts, pts[:1]]).T, color=color, lw=1.3)
            c = H @ np.array([0.0, 0.0, 1.0])
            ax.plot([c[0] / c[2]], [c[1] / c[2]], '+', color=color, ms=8)
            drawn.append((m, pts, color))
        disp = [ax.transData.transform(pts) for _, pts, _ in drawn]
        discs = [(*d.min(axis=0), *d.max(axis=0)) for d in disp]
        labels.append([_place_label(ax, m, pts, color, placed, discs, renderer)
                       for m, pts, color in drawn])
    for ax in axes[0][len(frames):]:
        ax.set_axis_off()
    fig.savefig(path)
    plt.close(fig)
    return labels


class FrameSampler:
    """Keeps short event frames through a run, evenly spread, in bounded memory.

    A frame starts every ``interval_us`` of sensor time and takes the packets
    of the next :data:`FRAME_US`; past ``max_frames`` every other one is
    dropped and the interval doubled. :meth:`pick` chooses a few at the end.
    """

    def __init__(self, interval_us: int = 50_000, max_frames: int = 16) -> None:
        self.interval_us = interval_us
        self.max_frames = max_frames
        self.frames: list[tuple[int, list, list]] = []   # (t0, event parts, rotor outputs)
        self._next_us: int | None = None
        self._open: tuple[int, list, list] | None = None

    #: (a run of unknown length: its frames are picked at its end)
    ready = False

    def add(self, t_first_us: int, events: Any, rotors: list[Any], index: int = 0) -> None:
        """Offer a packet's events (EventArrays) and rotor outputs (``index``: unused)."""
        if self._open is not None:
            self._open[1].append((events.x.copy(), events.y.copy(), events.p.copy()))
            self._open[2][:] = rotors
            if int(events.t_us[-1]) - self._open[0] >= FRAME_US:
                self.frames.append(self._open)
                self._open = None
                if len(self.frames) > self.max_frames:
                    self.frames = self.frames[::2]
                    self.interval_us *= 2
            return
        if self._next_us is None or t_first_us >= self._next_us:
            self._next_us = t_first_us + self.interval_us
            self._open = (t_first_us, [], [])
            self.add(t_first_us, events, rotors)

    def pick(self, n: int = 3) -> list[tuple[int, list, list]]:
        """``n`` frames spread over the run, preferring those where every rotor has an RPM."""
        good = [f for f in self.frames if _good(f[2])] or self.frames
        if len(good) <= n:
            return good
        return [good[int(i)] for i in np.linspace(0, len(good) - 1, n).round()]


def _good(rotors: list[Any]) -> bool:
    """Every rotor of a frame has an RPM (the frame shows them all tracked)."""
    return bool(rotors) and all(math.isfinite(r.rpm_shaft) for r in rotors)


class PlannedFrames:
    """``n`` short event frames at places planned from a run's known packet count.

    The places spread over the packets from the first one whose rotors all
    have an RPM to the last: frame i starts at the i-th of ``n`` even steps
    or, when not every rotor has an RPM at its end, again every ``retry_us``
    of sensor time before the next place (the span's first frame is kept if
    none is better). Once the last one is kept (:attr:`ready`) the overlay
    can be drawn while the run goes on; a run that ends before (cut short, its
    count wrong, never tracked) gets the frames a :class:`FrameSampler` kept
    beside.
    """

    def __init__(self, count: int, n: int = 3, retry_us: int = 50_000) -> None:
        self.count = count
        self.n = n
        self.retry_us = retry_us
        self.places: list[int] = []   # (planned at the first packet with every RPM)
        self.ends: list[int] = []
        self.kept: list[tuple[int, list, list]] = []
        self._first: tuple[int, list, list] | None = None   # of the current span
        self._open: tuple[int, list, list] | None = None
        self._next_us: int | None = None   # no new try before this sensor time
        self._sampled = FrameSampler()     # (the frames of a run that ends before)

    @property
    def ready(self) -> bool:
        """Every planned frame is kept."""
        return bool(self.places) and len(self.kept) == len(self.places)

    def _plan(self, index: int) -> None:
        span = max(self.count - index, 1)
        self.places = [index + span * (2 * i + 1) // (2 * self.n) for i in range(self.n)]
        self.ends = [*self.places[1:], self.count]
        self._first = self._open = self._next_us = None

    def add(self, t_first_us: int, events: Any, rotors: list[Any], index: int = 0) -> None:
        """Offer packet ``index``'s events (EventArrays) and rotor outputs."""
        if self.ready:
            return
        self._sampled.add(t_first_us, events, rotors)
        if not self.places:
            if not _good(rotors):   # (until then a frame now and then, in case none comes)
                self._try(t_first_us, events, rotors, index, planned=False)
                return
            self._plan(index)
        while (len(self.kept) < len(self.places) and self._open is None
               and index >= self.ends[len(self.kept)]):
            self._keep(self._first)   # (a span without a good frame: its first, if any)
        if len(self.kept) < len(self.places):
            self._try(t_first_us, events, rotors, index, planned=True)

    def _try(self, t_first_us: int, events: Any, rotors: list[Any], index: int,
             planned: bool) -> None:
        """Open a frame when due, or add the packet to the open one; judge it when done."""
        if self._open is None:
            if (planned and index < self.places[len(self.kept)]) or (
                    self._next_us is not None and t_first_us < self._next_us):
                return
            self._open = (t_first_us, [], [])
            self._next_us = t_first_us + self.retry_us
        frame = self._open
        frame[1].append((events.x.copy(), events.y.copy(), events.p.copy()))
        frame[2][:] = rotors
        if int(events.t_us[-1]) - frame[0] < FRAME_US:
            return
        self._open = None
        if not planned:
            self._first = frame      # (the latest, before any packet had every RPM)
        elif _good(frame[2]):
            self._keep(frame)
        elif self._first is None:
            self._first = frame

    def _keep(self, frame: tuple[int, list, list] | None) -> None:
        if frame is not None:
            self.kept.append(frame)
        else:   # (no frame at all in the span: the place is left out)
            self.places.pop(len(self.kept))
            self.ends.pop(len(self.kept))
        self._first = self._next_us = None

    def pick(self, n: int = 3) -> list[tuple[int, list, list]]:
        """The frames kept; those of the :class:`FrameSampler` beside when not all are."""
        return list(self.kept) if self.ready else self._sampled.pick(n)
