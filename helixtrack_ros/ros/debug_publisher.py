# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``~/debug_image``: recent events with each rotor's ellipse and RPM, at a set rate.

Off by default (``debug_image_hz`` 0); it only keeps references to the
events the pipeline decoded, and draws (:mod:`helixtrack_ros.debug_image`)
on its own timer, so that tracking never waits for it.
"""

from __future__ import annotations

import array
from collections import deque
from typing import Any

from rclpy.clock import Clock
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Image

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.debug_image import DETECTION_SHOW_US, render_debug_image
from helixtrack_ros.ros.outputs import no_event_callbacks, stamp

#: At most this many packets' events are kept for one image.
MAX_PACKETS_KEPT = 2000


class DebugImagePublisher:
    """Collects recent events per packet and publishes the debug image on a timer."""

    def __init__(self, node: Node, clock: Clock) -> None:
        self._node = node
        self._clock = clock
        self._pub = node.create_publisher(Image, '~/debug_image', QoSProfile(depth=2),
                                          event_callbacks=no_event_callbacks())
        self._events: deque = deque()
        self.timer: Any = None
        self._packets_at_image = -1

    def set_rate(self, hz: float) -> None:
        """Publish at ``hz`` (0: off, and the kept events are let go)."""
        if self.timer is not None:
            self._node.destroy_timer(self.timer)
            self.timer = None
        if hz > 0.0:
            self.timer = self._node.create_timer(1.0 / hz, self._publish, clock=self._clock)
        else:
            self._events.clear()

    def add(self, ev: EventArrays | None, window_us: float) -> None:
        """Keep a packet's events for the image (those older than the window go)."""
        if self.timer is None or ev is None or len(ev.t_us) == 0:
            return
        newest = int(ev.t_us[-1])
        self._events.append((newest, ev.x, ev.y, ev.p))
        while self._events and (self._events[0][0] < newest - window_us
                                or self._events[0][0] > newest):
            self._events.popleft()
        while len(self._events) > MAX_PACKETS_KEPT:
            self._events.popleft()

    def _publish(self) -> None:
        node = self._node
        view = node.debug_view()
        if view.packets == self._packets_at_image:
            return  # nothing new since the last image
        self._packets_at_image = view.packets
        w, h = view.size
        enc = str(node.get_parameter('debug_image_encoding').value)
        events = [(x, y, p) for _, x, y, p in self._events]
        img = render_debug_image(w, h, events, view.rotors, enc,
                                 view.detections(DETECTION_SHOW_US))
        msg = Image()
        msg.header.stamp = stamp(view.stamp_ns) if view.rotors else \
            node.get_clock().now().to_msg()
        msg.header.frame_id = view.frame_id
        msg.height, msg.width = h, w
        msg.encoding = enc
        msg.is_bigendian = 0
        msg.step = w * (3 if enc == 'rgb8' else 1)
        msg.data = array.array('B', img.tobytes())
        self._pub.publish(msg)
