# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack_node`` / ``python -m helixtrack_ros.node``: the node's entry point.

It runs :func:`helixtrack_ros.ros.main.main` (the node is
:class:`helixtrack_ros.ros.node.HelixtrackNode`); without ROS 2's Python
packages (no ``source /opt/ros/<distro>/setup.bash``) it says so in one line
and exits with 1 instead of a traceback.
"""

from __future__ import annotations

import sys
from typing import Any


def main(args: list[str] | None = None, **node_kwargs: Any) -> int:
    """Start the node (:func:`helixtrack_ros.ros.main.main`, which takes ``args`` and
    ``node_kwargs``); exit code 1 when ROS 2 is missing."""
    try:
        from helixtrack_ros.ros.main import main as run
    except ImportError as exc:
        print(f'helixtrack_node: cannot start: ROS 2 for this Python is missing ({exc}); '
              'source your ROS 2 setup (/opt/ros/<distro>/setup.bash) or run '
              'scripts/setup.sh', file=sys.stderr)
        return 1
    return run(args, **node_kwargs)


__all__ = ['main']

if __name__ == '__main__':
    sys.exit(main())
