# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's per-packet outputs: ``~/rotors``, ``~/health``, per rotor rpm, rpm_std, homography.

Each message is serialized once as a template and only its numbers (and
stamp) are written per packet (:mod:`helixtrack_ros.io.cdr_patch`); a
middleware without little-endian CDR gets message objects instead.
"""

from __future__ import annotations

import array
from typing import Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, MultiArrayDimension

from helixtrack_ros.io.cdr_patch import PatchableCdr, sentinels
from helixtrack_ros.io.health_cdr import HealthCdrCache, health_message
from helixtrack_ros.pipeline.config import check_rotor_name

try:                                    # Iron and newer
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:                     # Humble
    from rclpy.qos_event import PublisherEventCallbacks

#: QoS of the per-packet outputs: reliable, and 100 deep (0.1 s of 1 ms packets), so that
#: the outputs of a batch of queued packets (``max_batch_packets``), published back to
#: back, reach a reliable subscriber (e.g. ``ros2 bag record``) without losses.
OUTPUT_QOS = QoSProfile(reliability=ReliabilityPolicy.RELIABLE,
                        history=HistoryPolicy.KEEP_LAST, depth=100,
                        durability=DurabilityPolicy.VOLATILE)


def stamp(ns: int) -> Time:
    """Convert integer nanoseconds to a ``builtin_interfaces/Time``."""
    ns = max(int(ns), 0)
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def homography_message() -> Float64MultiArray:
    """A ``~/<rotor>/homography`` message: 3x3 row-major, layout dims filled."""
    m = Float64MultiArray()
    m.layout.dim = [MultiArrayDimension(label='rows', size=3, stride=9),
                    MultiArrayDimension(label='cols', size=3, stride=3)]
    m.layout.data_offset = 0
    return m


def no_event_callbacks() -> PublisherEventCallbacks:
    """No QoS event handlers for an output publisher: rclpy's executors walk every
    handler of the node on each wake-up, and the subscriber of an output reports an
    incompatible QoS itself."""
    return PublisherEventCallbacks(use_default_callbacks=False)


class RotorPublishers:
    """Publishers and message templates of the outputs.

    ``~/rotors`` and ``~/health`` go out with every packet; the per-rotor
    topics at most ``rotor_topics_hz`` of sensor time (0: every packet), and
    at once whenever a rotor's state changes, so that a consumer of one
    rotor's topic never holds a number longer than the period or past the
    rotor's last TRACKING packet.
    """

    def __init__(self, node: Node, names: list[str], rotor_topics_hz: float = 0.0) -> None:
        self._node = node
        self.set_rotor_rate(rotor_topics_hz)
        self._next_rotor_ns = 0
        self._last_states: tuple = ()
        self._log = node.get_logger()
        self.rotors = node.create_publisher(
            JointState, '~/rotors', OUTPUT_QOS,
            qos_overriding_options=QoSOverridingOptions.with_default_policies(),
            event_callbacks=no_event_callbacks())
        self.health = node.create_publisher(DiagnosticArray, '~/health', OUTPUT_QOS,
                                            event_callbacks=no_event_callbacks())
        # serialized messages go to the middleware directly: rclpy's publish() type-checks
        # and enters the handle's guard on each call (about 1.5 us; the node publishes
        # only from its executor thread, and destroys the publishers after it stopped)
        self._send_rotors = self.rotors.handle.publish_raw
        self._send_health = self.health.handle.publish_raw
        self._send_rpm: list[Any] = []
        self._send_std: list[Any] = []
        self._send_h: list[Any] = []
        self._health_cdr = HealthCdrCache(serialize_message)
        self._rpm: list[Any] = []
        self._std: list[Any] = []
        self._h: list[Any] = []
        self._rpm_msgs: list[Float64] = []
        self._std_msgs: list[Float64] = []
        self._h_msgs: list[Float64MultiArray] = []
        self._joint = JointState()
        self._rpm_cdr: PatchableCdr | None = None
        self._h_cdr: PatchableCdr | None = None
        self._joint_cdr: PatchableCdr | None = None
        self._joint_cdr_frame = ''
        self.names: list[str] = []
        self.add(names)

    def set_rotor_rate(self, hz: float) -> None:
        """Publish the per-rotor topics at most ``hz`` per second of sensor time (0: always)."""
        self._rotor_period_ns = int(1e9 / hz) if hz > 0 else 0
        self._next_rotor_ns = 0

    def _rotor_topics_due(self, stamp_ns: int, states: tuple) -> bool:
        """Whether the per-rotor topics go out with this packet (rate, or a state change)."""
        changed = states != self._last_states
        self._last_states = states
        if not (changed or self._rotor_period_ns == 0 or stamp_ns >= self._next_rotor_ns
                or stamp_ns < self._next_rotor_ns - 2 * self._rotor_period_ns):
            return False
        self._next_rotor_ns = stamp_ns + self._rotor_period_ns
        return True

    def add(self, names: list[str]) -> None:
        """Create the per-rotor publishers and messages of rotors not seen yet."""
        node = self._node
        for name in names[len(self._rpm_msgs):]:
            check_rotor_name(name)
            self._rpm.append(node.create_publisher(Float64, f'~/{name}/rpm', OUTPUT_QOS,
                                                   event_callbacks=no_event_callbacks()))
            self._std.append(node.create_publisher(Float64, f'~/{name}/rpm_std', OUTPUT_QOS,
                                                   event_callbacks=no_event_callbacks()))
            self._h.append(node.create_publisher(Float64MultiArray, f'~/{name}/homography',
                                                 OUTPUT_QOS,
                                                 event_callbacks=no_event_callbacks()))
            self._send_rpm.append(self._rpm[-1].handle.publish_raw)
            self._send_std.append(self._std[-1].handle.publish_raw)
            self._send_h.append(self._h[-1].handle.publish_raw)
            self._rpm_msgs.append(Float64())
            self._std_msgs.append(Float64())
            self._h_msgs.append(homography_message())
        self._joint.name = list(names)
        self.names = list(names)
        self._joint_cdr = None

    def _templates(self, frame_id: str) -> bool:
        """Make the serialized templates once the layout is known (False: a middleware
        without little-endian CDR; messages are then published as objects)."""
        if self._joint_cdr is not None and self._joint_cdr_frame == frame_id:
            return True
        n = len(self.names)
        try:
            if self._rpm_cdr is None:
                self._rpm_cdr = PatchableCdr(
                    serialize_message(Float64(data=sentinels(1)[0])), 1)
                h = homography_message()
                h.data = array.array('d', sentinels(9))
                self._h_cdr = PatchableCdr(serialize_message(h), 9)
            j = JointState()
            j.header.frame_id = frame_id
            j.name = list(self.names)
            values = sentinels(2 * n)
            j.position = array.array('d', values[:n])
            j.velocity = array.array('d', values[n:])
            self._joint_cdr = PatchableCdr(serialize_message(j), 2 * n, has_header=True)
            self._joint_cdr_frame = frame_id
        except ValueError as exc:
            self._log.warning(f'outputs published as message objects: {exc}', once=True)
            self._rpm_cdr = self._h_cdr = self._joint_cdr = None
            return False
        return True

    def publish(self, rotors: list[Any], stamp_ns: int, frame_id: str) -> None:
        """Publish one packet's rotor outputs (ValueError: not one per rotor)."""
        if len(rotors) != len(self._rpm_msgs):
            raise ValueError(f'{len(rotors)} rotor states for {len(self._rpm_msgs)} rotors')
        # (float() and int() as the message fields take them: a stand-in pipeline may give
        # other number types)
        values = [float(r.phase_rad) for r in rotors]
        values += [float(r.omega_rad_s) for r in rotors]
        states = tuple([(int(r.state), int(r.cause)) for r in rotors])
        due = self._rotor_topics_due(stamp_ns, states)
        if self._joint_cdr_frame == frame_id and self._joint_cdr is not None or \
                self._templates(frame_id):
            # the bytes of each message, its numbers written in place
            self._send_rotors(self._joint_cdr.fill(values, stamp_ns))
            self._send_health(self._health_cdr.fill(self.names, states, frame_id, stamp_ns))
            if due:
                self._publish_rotor_topics(rotors)
            return
        n = len(rotors)
        self._publish_objects(rotors if due else [], values[:n], values[n:], states, stamp_ns,
                              frame_id)

    def _publish_rotor_topics(self, rotors: list[Any]) -> None:
        """Each rotor's rpm, rpm_std and homography, as bytes."""
        rpm, hom = self._rpm_cdr, self._h_cdr
        for send_rpm, send_std, send_h, r in zip(self._send_rpm, self._send_std, self._send_h,
                                                 rotors):
            send_rpm(rpm.fill((float(r.rpm_shaft),)))
            send_std(rpm.fill((float(r.rpm_shaft_std),)))
            send_h(hom.fill(np.asarray(r.homography, np.float64).reshape(9).tolist()))

    def _publish_objects(self, rotors: list[Any], phases: list[float], omegas: list[float],
                         states: tuple, stamp_ns: int, frame_id: str) -> None:
        """The same messages as objects (a middleware without little-endian CDR)."""
        j = self._joint
        j.header.stamp = stamp(stamp_ns)
        j.header.frame_id = frame_id
        j.position = array.array('d', phases)
        j.velocity = array.array('d', omegas)
        self.rotors.publish(j)
        health = health_message(self.names, states, frame_id)
        health.header.stamp = j.header.stamp
        self.health.publish(health)
        for i, r in enumerate(rotors):
            m = self._rpm_msgs[i]
            m.data = float(r.rpm_shaft)
            self._rpm[i].publish(m)
            m = self._std_msgs[i]
            m.data = float(r.rpm_shaft_std)
            self._std[i].publish(m)
            h = self._h_msgs[i]
            h.data = array.array('d', np.asarray(r.homography, np.float64).reshape(9).tobytes())
            self._h[i].publish(h)
