# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What the node needs from a pipeline (:class:`helixtrack_ros.pipeline.TrackingPipeline`
implements it; the tests' stand-in too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline.records import PacketResult
from helixtrack_ros.pipeline.sequence import SeqCounter


class PipelineApi(Protocol):
    """Packets in, per-packet results out, plus control and diagnostics."""

    rotor_names: list[str]
    #: the pipeline's counters (INTAKE_COUNTERS; the node reports those of SEQ_COUNTERS as
    #: its own)
    counters: dict[str, int]

    @property
    def sequence(self) -> SeqCounter:
        """The packets' sequence numbers: the last one, the last gap and restart."""

    @property
    def format_change(self) -> tuple[str, str] | None:
        """The latest change of the stream's encoding or sensor size (before, after)."""

    @property
    def time_mapped(self) -> bool:
        """Whether the sensor-to-ROS time mapping has an estimate (a stamped packet with
        events came)."""

    @property
    def foreign_source(self) -> tuple[str, str] | None:
        """(the stream's frame_id, another source's) of the latest packet left out as
        another camera's."""

    def process_packets(self, packets: Sequence[EventPacketRecord]) -> list[PacketResult]:
        """Track consecutive packets; one result each, in order."""

    def note_backlog(self, waiting: int) -> None:
        """How many packets wait behind the ones now processed."""

    def update_tracker_params(self, changes: dict[str, Any]) -> None:
        """Apply changed ``tracker.*`` values (ValueError: refused, nothing changed)."""

    def recent_detections(self, span_us: int) -> list[tuple[str, Any]]:
        """(rotor name, detection) of the last ``span_us`` of sensor time."""

    def shape_problems(self) -> list[str]:
        """What to say of rotors re-detected with other blades or direction than given."""

    def diagnostics(self) -> list[dict[str, Any]]:
        """Statuses for ``/diagnostics``."""

    def close(self) -> None:
        """Stop worker threads."""
