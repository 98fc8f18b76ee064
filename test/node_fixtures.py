# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the node tests, in one namespace (``import node_fixtures as F``).

The helpers live in modules with one job each: :mod:`node_env` (local-only
DDS, which importing this module sets up before any rclpy context exists, and
the ROS skips), :mod:`node_standin` (a stand-in pipeline), :mod:`node_process`
(the node subprocess and a probe node) and :mod:`node_messages` (packets,
parameter files, diagnostics, bags).
"""

from node_env import (
    HIDE_ROS_SITECUSTOMIZE,
    PYTHON,
    ROOT,
    ROS_ENV,
    ROS_IMPORTS,
    TEST_DIR,
    real_pipeline_available,
    require_real_node,
    require_ros,
    subprocess_env,
)
from node_messages import (
    PLAY_MSGTYPE,
    TWO_ROTORS,
    fake_packets,
    load_play_bag,
    node_values,
    sim_stream,
    stamp_ns,
    status_values,
    write_params_file,
)
from node_process import NodeProcess, Probe, close_and_check, node_saw_packets, wait_until
from node_standin import (
    FAKE_PARAMETERS,
    STANDIN_KWARGS,
    FakePipeline,
    FakeResult,
    FakeRotor,
    standin_main,
)

__all__ = [
    'FAKE_PARAMETERS', 'HIDE_ROS_SITECUSTOMIZE', 'PLAY_MSGTYPE', 'PYTHON', 'ROOT', 'ROS_ENV',
    'ROS_IMPORTS', 'STANDIN_KWARGS', 'TEST_DIR', 'TWO_ROTORS', 'FakePipeline', 'FakeResult',
    'FakeRotor', 'NodeProcess', 'Probe', 'close_and_check', 'fake_packets', 'load_play_bag',
    'node_saw_packets', 'node_values', 'real_pipeline_available', 'require_real_node',
    'require_ros', 'sim_stream', 'stamp_ns', 'standin_main', 'status_values',
    'subprocess_env', 'wait_until', 'write_params_file',
]
