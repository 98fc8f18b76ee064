# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A test-only stand-in for :mod:`helixtrack_ros.pipeline` (:class:`FakePipeline`).

With it the ROS plumbing of the node is tested on its own: :func:`standin_main`
runs the node in a child process with this pipeline.
"""

from __future__ import annotations

import math
from typing import Any

import node_env  # noqa: F401  (sets the local-only DDS environment first)
import numpy as np


def _fake_parameters() -> dict[str, Any]:
    from helixtrack_ros.pipeline.config import ParamSpec
    return {
        'tracker.q_jerk': ParamSpec(400.0, 'phase EKF process noise', 'rad^2/s^5', 0.0, None),
        'tracker.kappa': ParamSpec(22.0, 'von Mises concentration', '', 0.1, 1000.0),
        'tracker.min_events': ParamSpec(2000, 'events before a pose solve', '', 1, 1_000_000),
        'tracker.estimate_pose': ParamSpec(True, 'run the pose solver'),
        'realtime_stride': ParamSpec(True, 'stride when behind'),
        'max_stride': ParamSpec(8, 'largest stride', '', 1, 64),
    }


FAKE_PARAMETERS: dict[str, Any] = _fake_parameters()


class FakeRotor:
    """Attribute bag shaped like ``RotorOutput``."""

    def __init__(self, **kw: Any) -> None:
        self.state = 0      # RotorState.TRACKING, no health cause
        self.cause = 0
        self.__dict__.update(kw)


class FakeResult:
    """Attribute bag shaped like ``PacketResult``."""

    def __init__(self, stamp_ns: int = 0, t_us: int = 0, n_events: int = 0,
                 rotors: list | None = None, error: str | None = None) -> None:
        self.stamp_ns, self.t_us, self.n_events = stamp_ns, t_us, n_events
        self.rotors = rotors or []
        self.error = error
        self.events = None
        self.dropped = None


class FakePipeline:
    """Stand-in for ``TrackingPipeline`` (test only): constant rotors, no decoding.

    Counts packets and sequence numbers with the pipeline's own
    :class:`~helixtrack_ros.pipeline.sequence.SeqCounter`. Accepts encoding
    ``evt3`` only. Each payload byte pair counts as one
    event; an odd length counts a decode error. Sensor time is the header
    stamp in microseconds, so output stamps equal input stamps (to 1 us).
    Rotor ``k`` turns at its configured RPM; its homography is the circle of
    the configured centre and radius.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        from helixtrack_ros.pipeline.sequence import SeqCounter
        self.params = dict(params)
        self.rotor_names = list(params['rotor_names'])
        self.tracker = {k[len('tracker.'):]: v for k, v in params.items()
                        if k.startswith('tracker.')}
        self.counters = {'packets_refused': 0, 'decode_errors': 0, 'time_backwards': 0,
                         'events_in': 0}
        self.sequence = SeqCounter(self.counters)
        self.format_change: tuple[str, str] | None = None   # (one encoding, one size)
        self._last_t: int | None = None
        self.closed = False
        self.batches: list[int] = []

    def process_packet(self, payload: Any, encoding: str, width: int, height: int,
                       is_bigendian: bool, stamp_ns: int, seq: int,
                       time_base: int = 0) -> FakeResult:
        self.sequence.count(int(seq))
        if encoding != 'evt3':
            self.counters['packets_refused'] += 1
            return FakeResult(error=f'unsupported encoding "{encoding}"')
        n = len(payload)
        if n % 2:
            self.counters['decode_errors'] += 1
        t_us = int(stamp_ns) // 1000
        if self._last_t is not None and t_us < self._last_t:
            self.counters['time_backwards'] += 1
        self._last_t = t_us
        self.counters['events_in'] += n // 2
        rotors = []
        for name in self.rotor_names:
            pre = f'rotors.{name}.'
            rpm = float(self.params[pre + 'rpm'])
            cx, cy = self.params[pre + 'center_px']
            r = float(self.params[pre + 'radius_px'])
            omega = 2 * math.pi * rpm / 60.0 * (1 if self.params[pre + 'direction'] >= 0 else -1)
            rotors.append(FakeRotor(
                name=name, t_us=t_us, phase_rad=(abs(omega) * t_us * 1e-6) % (2 * math.pi),
                omega_rad_s=omega, rpm_shaft=rpm, rpm_shaft_std=1.0,
                homography=np.array([[r, 0.0, cx], [0.0, r, cy], [0.0, 0.0, 1.0]]),
                events=n // 2, level=0, message='tracking'))
        return FakeResult(stamp_ns=t_us * 1000, t_us=t_us, n_events=n // 2, rotors=rotors)

    def process_packets(self, packets: list[Any]) -> list[FakeResult]:
        """Each packet (an EventPacketRecord) through :meth:`process_packet`."""
        self.batches.append(len(packets))
        return [self.process_packet(p.events, p.encoding, p.width, p.height, p.is_bigendian,
                                    p.stamp_ns, p.seq, p.time_base) for p in packets]

    def diagnostics(self) -> list[dict[str, Any]]:
        return [{'name': 'helixtrack: pipeline', 'level': 0, 'message': 'stand-in',
                 'hardware_id': 'helixtrack',
                 'values': {k: str(v) for k, v in self.counters.items()} | {'stride': '1'}}]

    def note_backlog(self, waiting: int) -> None:
        self.backlog = waiting

    def recent_detections(self, span_us: int) -> list:
        return []

    def shape_problems(self) -> list:
        return []

    time_mapped = True     # (its outputs keep the input stamps)

    def update_tracker_params(self, changes: dict[str, Any]) -> None:
        for k, v in changes.items():
            if k not in self.tracker:
                raise ValueError(f'unknown tracker parameter {k}')
            if k == 'q_jerk' and v <= 0:
                raise ValueError('q_jerk must be > 0')
        self.tracker.update(changes)

    def close(self) -> None:
        self.closed = True


STANDIN_KWARGS: dict[str, Any] = dict(pipeline_factory=FakePipeline, warmup=lambda: 0.0,
                                      parameters=FAKE_PARAMETERS)


def standin_main() -> int:
    """Run ``helixtrack_ros.node.main`` with the stand-in pipeline (child process)."""
    from helixtrack_ros.node import main
    return main(None, **STANDIN_KWARGS)
