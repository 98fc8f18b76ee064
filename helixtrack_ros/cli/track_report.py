# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What a ``helixtrack track`` run says when it ends: its summary lines and its exit status.

:func:`print_track_summary` prints the counts, the input's problems, the
rotors found, the error table and the outputs; :func:`track_status` and
:func:`track_outcome` turn a run's result (:func:`~helixtrack_ros.cli.track.
track_recording`) into its exit code and one line. Split from
:mod:`helixtrack_ros.cli.track`, which runs the tracking.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from helixtrack_ros.cli.common import ExitCode, damage_line, skip_problem
from helixtrack_ros.cli.detect import NAMING, rotor_line
from helixtrack_ros.cli.truth import print_error_table
from helixtrack_ros.pipeline.time_quantum import MIN_QUANTA_PER_PASS


def _nothing_tracked(info: dict[str, Any]) -> str | None:
    """Why ``track`` measured nothing: no rotor state, or no RPM (None when it measured)."""
    if info['rows']:
        measured = _nothing_measured(info['arrays'])
        if info.get('given') and set(info['given']) <= set(info.get('impossible') or {}):
            return ('every given rotor is impossible on this sensor (warnings above): '
                    + (measured or 'nothing measured'))
        return measured
    c = info['counters']
    if not info['packets']:
        from helixtrack_ros.io.recordings import FILE_KINDS
        what = 'no event in' if info['kind'] in FILE_KINDS else 'no EventPacket message on'
        return f'{what} {info["topic"]}'
    if sum(info['errors'].values()) >= info['packets']:
        first = next(iter(info['error_text'].values()))
        return f'every one of the {info["packets"]} packets was refused ({first})'
    if not info['events'] and c.get('decode_errors'):   # (e.g. every event off the sensor)
        return (f'the {info["packets"]} packets hold no usable event ({c["decode_errors"]} '
                'decode errors, see the warning above)')
    if not info['events']:
        return f'the {info["packets"]} packets hold no event'
    if info['auto_detect'] and not c['detections']:
        return (f'{info["sensor_s"] * 1e3:.0f} ms of events is too short for the start-up '
                'rotor detection (100 ms); give the rotors with --params')
    if info['auto_detect']:
        return ('no rotor detected in the first 100 ms of events; give the rotors with '
                '--params (helixtrack detect --at-s can look later in the bag)')
    return 'no rotor state came out of the tracker'


def _nothing_measured(arrays: dict[str, dict[str, np.ndarray]]) -> str | None:
    """Why no rotor ever had a measured (TRACKING) RPM, with the states it had instead."""
    if any(np.isfinite(a['rpm']).any() for a in arrays.values()):
        return None
    from helixtrack_ros.core.health import RotorState
    states = np.concatenate([a['state'] for a in arrays.values()])
    codes, counts = np.unique(states, return_counts=True)
    seen = ', '.join(f'{RotorState(int(c)).name} {n}' for c, n in
                     sorted(zip(codes, counts), key=lambda cn: -cn[1]))
    return f'no rotor reached TRACKING, every RPM is NaN (rows per state: {seen})'


def _print_unmeasured(info: dict[str, Any]) -> None:
    """Name each rotor that never published a value (TRACKING), with its last state.

    Only when another rotor did: when none did, the run's one line says so.
    """
    from helixtrack_ros.core.health import RotorState
    arrays = info['arrays']
    if not any(np.isfinite(a['rpm']).any() for a in arrays.values()):
        return
    for name, a in arrays.items():
        if len(a['state']) and not np.isfinite(a['rpm']).any():
            print(f'helixtrack: warning: rotor {name} never reached TRACKING, no RPM published '
                  f'(last state {RotorState(int(a["state"][-1])).name})', file=sys.stderr)


def track_status(info: dict[str, Any]) -> tuple[ExitCode, str | None]:
    """The exit code of a ``track`` run and its one line (None when done and tracked)."""
    if info['read_error'] is not None:
        return ExitCode.USAGE, str(info['read_error'])
    if info['interrupted']:
        return ExitCode.INTERRUPTED, 'interrupted: outputs hold what was processed so far'
    reason = _nothing_tracked(info)
    if reason is not None:   # (the main news, also where the input was cut short)
        cut = '; the input is also cut short' if info['truncated'] is not None else ''
        return ExitCode.NOTHING_FOUND, f'no rotor tracked: {reason}{cut}'
    if info['truncated'] is not None:
        return ExitCode.PARTIAL_INPUT, damage_line(info['truncated'], 'tracked')
    return ExitCode.OK, None


def track_outcome(info: dict[str, Any]) -> int:
    """Print the one line for a partial or empty run of ``track``; return its exit code."""
    if info['read_error'] is not None:
        raise info['read_error']
    code, line = track_status(info)
    if line is not None and code != ExitCode.INTERRUPTED:
        print(f'helixtrack: {line}', file=sys.stderr)
    return code


def _print_rotors(info: dict[str, Any]) -> None:
    """The rotors start-up detection found, and how ground truth was matched to them."""
    if info['detected'] and info['auto_detect']:
        print(f'{len(info["detected"])} rotor(s) detected at start-up{NAMING}:')
    elif info['detected']:   # rotors given: these came from re-detections after a loss
        print(f'{len(info["detected"])} rotor(s) re-detected after a loss (the first '
              're-detection of each):')
    for name, (_, r) in info['detected'].items():
        print(rotor_line(name, r))
    if not info['auto_detect']:
        _say_other_shapes(info)
    match = info['match']
    if match is None:
        return
    if match.distance_px:
        print('ground truth matched by position:')
        for name, true_name in match.pairs.items():
            print(f'  {name} = {true_name} (centres {match.distance_px[name]:.1f} px apart)')
    if match.problem:
        print(f'helixtrack: warning: ground truth: {match.problem}', file=sys.stderr)


def _say_other_shapes(info: dict[str, Any]) -> None:
    """Warn of a rotor re-detected with other blades or direction than --params gives: the
    tracker keeps the given ones, so every value of it was withheld while the detector's
    line named the right ones, and an RPM (review)."""
    from helixtrack_ros.pipeline.config import rotor_shape_problem
    for name, (_, r) in info['detected'].items():
        given = info.get('given_shapes', {}).get(name, (r.blades, r.direction))
        problem = rotor_shape_problem(name, given, (r.blades, r.direction))
        if problem is not None:
            print(f'helixtrack: warning: {problem}', file=sys.stderr)


#: the share of events held at an earlier event's time that gets a warning
CLAMPED_SAID = 0.01
#: input counters the summary names when they are not zero
OTHER_INPUT_COUNTERS = ('packets_dropped', 'seq_restarts', 'seq_repeats', 'packets_duplicate',
                        'packets_late', 'camera_restarts', 'time_gaps', 'packets_corrupt',
                        'stamp_jumps', 'format_changes', 'events_clamped', 'sensor_gaps',
                        'events_mistimed', 'packets_foreign')


def print_track_summary(info: dict[str, Any], skip_s: float) -> None:
    """Print the counts, real-time factor, error table and output paths of a run."""
    c = info['counters']
    print(f'{info["events"]} events in {info["packets"]} packets, '
          f'{info["sensor_s"]:.3f} s of sensor time in {info["wall_s"]:.2f} s wall: '
          f'real-time factor {info["rtf"]:.2f}')
    print(f'decode errors {c["decode_errors"]}, refused packets {c["packets_refused"]}, '
          f'seq gaps {c["seq_gaps"]}, time backwards {c["time_backwards"]}')
    other = [f'{key.replace("_", " ")} {c[key]}' for key in OTHER_INPUT_COUNTERS if c.get(key)]
    change = info.get('format_change')
    if c.get('format_changes') and change is not None:   # (the last one: from, to)
        other = [f'{item} (the last: {change[0]} -> {change[1]})'
                 if item.startswith('format changes') else item for item in other]
    if c.get('packets_corrupt'):
        other = [f'{item} ({c.get("events_corrupt", 0)} events in them dropped)'
                 if item.startswith('packets corrupt') else item for item in other]
    if other:
        print('also: ' + ', '.join(other))
    if c['decode_errors']:
        print(f'helixtrack: warning: {c["decode_errors"]} decode errors (words the decoder '
              f'could not use, or events outside the {info["size"]} sensor): damaged data, '
              'or a header or encoding that does not match it', file=sys.stderr)
    quantum_us = info.get('time_quantum_us', 1)
    if c.get('outputs_coarse_time'):
        print(f'helixtrack: warning: event times are {quantum_us} us apart at the finest '
              '(rounded, or stamped per packet): a rotor whose blade pass is shorter than '
              f'{MIN_QUANTA_PER_PASS * quantum_us} us is withheld (event times too coarse; '
              f'{c["outputs_coarse_time"]} outputs)', file=sys.stderr)
    if c['events_clamped'] > CLAMPED_SAID * max(info['events'], 1):
        print(f'helixtrack: warning: {c["events_clamped"]} events came earlier than events '
              'before them and were held at the latest time: packets out of order (the '
              'recording sorted by something other than sensor time?)', file=sys.stderr)
    if info['interrupted']:
        print('interrupted: outputs hold what was processed so far')
    _print_rotors(info)
    skipped_all = skip_problem(skip_s, info['sensor_s'], 'the events span')
    if info['table'] and skipped_all and not any(e.n for _, e in info['table']):
        print(f'helixtrack: warning: {skipped_all}', file=sys.stderr)
    elif info['table']:
        print_error_table(info['table'], skip_s)
    _print_unmeasured(info)
    out = info['out']
    print(f'outputs: {out / "rpm.csv"}, {out / "results.mcap"}, {out / "rpm.png"}, '
          f'{out / "overlay.png"}')
