# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Event-camera propeller tracking (HelixTrack) for ROS 2."""

__version__ = '0.1.0'
