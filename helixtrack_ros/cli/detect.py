# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack detect``: find the rotors of a recording and write a parameter file."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
import time
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from helixtrack_ros.cli.common import (
    CliError,
    ExitCode,
    Packets,
    damage_line,
    make_decoder_or_fail,
    open_or_fail,
    output_file,
    outputs_not_input,
)
from helixtrack_ros.cli.progress import Progress, progress_enabled
from helixtrack_ros.pipeline.startup import image_order

if TYPE_CHECKING:
    from helixtrack_ros.io.bags import TruncatedBagError

#: how detected rotors are named, as ``detect`` and ``track`` say it
NAMING = ', named in image order (rows top to bottom, each left to right)'


class Detection(NamedTuple):
    """What :func:`detect_in_bag` found."""

    #: list of DetectedRotor
    rotors: list
    #: sensor size from the packets
    width: int
    height: int
    #: the TruncatedBagError when the bag ended at damage before the window did, else None
    truncated: TruncatedBagError | None = None
    #: the EventArrays the rotors were detected in (None when there were none)
    window: Any = None
    #: the recording holds no event at all (nothing to detect in; its size unknown)
    empty: bool = False


def detect_in_bag(bag: str, topic: str | None = None, at_s: float = 0.0,
                  window_s: float = 0.1, quiet: bool = True) -> Detection:
    """Detect the rotors in ``window_s`` of events starting ``at_s`` after the first event.

    A bag cut short (damaged MCAP) ends the window at the damage. Progress (in
    milliseconds of sensor time up to the window's end) is drawn unless ``quiet``.
    """
    from helixtrack_ros.core.detection import DetectionParams, detect_rotors
    from helixtrack_ros.core.events import EventArrays
    recording = open_or_fail(bag, topic)
    decoder = None
    parts = []
    t_start = None
    width, height = 1280, 720
    packets = Packets(recording)
    progress = Progress(int((at_s + window_s) * 1e3), 'reading', unit='ms',
                        enabled=progress_enabled(quiet))
    n_events = 0
    for pkt in packets:
        if decoder is None:
            decoder = make_decoder_or_fail(pkt)
            width, height = int(pkt.width), int(pkt.height)
        ev = decoder.decode(pkt.events, is_bigendian=pkt.is_bigendian,
                            time_base=pkt.time_base).events
        if not len(ev):
            continue
        if t_start is None:
            t_start = int(ev.t_us[0]) + int(at_s * 1e6)
        n_events += len(ev)
        done_us = int(ev.t_us[-1]) - t_start + int(at_s * 1e6)
        progress.update(done_us // 1000, done_us * 1e-6, n_events)
        if ev.t_us[-1] < t_start:
            continue
        parts.append(ev)
        if ev.t_us[-1] >= t_start + int(window_s * 1e6):
            break
    progress.close()
    if not parts:
        if packets.truncated is not None:
            return Detection([], width, height, packets.truncated)
        if not n_events:    # (nothing found, as track and events say it: exit 1)
            return Detection([], width, height, empty=True)
        raise CliError(f'{bag}: no events at {at_s:g} s')
    ev = EventArrays.concatenate(parts)
    a = int(np.searchsorted(ev.t_us, t_start))
    b = int(np.searchsorted(ev.t_us, t_start + int(window_s * 1e6)))
    window = ev.slice(a, b)
    # the detector analyses the whole window asked for (its default is 100 ms)
    span_us = max(int(window_s * 1e6), 1)
    params = DetectionParams(window_us=span_us,
                             min_window_us=min(DetectionParams.min_window_us, span_us))
    return Detection(detect_rotors(window, width=width, height=height, params=params), width,
                     height, packets.truncated, window)


def rotor_line(name: str, r: Any) -> str:
    """One detected rotor as ``detect`` and ``track`` print it."""
    return (f'  {name}: centre ({r.center_px[0]:.1f}, {r.center_px[1]:.1f}) px, radius '
            f'{r.radius_px:.1f} px, {r.blades} blades, direction {r.direction:+d}, '
            f'{r.rpm_shaft:.0f} shaft RPM (score {r.score:.2f})')


def draw_detections(path: Path, found: Detection, names: list[str],
                    rotors: list[Any]) -> list[list[Any]]:
    """detect.png: the start, middle and end of the window with every detected rotor."""
    from helixtrack_ros.cli.pictures import FRAME_US, Frame, Mark, draw_frames
    from helixtrack_ros.debug_image import detection_homography
    ev = found.window
    marks = [Mark(n, detection_homography(r), r.blades, r.direction, r.rpm_shaft)
             for n, r in zip(names, rotors)]
    t0, t1 = int(ev.t_us[0]), int(ev.t_us[-1])
    frames = []
    for start in sorted({t0, max(t0, (t0 + t1) // 2 - FRAME_US // 2), max(t0, t1 - FRAME_US)}):
        a, b = np.searchsorted(ev.t_us, [start, start + FRAME_US])
        frames.append(Frame(start * 1e-6, ev.x[a:b], ev.y[a:b], ev.p[a:b], marks))
    return draw_frames(path, found.width, found.height, frames,
                       f'helixtrack detect: {len(rotors)} rotor(s){NAMING}')


def _say_cut_discs(names: list[str], rotors: list[Any], width: int, height: int) -> None:
    """Warn of rotors whose disc the image border cuts to under MIN_VISIBLE_SHARE: a half
    disc of a 2-blade rotor was detected as 1 blade at twice the RPM, and written so into
    the parameter file (red-team round 5); ``track`` publishes no value of such a rotor."""
    from helixtrack_ros.pipeline.outputs import MIN_VISIBLE_SHARE, visible_share
    for name, r in zip(names, rotors):
        share = visible_share(width, height, r.center_px[0], r.center_px[1], r.radius_px)
        if share < MIN_VISIBLE_SHARE:
            print(f'helixtrack: warning: {name}: only {share:.0%} of its disc lies inside the '
                  'image: its blades, direction and RPM may be wrong (half a 2-blade disc '
                  'reads as 1 blade at twice the RPM), and no value of it is published while '
                  'so', file=sys.stderr)


def cmd_detect(args: argparse.Namespace) -> int:
    """``helixtrack detect``: write a parameter file with the rotors found."""
    from helixtrack_ros.io.params_file import rotor_params_tree, write_ros_params
    output_file(Path(args.out))
    outputs_not_input([Path(args.out), Path(args.out).parent / 'detect.png'], Path(args.bag))
    t0 = time.perf_counter()
    found = detect_in_bag(args.bag, args.topic, args.at_s, args.window, quiet=args.quiet)
    if found.empty:     # (no parameter file: there was nothing to look at)
        print(f'helixtrack: no event in {args.bag}: nothing to detect, no parameter file '
              'written', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    rotors = image_order(found.rotors)
    wall = time.perf_counter() - t0
    names = [f'rotor_{i}' for i in range(len(rotors))]
    print(f'{len(rotors)} rotor(s) found in {args.window * 1e3:.0f} ms of events at '
          f'{args.at_s:g} s ({wall:.2f} s){NAMING if rotors else ""}:')
    for name, r in zip(names, rotors):
        print(rotor_line(name, r))
    _say_cut_discs(names, rotors, found.width, found.height)
    if rotors:   # (none found: a parameter file of the user's stays as it was; review)
        tree = rotor_params_tree([r.to_params_dict(n) for n, r in zip(names, rotors)])
        if args.preset is not None:
            tree['preset'] = args.preset
        write_ros_params(args.out, tree, header=f'rotors detected by helixtrack detect in '
                                                f'{args.bag} at {args.at_s:g} s')
        print(f'parameters: {args.out}')
    if found.window is not None and len(found.window):
        picture = Path(args.out).parent / 'detect.png'
        draw_detections(picture, found, names, rotors)
        print(f'picture: {picture}')
    if found.truncated is not None:
        print(f'helixtrack: {damage_line(found.truncated, "searched")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    if not rotors:
        print(f'helixtrack: no rotor found in {args.window * 1e3:.0f} ms of events at '
              f'{args.at_s:g} s (try another --at-s or a longer --window); no parameter file '
              'written', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK
