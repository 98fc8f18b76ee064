# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Packet processing shared by the ROS node and the offline CLI.

:class:`TrackingPipeline` turns packets
(:class:`~helixtrack_ros.io.packet_record.EventPacketRecord`) into per-rotor
outputs; :class:`PipelineConfig` configures it. The parts, one job each:
``config`` (parameters), ``records`` (outputs and results), ``intake``
(decode, sequence, time checks), ``batching`` (batches and threads),
``rotors`` (tracking a batch), ``outputs`` (what a consumer is handed),
``recovery`` (LOST rotors), ``startup`` (auto-detection), ``realtime`` (the
live stride) and ``diagnostics``; ``docs/ARCHITECTURE.md`` draws them.
"""

from helixtrack_ros.pipeline.config import PipelineConfig
from helixtrack_ros.pipeline.records import (
    ERROR,
    OK,
    WARN,
    PacketResult,
    RotorOutput,
    StreamBatch,
)
from helixtrack_ros.pipeline.tracking_pipeline import TrackingPipeline

__all__ = ['ERROR', 'OK', 'WARN', 'PacketResult', 'PipelineConfig', 'RotorOutput',
           'StreamBatch', 'TrackingPipeline']
