# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's input: the ``~/events`` subscription.

Its QoS is the camera driver's (overridable with ROS QoS overrides); its
message type EventPacket (taken as serialized bytes and read in place) or
EventArray, and with ``events_type`` auto the type the topic's publishers
use. Until packets arrive it says every few seconds that none do, naming
the topic. Packets waiting behind the one delivered are taken in one go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from event_camera_msgs.msg import EventPacket
from rclpy.clock import Clock
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions, QoSPolicyKind

from helixtrack_ros.ros.messages import event_message_class, publisher_message_class, take_queued

#: How often the node looks at its input topic until packets arrive [s] ...
WATCH_PERIOD_S = 1.0
#: ... and how often it says that none arrive [s].
WAIT_WARNING_S = 5.0

#: QoS of ``~/events``: what metavision_driver publishes with.
EVENTS_QOS = QoSProfile(reliability=ReliabilityPolicy.BEST_EFFORT,
                        history=HistoryPolicy.KEEP_LAST, depth=1000,
                        durability=DurabilityPolicy.VOLATILE)
_EVENTS_QOS_OVERRIDES = QoSOverridingOptions(policy_kinds=(
    QoSPolicyKind.RELIABILITY, QoSPolicyKind.HISTORY, QoSPolicyKind.DEPTH,
    QoSPolicyKind.DURABILITY))


def packet_callback(on_packet: Callable[..., None], executor_kind: str) -> Callable[..., None]:
    """The subscription callback: with the MessageInfo where rclpy passes one (from Iron
    on; but Kilted's EventsExecutor fails on such callbacks, so there the packet is
    dated when its callback starts)."""
    try:
        from rclpy.subscription import MessageInfo  # noqa: F401
    except ImportError:                 # Humble: the message only
        return on_packet
    if executor_kind == 'events':
        return on_packet
    return lambda msg, info: on_packet(msg, info)


class EventInput:
    """The ``~/events`` subscription of ``node`` (see the module docstring).

    ``on_packet(msg[, info])`` gets each packet; ``arrived()`` says whether
    any packet arrived (the watch then stops); ``on_take_error`` gets what
    rclpy could not convert when queued packets are taken.
    """

    def __init__(self, node: Node, on_packet: Callable[..., None], executor_kind: str,
                 events_type: str, clock: Clock, arrived: Callable[[], bool],
                 on_take_error: Callable[[Exception], None]) -> None:
        self._node = node
        self._callback = packet_callback(on_packet, executor_kind)
        self._events_type = events_type
        self._arrived = arrived
        self._on_take_error = on_take_error
        self.sub: Any = None
        #: the message class to subscribe with once the old subscription is gone
        self._switch_to: type | None = None
        self.subscribe(event_message_class(events_type))
        #: the input topic's full name
        self.topic: str = self.sub.topic_name
        self._timer = node.create_timer(WATCH_PERIOD_S, self.watch, clock=clock)

    def subscribe(self, msg_class: type) -> None:
        """Subscribe ``~/events`` with this message class (EventPacket read in place)."""
        if self.sub is not None:
            self._node.destroy_subscription(self.sub)
            self.sub = None
        self.sub = self._node.create_subscription(
            msg_class, '~/events', self._callback, EVENTS_QOS, raw=msg_class is EventPacket,
            qos_overriding_options=_EVENTS_QOS_OVERRIDES)

    def watch(self) -> None:
        """Until packets arrive: follow the topic's type (``events_type`` auto) and say
        every few seconds that nothing arrives, naming the topic."""
        if self._arrived():
            self._node.destroy_timer(self._timer)
            return
        log = self._node.get_logger()
        if self._switch_to is not None and not self._switch():
            return
        if self._events_type == 'auto':
            wanted = publisher_message_class(
                [p.topic_type for p in self._node.get_publishers_info_by_topic(self.topic)])
            if wanted is not None and wanted is not self.sub.msg_type:
                log.info(f'{self.topic} carries {wanted.__module__.split(".")[0]}/'
                         f'{wanted.__name__}: subscribing to that')
                self._switch_to = wanted
                if not self._switch():
                    return
        log.warning(f'no event packets on {self.topic} yet ({self.sub.get_publisher_count()} '
                    'publishers); is the camera driver running and the topic remapped?',
                    throttle_duration_sec=WAIT_WARNING_S)

    def _switch(self) -> bool:
        """Subscribe with :attr:`_switch_to` (True when done). Within a spinning executor
        the old subscription goes only once its wait set lets it go, and DDS refuses a
        second type on the topic until then: a failed try waits for the next watch."""
        if self.sub is not None and self.sub.msg_type is not self._switch_to:
            self._node.destroy_subscription(self.sub)
            self.sub = None
        try:
            self.subscribe(self._switch_to)
        except Exception as exc:  # noqa: BLE001 - rclpy's RCLError; tried again next watch
            self._node.get_logger().info(f'{self.topic}: the new subscription waits for the '
                                         f'old one to go ({str(exc).split(",")[0]})',
                                         throttle_duration_sec=WAIT_WARNING_S)
            return False
        self._switch_to = None
        return True

    def take_queued(self, limit: int) -> list[tuple[bytes | EventPacket, dict | None]]:
        """Take up to ``limit`` (message, MessageInfo) pairs waiting in the subscription."""
        if self.sub is None:
            return []
        return take_queued(self.sub, limit, self._on_take_error)
