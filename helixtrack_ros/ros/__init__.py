# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The ROS 2 side: ``node`` (plumbing), ``parameters`` (declared from the pipeline's
table), ``outputs`` (per-packet publishers), ``debug_publisher``, ``executors`` and
``main`` (the ``helixtrack_node`` entry point); ``pipeline_api`` states what the node
needs from a pipeline."""
