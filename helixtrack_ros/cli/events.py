# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack events``: decode a recording's event packets into arrays on disk."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys

import numpy as np

from helixtrack_ros.cli.common import (
    ExitCode,
    Packets,
    damage_line,
    make_decoder_or_fail,
    open_or_fail,
    output_file,
)
from helixtrack_ros.cli.progress import Progress, progress_enabled


def cmd_events(args: argparse.Namespace) -> int:
    """Decode a bag's EventPackets into an npz of arrays."""
    out = output_file(Path(args.out))
    recording = open_or_fail(args.bag, args.topic)
    parts, trig = [], []
    decoder = None
    progress = Progress(recording.count, 'decoding', enabled=progress_enabled(args.quiet))
    t_first, n_events = None, 0
    packets = Packets(recording)
    for i, pkt in enumerate(packets):
        if decoder is None:
            decoder = make_decoder_or_fail(pkt)
        d = decoder.decode(pkt.events, is_bigendian=pkt.is_bigendian, time_base=pkt.time_base)
        parts.append(d.events)
        trig.append((d.trig_t_us, d.trig_value, d.trig_id))
        n_events += len(d.events)
        if len(d.events):
            t_first = int(d.events.t_us[0]) if t_first is None else t_first
            progress.update(i + 1, (int(d.events.t_us[-1]) - t_first) * 1e-6, n_events)
    progress.close()
    from helixtrack_ros.core.events import EventArrays
    ev = EventArrays.concatenate(parts)
    np.savez(out, t_us=ev.t_us, x=ev.x, y=ev.y, p=ev.p,
             trig_t_us=np.concatenate([t[0] for t in trig]) if trig else np.empty(0, np.int64),
             trig_value=np.concatenate([t[1] for t in trig]) if trig else np.empty(0, np.uint8),
             trig_id=np.concatenate([t[2] for t in trig]) if trig else np.empty(0, np.uint8))
    counters = decoder.counters if decoder is not None else {}
    print(f'{len(ev)} events, {sum(len(t[0]) for t in trig)} triggers from {len(trig)} '
          f'packets -> {out}')
    if counters:
        print('decoder counters: ' + ', '.join(f'{k}={v}' for k, v in counters.items() if v))
    if packets.truncated is not None:
        print(f'helixtrack: {damage_line(packets.truncated, "decoded")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    if not len(ev) and not sum(len(t[0]) for t in trig):
        print(f'helixtrack: no event decoded from {len(trig)} packets on '
              f'{recording.topic or recording.path}', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK
