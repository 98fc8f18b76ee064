# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``python3 -m helixtrack_ros.warmup``: compile every numba kernel once, cached on disk.

A kernel compiles on its first use after an install (up to a minute for the
tracker alone; more on a busy machine) and numba keeps the machine code in
``__pycache__`` beside the sources. Running this once after ``pip install``
or ``colcon build`` (``scripts/setup.sh`` does) makes the node's first start,
its first detection and the first ``helixtrack`` command load code instead of
compiling it. Later runs only load the cache (a few seconds).
"""

from __future__ import annotations

from collections.abc import Callable
import sys
import time

import numpy as np


def _tracker() -> None:
    from helixtrack_ros.pipeline import TrackingPipeline
    TrackingPipeline.warmup()


def _decoders() -> None:
    from helixtrack_ros.codecs import SUPPORTED_ENCODINGS, make_decoder
    for encoding in SUPPORTED_ENCODINGS:
        # writable arrays and read-only ones (bytes from a bag or DDS) compile apart
        for payload in (np.zeros(16, np.uint8), bytes(16)):
            make_decoder(encoding, 1280, 720).decode(payload)


def _simulator_and_detection() -> None:
    """A 30 ms simulated rotor, EVT3-encoded and detected (what demo and auto_detect use)."""
    from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
    from helixtrack_ros.core.detection import detect_rotors
    from helixtrack_ros.sim import Simulator, make_scenario
    scene = make_scenario('lone_constant', 0.03, seed=0)
    events = Simulator(scene, seed=0).all_events()
    Evt3Encoder().encode(events)
    detect_rotors(events, scene.width, scene.height)


#: What is compiled, in order: (name, step).
STEPS: tuple[tuple[str, Callable[[], None]], ...] = (
    ('tracker and EVT3 decoder', _tracker),
    ('every event decoder', _decoders),
    ('simulator, EVT3 encoder and rotor detection', _simulator_and_detection),
)


def warm(say: Callable[[str], None] = print) -> dict[str, float]:
    """Run every step of :data:`STEPS`; seconds per step (a line each through ``say``)."""
    seconds = {}
    for name, step in STEPS:
        t0 = time.perf_counter()
        step()
        seconds[name] = time.perf_counter() - t0
        say(f'helixtrack warm-up: {name} ready in {seconds[name]:.1f} s')
    return seconds


def main() -> int:
    """Compile (or load) every kernel; exit code 0."""
    print('helixtrack warm-up: compiling the numba kernels into their on-disk cache '
          '(minutes the first time after an install, seconds afterwards)', flush=True)
    total = sum(warm(lambda line: print(line, flush=True)).values())
    print(f'helixtrack warm-up: done in {total:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
