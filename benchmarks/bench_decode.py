# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Benchmark of event decoding (EVT 3.0, EVT 2.0, libcaer, libcaer_cmp) on driver-like packets.

A synthetic propeller scene (two blades, default 10,000 shaft RPM, about
32 M events/s, the edges sweeping the image like the real sensor sees them)
is encoded with :class:`Evt3Encoder` in ~1 ms packets as the metavision
driver publishes them, then decoded packet by packet with one decoder.
The same events are also encoded as EVT 2.0, libcaer and libcaer_cmp
packets of the same length and decoded the same way (``--encodings``).
Prints M events/s per core (best of several runs after a warm-up).

Usage::

    python benchmarks/bench_decode.py [--seconds 1.0] [--rate-mev 32] [--repeat 5]
                                      [--encodings evt2,evt21,libcaer,libcaer_cmp]
                                      [--bag test/data/test_data_evt3_trigger]

With ``--bag`` the EventPackets of a recorded bag are decoded as well.
"""

import argparse
import time

import numpy as np

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.evt2_encoder import Evt2Encoder
from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
from helixtrack_ros.codecs.evt21_encoder import Evt21Encoder
from helixtrack_ros.codecs.libcaer_encoder import encode_libcaer, encode_libcaer_cmp
from helixtrack_ros.core.events import EventArrays


def propeller_events(seconds: float, rate_mev: float, rpm: float = 10_000.0,
                     width: int = 1280, height: int = 720, seed: int = 0) -> EventArrays:
    """Events of two rotating blades' edges plus 5 % background noise.

    Within one microsecond the events are ordered by row, then polarity,
    then column, as a row-scanning sensor reads them out.
    """
    rng = np.random.default_rng(seed)
    n = int(seconds * rate_mev * 1e6)
    t = np.sort(rng.integers(0, int(seconds * 1e6), n)) + 1_000_000
    theta = 2 * np.pi * rpm / 60.0 * t * 1e-6
    blade = rng.integers(0, 2, n)
    lead = rng.random(n) < 0.5  # leading edge ON, trailing edge OFF
    ang = theta + np.pi * blade + np.where(lead, 0.0, 0.25)
    r = rng.uniform(40.0, 300.0, n)
    cx, cy = 640.0, 360.0
    x = cx + r * np.cos(ang) + rng.normal(0.0, 0.7, n)
    y = cy + r * np.sin(ang) + rng.normal(0.0, 0.7, n)
    noise = rng.random(n) < 0.05
    x[noise] = rng.uniform(0, width, noise.sum())
    y[noise] = rng.uniform(0, height, noise.sum())
    x = np.clip(np.rint(x), 0, width - 1).astype(np.uint16)
    y = np.clip(np.rint(y), 0, height - 1).astype(np.uint16)
    p = np.where(noise, rng.integers(0, 2, n), lead).astype(np.uint8)
    order = np.lexsort((x, p, y, t))
    return EventArrays(t[order], x[order], y[order], p[order])


def main() -> None:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seconds', type=float, default=1.0, help='sensor time [s]')
    ap.add_argument('--rate-mev', type=float, default=32.0, help='event rate [M events/s]')
    ap.add_argument('--packet-us', type=int, default=1000, help='packet length [us]')
    ap.add_argument('--repeat', type=int, default=5, help='timed runs (best is reported)')
    ap.add_argument('--bag', help='also decode the EventPackets of this bag')
    ap.add_argument('--encodings', default='evt2,evt21,libcaer,libcaer_cmp',
                    help='other encodings to decode the same events in (comma-separated)')
    args = ap.parse_args()

    ev = propeller_events(args.seconds, args.rate_mev)
    ranges = packetize(ev.t_us, args.packet_us)
    n = len(ev)

    enc_times = []
    payloads: list[bytes] = []
    for _ in range(max(args.repeat // 2, 1) + 1):  # first run compiles
        enc = Evt3Encoder()
        t0 = time.perf_counter()
        payloads = [enc.encode(ev.slice(a, b)) for a, b in ranges]
        enc_times.append(time.perf_counter() - t0)
    n_words = sum(len(pl) for pl in payloads) // 2
    codes = np.bincount(np.concatenate([np.frombuffer(pl, '<u2') for pl in payloads]) >> 12,
                        minlength=16)

    dec_times = []
    for _ in range(args.repeat + 1):
        dec = make_decoder('evt3', 1280, 720)
        t0 = time.perf_counter()
        for pl in payloads:
            dec.decode(pl)
        dec_times.append(time.perf_counter() - t0)
    assert dec.counters['events'] == n, 'decoder lost events'

    best_dec = min(dec_times[1:])
    best_enc = min(enc_times[1:])
    print(f'events: {n:,} in {len(payloads):,} packets of {args.packet_us} us '
          f'({n / len(payloads):,.0f} events/packet)')
    print(f'words: {n_words:,} ({n_words / n:.2f} per event); ADDR_X {codes[2]:,}, '
          f'VECT_12 {codes[4]:,}, VECT_8 {codes[5]:,}, ADDR_Y {codes[0]:,}, '
          f'TIME_LOW {codes[6]:,}')
    print(f'decode evt3       : {n / best_dec / 1e6:7.1f} M events/s  '
          f'({best_dec * 1e9 / n:.2f} ns/event, best of {args.repeat})')
    print(f'encode: {n / best_enc / 1e6:7.1f} M events/s  ({best_enc * 1e9 / n:.2f} ns/event)')
    for name in filter(None, args.encodings.split(',')):
        bench_encoding(name, ev, ranges, args.repeat)
    if args.bag:
        bench_bag(args.bag, args.repeat)


def encode_packets(name: str, ev: EventArrays,
                   ranges: list[tuple[int, int]]) -> list[tuple[bytes, int]]:
    """The events as ``(payload, time_base_ns)`` packets of one encoding."""
    if name in ('evt2', 'evt21'):
        enc = Evt2Encoder() if name == 'evt2' else Evt21Encoder()
        return [(enc.encode(ev.slice(a, b)), 0) for a, b in ranges]
    if name == 'libcaer':
        return [encode_libcaer(ev.slice(a, b)) for a, b in ranges]
    if name == 'libcaer_cmp':
        return [encode_libcaer_cmp(ev.slice(a, b)) for a, b in ranges]
    raise ValueError(f'no encoder for {name!r}')


def bench_encoding(name: str, ev: EventArrays, ranges: list[tuple[int, int]],
                   repeat: int) -> None:
    """Decode the events encoded as ``name`` packet by packet; print the rate."""
    packets = encode_packets(name, ev, ranges)
    n = len(ev)
    times = []
    for _ in range(repeat + 1):  # the first run compiles
        dec = make_decoder(name, 1280, 720)
        t0 = time.perf_counter()
        for pl, tb in packets:
            dec.decode(pl, False, tb)
        times.append(time.perf_counter() - t0)
    assert dec.counters['events'] == n, f'{name} decoder lost events'
    best = min(times[1:])
    n_bytes = sum(len(pl) for pl, _ in packets)
    print(f'decode {name:11s}: {n / best / 1e6:7.1f} M events/s  ({best * 1e9 / n:.2f} ns/event, '
          f'{n_bytes / n:.2f} bytes/event, best of {repeat})')


def bench_bag(bag: str, repeat: int) -> None:
    """Decode all EventPackets of a bag (payloads in memory) and print the rate."""
    from helixtrack_ros.io.bags import iter_event_packets

    recs = list(iter_event_packets(bag))
    if not recs:
        print(f'bag {bag}: no EventPackets')
        return
    times = []
    for _ in range(repeat + 1):
        dec = make_decoder(recs[0].encoding, recs[0].width, recs[0].height)
        t0 = time.perf_counter()
        for r in recs:
            dec.decode(r.events, r.is_bigendian, r.time_base)
        times.append(time.perf_counter() - t0)
    c = dec.counters
    best = min(times[1:])
    print(f'bag {bag}: {c["events"]:,} events in {len(recs)} packets, '
          f'{c["words"] / max(c["events"], 1):.2f} words per event: '
          f'{c["events"] / best / 1e6:.1f} M events/s ({c["words"] / best / 1e6:.0f} M words/s)')


if __name__ == '__main__':
    main()
