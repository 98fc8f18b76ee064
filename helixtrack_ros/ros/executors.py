# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""How the node is spun: the executor it chose, and a spin loop that survives bad messages.

rclpy's SingleThreadedExecutor rebuilds its wait set in Python on every
wake-up (about 0.3 ms of CPU per packet with the node's ~20 entities on this
project's machine); the EventsExecutor (rclpy >= 9, Kilted) does it in C++.
"""

from __future__ import annotations

from collections.abc import Callable
import gc
import threading
from typing import Any

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

#: First-generation threshold of the garbage collector while spinning (Python: 700).
GC_THRESHOLD_0 = 20_000


def events_executor() -> Callable[[], Any] | None:
    """rclpy's EventsExecutor factory, or None where rclpy has none (before Kilted)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return None
    return EventsExecutor


def make_executor(kind: str) -> Any:
    """The executor of the node's ``executor`` parameter (``events`` or ``single_threaded``)."""
    if kind == 'events':
        return events_executor()()
    return SingleThreadedExecutor()


def freeze_startup_objects() -> None:
    """Keep Python's cyclic garbage collector off the start-up objects.

    After start-up the process holds ~120,000 tracked objects (rclpy, numba,
    numpy) that every full collection would walk, with no packet processed
    meanwhile. Frozen, a collection walks only what packets allocate; a
    larger first-generation threshold makes collections rarer.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD_0, 10, 10)


def spin(node: Node, kind: str, on_take_error: Callable[[Exception], None],
         stop: threading.Event | None = None) -> None:
    """Spin until shutdown or ``stop`` is set; a message that fails to convert costs only
    itself.

    rclpy raises RuntimeError from ``take_message`` when a message cannot be
    turned into Python, and also when Ctrl-C lands while it is converting one
    (pybind11 wraps the KeyboardInterrupt). Neither may end the node: the
    first goes to ``on_take_error``, the second is a shutdown.
    """
    executor = make_executor(kind)
    executor.add_node(node)
    try:
        while rclpy.ok() and not (stop is not None and stop.is_set()):
            try:
                executor.spin_once(timeout_sec=0.25)
            except RuntimeError as exc:
                if not rclpy.ok():
                    break
                on_take_error(exc)
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=0.5)
