# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``python -m helixtrack_ros.node``: the ``helixtrack_node`` entry point (see
:mod:`helixtrack_ros.ros.main`; the node is :class:`helixtrack_ros.ros.node.HelixtrackNode`)."""

import sys

from helixtrack_ros.ros.main import main

__all__ = ['main']

if __name__ == '__main__':
    sys.exit(main())
