# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Shared test set-up: DDS on loopback, a private domain, the reference twins."""

import os
from pathlib import Path
import sys

# before any rclpy import: discovery stays on this machine, in a domain of our own
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', str(10 + os.getpid() % 80))

# test/reference holds the naive numpy twins of the numba kernels
sys.path.insert(0, str(Path(__file__).parent))


import pytest  # noqa: E402  (after the environment above)


@pytest.fixture
def context():
    """A private rclpy context for an in-process node, shut down after the test."""
    import rclpy
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)
