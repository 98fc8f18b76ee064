# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack events``: decode a recording's event packets into arrays on disk.

``--out FILE.npz`` writes one npz (every event in memory until the end);
any other ``--out`` is a directory that receives ``events_000000.npz``,
``events_000001.npz``, ... of at most :data:`CHUNK_EVENTS` events each as
decoding goes, so memory stays bounded however long the recording is.
Every file has the arrays ``t_us``, ``x``, ``y``, ``p``, ``trig_t_us``,
``trig_value``, ``trig_id`` and the sensor's ``width`` and ``height``;
chunks concatenate in name order. ``helixtrack track FILE.npz`` reads one.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
from typing import Any

import numpy as np

from helixtrack_ros.cli.common import (
    ExitCode,
    Packets,
    damage_line,
    make_decoder_or_fail,
    open_or_fail,
    output_dir,
    output_file,
    outputs_not_input,
)
from helixtrack_ros.cli.progress import Progress, progress_enabled

#: a chunk file of ``events --out DIR`` holds at most this many events (about 52 MB)
CHUNK_EVENTS = 4_000_000
#: the name of chunk file k of ``events --out DIR``
CHUNK_NAME = 'events_{:06d}.npz'


class _NpzSink:
    """Decoded packets to one npz file, or (``chunk_events``) to numbered chunk files."""

    def __init__(self, out: Path, chunk_events: int | None,
                 size: tuple[int | None, int | None]) -> None:
        self.out = out
        self.chunk_events = chunk_events
        self.size = size
        self.files: list[Path] = []
        self.n_events = self.n_triggers = 0
        self._parts: list[Any] = []
        self._trig: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._buffered = 0
        if chunk_events is not None:   # (a rerun must not leave chunks of the last one)
            for old in out.glob('events_*.npz'):
                old.unlink()

    def add(self, decoded: Any) -> None:
        """Keep one packet's events and triggers; write a chunk once enough are kept."""
        self._parts.append(decoded.events)
        self._trig.append((decoded.trig_t_us, decoded.trig_value, decoded.trig_id))
        self._buffered += len(decoded.events)
        self.n_events += len(decoded.events)
        self.n_triggers += len(decoded.trig_t_us)
        if self.chunk_events is not None and self._buffered >= self.chunk_events:
            self._flush()

    def _flush(self) -> None:
        from helixtrack_ros.core.events import EventArrays
        if self.chunk_events is None:
            path = self.out
        elif self._parts:
            path = self.out / CHUNK_NAME.format(len(self.files))
        else:
            return
        ev = EventArrays.concatenate(self._parts)
        trig = self._trig
        width, height = (int(v or 0) for v in self.size)
        np.savez(path, t_us=ev.t_us, x=ev.x, y=ev.y, p=ev.p, width=width, height=height,
                 trig_t_us=np.concatenate([t[0] for t in trig]) if trig
                 else np.empty(0, np.int64),
                 trig_value=np.concatenate([t[1] for t in trig]) if trig
                 else np.empty(0, np.uint8),
                 trig_id=np.concatenate([t[2] for t in trig]) if trig
                 else np.empty(0, np.uint8))
        self.files.append(path)
        self._parts, self._trig, self._buffered = [], [], 0

    def close(self) -> str:
        """Write what is left; say what was written (the path, or the directory and files)."""
        self._flush()
        if self.chunk_events is None:
            return str(self.out)
        names = (f'{self.files[0].name} .. {self.files[-1].name}' if len(self.files) > 1
                 else self.files[0].name if self.files else 'no file')
        return f'{self.out}{"" if str(self.out).endswith("/") else "/"} ({names})'


def _chunk_paths(out: Path, recording: Path) -> list[Path]:
    """The chunk files of ``out`` that could be the recording (its name, or the first)."""
    digits = ''.join(ch for ch in recording.name if ch.isdigit())
    is_chunk = bool(digits) and recording.name == CHUNK_NAME.format(int(digits))
    return [out / (recording.name if is_chunk else CHUNK_NAME.format(0))]


def cmd_events(args: argparse.Namespace) -> int:
    """Decode a recording's packets into an npz file, or chunk files in a directory."""
    single = args.out.lower().endswith('.npz')
    out = output_file(Path(args.out)) if single else output_dir(Path(args.out))
    recording = open_or_fail(args.bag, args.topic)
    outputs_not_input([out] if single else _chunk_paths(out, Path(recording.path)),
                      Path(recording.path))
    sink = _NpzSink(out, None if single else CHUNK_EVENTS,
                    (recording.width, recording.height))
    decoder = None
    progress = Progress(recording.count, 'decoding', enabled=progress_enabled(args.quiet))
    t_first = None
    packets = Packets(recording)
    n_packets = 0
    for pkt in packets:
        if decoder is None:
            decoder = make_decoder_or_fail(pkt)
        d = decoder.decode(pkt.events, is_bigendian=pkt.is_bigendian, time_base=pkt.time_base)
        sink.add(d)
        n_packets += 1
        if len(d.events):
            t_first = int(d.events.t_us[0]) if t_first is None else t_first
            progress.update(n_packets, (int(d.events.t_us[-1]) - t_first) * 1e-6,
                            sink.n_events)
    progress.close()
    written = sink.close()
    counters = decoder.counters if decoder is not None else {}
    print(f'{sink.n_events} events, {sink.n_triggers} triggers from {n_packets} '
          f'packets -> {written}')
    if counters:
        print('decoder counters: ' + ', '.join(f'{k}={v}' for k, v in counters.items() if v))
    if packets.truncated is not None:
        print(f'helixtrack: {damage_line(packets.truncated, "decoded")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    if not sink.n_events and not sink.n_triggers:
        print(f'helixtrack: no event decoded from {n_packets} packets on '
              f'{recording.topic or recording.path}', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK
