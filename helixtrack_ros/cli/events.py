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
import os
from pathlib import Path
import sys
from typing import Any

import numpy as np

from helixtrack_ros.cli.common import (
    CliError,
    ExitCode,
    Packets,
    damage_line,
    open_or_fail,
    output_dir,
    output_file,
    outputs_not_input,
)
from helixtrack_ros.cli.progress import Progress, progress_enabled
from helixtrack_ros.io.npz_events import CHUNK_NAME

#: a chunk file of ``events --out DIR`` holds at most this many events (about 52 MB)
CHUNK_EVENTS = 4_000_000


def _save_whole(path: Path, **arrays: Any) -> None:
    """Write an npz file whole or not at all: into a hidden file beside it, then renamed.
    Ctrl-C or a full disk while writing left a chunk cut short, whose ``x`` no longer
    loaded, among whole ones (review)."""
    part = path.with_name(f'.{path.name}.part')
    try:
        with part.open('wb') as fh:
            np.savez(fh, **arrays)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


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
        _save_whole(path, t_us=ev.t_us, x=ev.x, y=ev.y, p=ev.p, width=width, height=height,
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


class _Checked:
    """Packets decoded and checked as ``track`` checks them (:class:`PacketIntake`): a
    packet it refuses (garbage, a leap in time) is left out. Found by a review: random
    bytes labelled evt3 came out as 1.5 M events and 0.6 M triggers, exit 0."""

    def __init__(self) -> None:
        from helixtrack_ros.core.events import EventBuffer
        from helixtrack_ros.pipeline.intake import PacketIntake
        self._intake = PacketIntake({})
        self._buffer = EventBuffer(1 << 20)
        self.n_packets = self.refused = 0
        self.first_error: str | None = None
        self._t_first: int | None = None
        self.sensor_s = 0.0

    def take(self, pkt: Any) -> Any:
        """One packet: its decoded events and triggers (a copy), or None (refused, left
        out, or empty)."""
        from helixtrack_ros.codecs.types import DecodedPacket
        from helixtrack_ros.core.events import EventArrays
        self.n_packets += 1
        self._buffer.reset()
        adm = self._intake.admit(self._buffer, pkt)
        if adm.error is not None:
            self.refused += 1
            self.first_error = self.first_error or adm.error
            return None
        if adm.dropped is not None or adm.events is None:
            return None
        d = self._intake.last_decoded
        ev = adm.events
        ev = EventArrays(ev.t_us.copy(), ev.x.copy(), ev.y.copy(), ev.p.copy())
        if len(ev):
            self._t_first = int(ev.t_us[0]) if self._t_first is None else self._t_first
            self.sensor_s = (int(ev.t_us[-1]) - self._t_first) * 1e-6
        return DecodedPacket(ev, d.trig_t_us.copy(), d.trig_value.copy(), d.trig_id.copy())

    def decoder_counters(self) -> dict[str, int]:
        """The decoder's counters (empty before any packet)."""
        decoder = self._intake.decoder
        return dict(decoder.counters) if decoder is not None else {}


def _chunk_paths(out: Path, recording: Path) -> list[Path]:
    """The chunk files of ``out`` that could be the recording (its name, or the first)."""
    digits = ''.join(ch for ch in recording.name if ch.isdigit())
    is_chunk = bool(digits) and recording.name == CHUNK_NAME.format(int(digits))
    return [out / (recording.name if is_chunk else CHUNK_NAME.format(0))]


def cmd_events(args: argparse.Namespace) -> int:
    """Decode a recording's packets into an npz file, or chunk files in a directory."""
    single = args.out.lower().endswith('.npz')
    tachs = _tachometers(args.tachometer)
    out = output_file(Path(args.out)) if single else output_dir(Path(args.out))
    recording = open_or_fail(args.bag, args.topic)
    if not single and out.resolve() == Path(recording.path).resolve():
        # (a directory of chunks read back: writing there would delete them first)
        raise CliError(f'{out} holds the recording read: write the chunks elsewhere')
    outputs_not_input([out] if single else _chunk_paths(out, Path(recording.path)),
                      Path(recording.path))
    sink = _NpzSink(out, None if single else CHUNK_EVENTS,
                    (recording.width, recording.height))
    progress = Progress(recording.count, 'decoding', enabled=progress_enabled(args.quiet))
    packets = Packets(recording)
    intake = _Checked()
    pulses = _Pulses(tachs)
    interrupted = False
    try:
        for pkt in packets:
            decoded = intake.take(pkt)
            if decoded is not None:
                sink.add(decoded)
                pulses.add(decoded)
                progress.update(intake.n_packets, intake.sensor_s, sink.n_events)
    except KeyboardInterrupt:
        # (the outputs hold what was decoded, as after track's Ctrl-C: a single file
        # interrupted was not written at all; review)
        interrupted = True
    progress.close()
    written = sink.close()
    counters = intake.decoder_counters()
    print(f'{sink.n_events} events, {sink.n_triggers} triggers from {intake.n_packets} '
          f'packets -> {written}')
    truth_rows = pulses.write(_truth_path(out, single)) if tachs else None
    if counters:
        print('decoder counters: ' + ', '.join(f'{k}={v}' for k, v in counters.items() if v))
    n_packets = intake.n_packets
    if intake.refused:
        print(f'helixtrack: warning: {intake.refused} of {n_packets} packets refused as '
              f'track refuses them, their events left out (the first: {intake.first_error})',
              file=sys.stderr)
    if interrupted:
        print('helixtrack: interrupted: the outputs hold the events decoded so far',
              file=sys.stderr)
        return ExitCode.INTERRUPTED
    if packets.truncated is not None:
        print(f'helixtrack: {damage_line(packets.truncated, "decoded")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    if not sink.n_events and not sink.n_triggers:
        print(f'helixtrack: no event decoded from {n_packets} packets on '
              f'{recording.topic or recording.path}', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    if truth_rows == 0:
        print('helixtrack: no tachometer pulses to measure a shaft speed from: no ground '
              'truth written', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK


def _tachometers(texts: list[str]) -> list[Any]:
    """The ``--tachometer`` specs, one rotor per channel; CliError in one line."""
    from helixtrack_ros.tachometer import parse_tachometer
    try:
        specs = [parse_tachometer(t) for t in texts]
    except ValueError as exc:
        raise CliError(str(exc)) from None
    for key in ('channel', 'rotor'):
        seen = [getattr(s, key) for s in specs]
        dup = sorted({v for v in seen if seen.count(v) > 1})
        if dup:
            raise CliError(f'--tachometer: {key} {dup[0]} given twice')
    return specs


def _truth_path(out: Path, single: bool) -> Path:
    """Where the tachometer truth goes: beside FILE.npz, or in the chunk directory, as
    ``batch`` looks for it."""
    return out.with_name(out.stem + '.ground_truth.csv') if single else out / 'ground_truth.csv'


class _Pulses:
    """The trigger events of the tachometer channels, kept while decoding, and the ground
    truth made from them (:func:`~helixtrack_ros.tachometer.rpm_from_pulses`)."""

    def __init__(self, specs: list[Any]) -> None:
        self.specs = specs
        self._channels = np.array([s.channel for s in specs], np.int64)
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, decoded: Any) -> None:
        """Keep one packet's trigger events of the tachometer channels."""
        if self.specs and len(decoded.trig_t_us):
            keep = np.isin(decoded.trig_id, self._channels)
            self._parts.append((decoded.trig_t_us[keep], decoded.trig_value[keep],
                                decoded.trig_id[keep]))

    def write(self, path: Path) -> int:
        """Write ``t_us,rotor,rpm`` rows to ``path`` and say per channel what was measured;
        the number of rows (0: no file written)."""
        from helixtrack_ros.tachometer import rpm_from_pulses
        t, v, k = (np.concatenate([p[i] for p in self._parts]) if self._parts
                   else np.zeros(0, np.int64) for i in range(3))
        rows = []
        for spec in self.specs:
            got = rpm_from_pulses(t, v, k, spec)
            rows += [(int(a), spec.rotor, float(b)) for a, b in zip(got.t_us, got.rpm)]
            mean = f', mean {np.mean(got.rpm):.1f} RPM' if len(got.rpm) else ''
            print(f'tachometer channel {spec.channel} -> {spec.rotor}: {got.edges} rising '
                  f'edges, {len(got.rpm)} speeds{mean}; {got.bounces} bounces and '
                  f'{got.outliers} intervals off their neighbours left out')
        if not rows:
            return 0
        rows.sort()
        with output_file(path).open('w', newline='') as fh:
            fh.write('t_us,rotor,rpm\n')
            fh.writelines(f'{a},{r},{b:.4f}\n' for a, r, b in rows)
        print(f'ground truth: {path}')
        return len(rows)
