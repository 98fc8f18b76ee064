# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack_node`` / ``python -m helixtrack_ros.node``: the node's entry point.

It runs :func:`helixtrack_ros.ros.main.main` (the node is
:class:`helixtrack_ros.ros.node.HelixtrackNode`); without ROS 2's Python
packages (no ``source /opt/ros/<distro>/setup.bash``) it says so in one line
and exits with 1 instead of a traceback. Ctrl-C (or SIGTERM) while its modules
are imported stops it with one line once they are, not with a traceback out of
whichever import it hit (node review: Ctrl-C in the first 1.5 s of a start).
"""

from __future__ import annotations

from collections.abc import Callable
import signal
import sys
from typing import Any


def _load() -> Callable[..., int]:
    """The node's main function (imports rclpy, the pipeline and the node modules)."""
    from helixtrack_ros.ros.main import main as run
    return run


def _load_deferring_signals() -> tuple[Callable[..., int], bool]:
    """(:func:`_load`'s result, whether SIGINT or SIGTERM came meanwhile): the signals
    wait until the imports are done."""
    came: list[int] = []
    handlers = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            handlers[sig] = signal.signal(sig, lambda signum, frame: came.append(signum))
        except ValueError:   # not the main thread: nothing to defer
            pass
    try:
        return _load(), bool(came)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def main(args: list[str] | None = None, **node_kwargs: Any) -> int:
    """Start the node (:func:`helixtrack_ros.ros.main.main`, which takes ``args`` and
    ``node_kwargs``); exit code 1 when ROS 2 is missing, 0 when stopped while starting."""
    try:
        run, stopped = _load_deferring_signals()
    except ImportError as exc:
        print(f'helixtrack_node: cannot start: ROS 2 for this Python is missing ({exc}); '
              'source your ROS 2 setup (/opt/ros/<distro>/setup.bash) or run '
              'scripts/setup.sh', file=sys.stderr)
        return 1
    if stopped:
        print('helixtrack_node: stopped while starting', file=sys.stderr)
        return 0
    return run(args, **node_kwargs)


__all__ = ['main']

if __name__ == '__main__':
    sys.exit(main())
