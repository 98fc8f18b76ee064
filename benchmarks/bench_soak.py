#!/usr/bin/env python3
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Soak: the live node fed a looped simulated quadcopter at real pace for many minutes.

The 4 m quadcopter is simulated for one period T with a static camera and
shaft-speed schedules made periodic in T (sweep frequencies on multiples of
1 / T, mean speeds a whole number of turns per T), so that the looped
stream is seamless: sensor time runs on (it wraps its 24 bits every 16.8 s
as a camera's does), each loop's events are re-encoded with their time
shifted by k T, and the RPM and blade phase continue exactly across the
loop boundary.

Reported per minute: the node's resident memory (RSS), its packet-in ->
publish latency p50 / p99 (its own diagnostics), packets sent / published /
refused / dropped, and rotor states other than TRACKING after the first
lock (losses: LOST or STARVED).

Run by hand (idle machine)::

    .venv/bin/python benchmarks/bench_soak.py --minutes 10 --out benchmarks/results/soak.md
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
import shutil
import struct
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test'))

import node_fixtures as F  # noqa: E402, N812

FQN = '/soak/helixtrack'
BASE_NS = 1_700_000_000_000_000_000
TIME_HIGH_US = 4096


def periodic_scene(period_s: float, seed: int):
    """quadcopter_4m, static camera, its RPM schedules made periodic in ``period_s``."""
    from dataclasses import replace

    from helixtrack_ros.sim import make_scenario
    scene = make_scenario('quadcopter_4m', period_s, 0, seed)
    for r in scene.rotors:
        s = r.schedule
        freqs = tuple(max(1.0, round(f * period_s)) / period_s for f in s.sine_freq_hz)
        turns = round(s.knots_rpm[0] / 60.0 * period_s)
        r.schedule = replace(s, knots_rpm=(turns * 60.0 / period_s,), sine_freq_hz=freqs)
    return scene


class Counts:
    """Thread-safe tallies of the node's outputs (nothing kept per message)."""

    def __init__(self, n_rotors: int) -> None:
        self.lock = threading.Lock()
        self.rotors = 0
        self.locked = [False] * n_rotors
        self.not_tracking = [0] * n_rotors
        self.losses = [0] * n_rotors
        self.state = ['?'] * n_rotors
        self.diag: list[dict[str, str]] = []

    def on_health(self, msg) -> None:
        with self.lock:
            for k, st in enumerate(msg.status):
                s = st.values[0].value
                if s == 'TRACKING':
                    self.locked[k] = True
                elif self.locked[k]:
                    self.not_tracking[k] += 1
                    if s in ('LOST', 'STARVED') and self.state[k] not in ('LOST', 'STARVED'):
                        self.losses[k] += 1
                self.state[k] = s

    def on_rotors(self, _msg) -> None:
        with self.lock:
            self.rotors += 1

    def on_diag(self, msg) -> None:
        for st in msg.status:
            if st.name == f'helixtrack: node {FQN}':
                with self.lock:
                    self.diag.append({kv.key: kv.value for kv in st.values})


def _rss_mb(pid: int) -> float:
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    return math.nan


def _subscribe(probe, counts: Counts) -> None:
    """``~/health`` and ``~/rotors`` taken as bytes (the probe shares the node's 2 cores).

    A ``~/health`` message differs from the last one with the same states
    only in its stamp (bytes 4-11), so each distinct rest is deserialized once.
    """
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import QoSProfile
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState
    qos = QoSProfile(depth=1000)
    known: dict[bytes, object] = {}

    def on_health_raw(data: bytes) -> None:
        key = bytes(data[12:])
        msg = known.get(key)
        if msg is None:
            msg = known[key] = deserialize_message(data, DiagnosticArray)
        counts.on_health(msg)

    probe.node.create_subscription(DiagnosticArray, FQN + '/health', on_health_raw, qos,
                                   raw=True)
    probe.node.create_subscription(JointState, FQN + '/rotors', counts.on_rotors, qos, raw=True)
    probe.node.create_subscription(DiagnosticArray, '/diagnostics', counts.on_diag, qos)


def _minute_row(minute: int, rss: list[float], counts: Counts, sent: int, diag0: int) -> str:
    with counts.lock:
        diags = counts.diag[diag0:]
        last = counts.diag[-1] if counts.diag else {}
        p50 = [float(d.get('latency_ms_p50', 'nan')) for d in diags]
        p99 = [float(d.get('latency_ms_p99', 'nan')) for d in diags]
        p50 = [v for v in p50 if math.isfinite(v)]
        p99 = [v for v in p99 if math.isfinite(v)]
        published = counts.rotors
        losses = sum(counts.losses)
        not_tracking = sum(counts.not_tracking)
    return (f'| {minute} | {np.median(rss):.0f} | {np.median(p50) if p50 else math.nan:.2f} | '
            f'{np.median(p99) if p99 else math.nan:.2f} | {sent} | {published} | '
            f'{last.get("packets_refused", "?")} | {last.get("packets_dropped", "?")} | '
            f'{not_tracking} | {losses} |')


def _account(counts: Counts, sent: int, primed: int, timeout_s: float = 60.0) -> str:
    """Wait until the node has seen every packet sent, taken or counted as dropped (or
    ``timeout_s``); the closing accounting line, from the node's own counters.

    The probe's count of ``~/rotors`` messages is printed beside it: a reliable
    subscriber can still miss messages that left the publisher's keep-last
    history before they were acknowledged, so it may fall short under load.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        with counts.lock:
            last = counts.diag[-1] if counts.diag else {}
            seen_by_probe = counts.rotors
        taken = int(last.get('packets', 0)) - primed     # (the priming packets came first)
        refused = int(last.get('packets_refused', 0))
        dropped = int(last.get('packets_dropped', 0))
        if taken + dropped >= sent or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    missing = sent - taken - dropped
    tail = '' if missing == 0 else f'; {missing} unaccounted'
    return (f'\naccounting (node counters): {sent} packets sent = {taken - refused} tracked '
            f'and published + {refused} refused + {dropped} dropped{tail}; the probe received '
            f'{seen_by_probe} ~/rotors messages')


def _period_us(period_s: float) -> int:
    """The loop period rounded to whole EVT3 TIME_HIGH steps (4096 us)."""
    return max(1, round(period_s * 1e6 / TIME_HIGH_US)) * TIME_HIGH_US


def _stream(args: argparse.Namespace):
    """The looped scene, its events (thinned) and their 1 ms packet cuts."""
    from helixtrack_ros.codecs.evt3_encoder import packetize
    from helixtrack_ros.sim import Simulator

    scene = periodic_scene(_period_us(args.period) * 1e-6, args.seed)
    ev = Simulator(scene, seed=args.seed).all_events()
    if args.thin > 1:
        ev = ev.every(args.thin)
    return scene, ev, packetize(ev.t_us, 1000)


class LoopPackets:
    """The loop's packets as serialized EventPackets, encoded once and patched per loop.

    Encoding and serializing each packet cost the player about 250 us per
    1 ms packet on this VM, a quarter of a core taken from the node it
    measures. Each packet here starts with its own TIME_HIGH word (encoder
    reset), and the period is a whole number of TIME_HIGH steps, so loop
    ``k``'s events differ from loop 0's only in their TIME_HIGH words
    (+ k * period / 4096, modulo 12 bits: the camera's 24-bit wrap), and its
    messages only in stamp and seq.
    """

    def __init__(self, ev, cuts, period_us: int, width: int, height: int) -> None:
        from event_camera_msgs.msg import EventPacket
        from rclpy.serialization import serialize_message

        from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
        enc = Evt3Encoder()
        words, self.bounds = [], [0]
        for a, b in cuts:
            enc.reset()
            words.append(np.frombuffer(enc.encode(ev.slice(a, b)), '<u2'))
            self.bounds.append(self.bounds[-1] + len(words[-1]))
        self.words = np.concatenate(words)
        self.high = np.flatnonzero((self.words >> 12) == 8)
        self.high0 = (self.words[self.high] & 0x0FFF).astype(np.int64)
        self.step = period_us // TIME_HIGH_US
        self.t_first = [int(ev.t_us[a]) for a, _ in cuts]
        msg = EventPacket()
        msg.header.frame_id = 'camera'
        msg.width, msg.height, msg.encoding = width, height, 'evt3'
        msg.seq = 0x0102030405060708
        tpl = serialize_message(msg)          # events empty: the bytes end with its count
        self.seq_at = tpl.index((0x0102030405060708).to_bytes(8, 'little'))
        self.prefix = bytearray(tpl[:-4])

    def set_loop(self, k: int) -> None:
        """Write loop ``k``'s TIME_HIGH words."""
        self.words[self.high] = 0x8000 | ((self.high0 + k * self.step) & 0x0FFF)

    def message(self, i: int, stamp_ns: int, seq: int) -> bytes:
        """Packet ``i`` of the current loop, serialized."""
        sec, nsec = divmod(stamp_ns, 1_000_000_000)
        struct.pack_into('<iI', self.prefix, 4, sec, nsec)
        struct.pack_into('<Q', self.prefix, self.seq_at, seq)
        ev = self.words[self.bounds[i]:self.bounds[i + 1]].tobytes()
        return b''.join((self.prefix, struct.pack('<I', len(ev)), ev, bytes(-len(ev) % 4)))


def _table_head(args: argparse.Namespace, n_events: int) -> list[str]:
    return [f'command: bench_soak.py {" ".join(sys.argv[1:])}',
            f'stream: quadcopter_4m, static camera, {n_events / args.period / 1e6:.1f} M '
            f'events/s, looped every {_period_us(args.period) * 1e-6:.6f} s',
            '', '| minute | node RSS [MB] | latency p50 [ms] | latency p99 [ms] | packets '
            'sent | published | refused | dropped | rotor outputs not TRACKING | losses |',
            '|---|---|---|---|---|---|---|---|---|---|']


def run(args: argparse.Namespace) -> list[str]:
    from helixtrack_ros.io.params_file import rotor_params_tree

    scene, ev, cuts = _stream(args)
    period_us = _period_us(args.period)
    packets = LoopPackets(ev, cuts, period_us, scene.width, scene.height)
    tmp = Path(tempfile.mkdtemp(prefix='bench_soak_'))
    tree = rotor_params_tree(scene.initial_rotor_params())
    tree['realtime_stride'] = True
    tree['diagnostics_period_s'] = 1.0
    params = F.write_params_file(tmp / 'params.yaml', tree)
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/soak',
                          '-r', '~/events:=/soak/events'], log_dir=tmp)
    probe = F.Probe('soak_probe')
    counts = Counts(len(scene.rotors))
    lines = _table_head(args, len(ev))
    print('\n'.join(lines), flush=True)
    try:
        _subscribe(probe, counts)
        pub = probe.events_publisher('/soak/events')
        probe.wait_matched(pub, [FQN + '/rotors', '/diagnostics'], timeout=120)
        seq = probe.prime(pub, lambda: bool(counts.diag) and int(
            counts.diag[-1].get('packets', 0)) > 0, start_ns=BASE_NS - 10**9)
        primed = seq
        wall0 = time.perf_counter()
        end_s = args.minutes * 60.0
        sent, minute, rss, diag0 = 0, 1, [], len(counts.diag)
        next_rss = 0.0
        row_due = None
        loop = 0
        while True:
            shift = loop * period_us
            packets.set_loop(loop)
            for i, t0 in enumerate(packets.t_first):
                t_first = t0 + shift
                target = wall0 + t_first * 1e-6
                now = time.perf_counter()
                if target > now:
                    time.sleep(target - now)
                pub.publish(packets.message(i, BASE_NS + t_first * 1000, seq))
                seq += 1
                sent += 1
                elapsed = time.perf_counter() - wall0
                if elapsed >= next_rss:
                    rss.append(_rss_mb(proc.proc.pid))
                    next_rss += 5.0
                if row_due is None and elapsed >= min(60.0 * minute, end_s):
                    # the minute's row once its last diagnostics are in, 1.2 s later;
                    # the player never pauses for it (a pause sent the next 1.2 s of
                    # packets in one burst)
                    row_due = elapsed + 1.2
                if row_due is not None and (elapsed >= row_due or elapsed >= end_s):
                    if elapsed >= end_s:
                        time.sleep(1.2)
                    row = _minute_row(minute, rss, counts, sent, diag0)
                    lines.append(row)
                    print(row, flush=True)
                    minute += 1
                    rss, diag0, row_due = [], len(counts.diag), None
                if elapsed >= end_s and row_due is None and minute > math.ceil(end_s / 60.0):
                    lines.append(_account(counts, sent, primed))
                    print(lines[-1], flush=True)
                    shutil.rmtree(tmp, ignore_errors=True)   # (kept when anything failed)
                    return lines
            loop += 1
    finally:
        probe.close()
        proc.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--minutes', type=float, default=10.0)
    ap.add_argument('--period', type=float, default=2.0, help='loop period [s]')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--thin', type=int, default=1,
                    help='keep every thin-th event (a sensor with fewer events per edge)')
    ap.add_argument('--out', type=Path, default=None, help='append the table to this file')
    args = ap.parse_args(argv)
    lines = run(args)
    if args.out is not None:
        with args.out.open('a') as fh:
            fh.write('\n'.join(lines) + '\n\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
