# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The ``helixtrack_node`` ROS 2 node: event packets in, rotor states out.

ROS plumbing only; all processing lives in :mod:`helixtrack_ros.pipeline`.

Topics
------
``~/events`` (in, ``event_camera_msgs/msg/EventPacket``)
    Best effort, keep-last 1000, volatile (what ``metavision_driver``
    offers); QoS overridable through ``qos_overrides.*`` parameters.
``~/rotors`` (``sensor_msgs/JointState``)
    One per packet: name = rotor names, position = shaft phase [rad],
    velocity = shaft angular speed [rad/s], effort empty.
``~/<rotor>/rpm`` (``std_msgs/Float64``)
    Shaft RPM, one per packet.
``~/<rotor>/homography`` (``std_msgs/Float64MultiArray``)
    Rotor plane -> image homography, 3 x 3 row-major.
``~/health`` (``diagnostic_msgs/DiagnosticArray``)
    One per packet, stamped like ``~/rotors``: each rotor's state
    (:class:`helixtrack_ros.core.health.RotorState`). Every number above is
    NaN while its rotor is not TRACKING.
``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``)
    Once a second: the pipeline's statuses plus one for the node.
``~/debug_image`` (``sensor_msgs/Image``, off by default)
    Event frame with each rotor's tracked ellipse and RPM, and the
    detections of the last second (start-up and re-detection) dashed.

Parameters
----------
``rotor_names`` and ``rotors.<name>.{center_px, radius_px, rpm, blades,
direction, psi_rad, perspective}`` (read only), ``tracker.<field>``
(reconfigurable, validated), ``realtime_stride``, ``max_stride``,
``threads``, ``auto_detect`` (read only), ``debug_image_hz``,
``debug_image_encoding``, ``debug_image_window_ms``, ``max_batch_packets``
(reconfigurable),
``diagnostics_period_s``, ``executor`` (read only).
"""

from __future__ import annotations

import array
from collections import deque
from collections.abc import Callable
import gc
import math
import re
import struct
import sys
import time
from typing import TYPE_CHECKING, Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from event_camera_msgs.msg import EventPacket
import numpy as np
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions, QoSPolicyKind
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64, Float64MultiArray, MultiArrayDimension

from helixtrack_ros.debug_image import DETECTION_SHOW_US, render_debug_image
from helixtrack_ros.io.cdr_patch import PatchableCdr, sentinels
from helixtrack_ros.io.event_packet_cdr import (
    EventPacketFields,
    fields_of_message,
    parse_event_packet,
)
from helixtrack_ros.io.health_cdr import HealthCdrCache, health_message
from helixtrack_ros.latency import LatencyHistogram, PeriodCounters
from helixtrack_ros.pipeline import RawPacket

try:                                    # Iron and newer
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:                     # Humble
    from rclpy.qos_event import PublisherEventCallbacks

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.pipeline import PacketResult, TrackingPipeline

#: Default node name.
NODE_NAME = 'helixtrack'

#: QoS of ``~/events``: what metavision_driver publishes with.
EVENTS_QOS = QoSProfile(reliability=ReliabilityPolicy.BEST_EFFORT,
                        history=HistoryPolicy.KEEP_LAST, depth=1000,
                        durability=DurabilityPolicy.VOLATILE)
#: QoS of the per-packet outputs: reliable, and 100 deep (0.1 s of 1 ms packets), so that
#: the outputs of a batch of queued packets (``max_batch_packets``), published back to
#: back, reach a reliable subscriber (e.g. ``ros2 bag record``) without losses.
#: Values of the ``executor`` parameter.
EXECUTORS = ('events', 'single_threaded')

#: First-generation threshold of the garbage collector while spinning (Python: 700).
GC_THRESHOLD_0 = 20_000

OUTPUT_QOS = QoSProfile(reliability=ReliabilityPolicy.RELIABLE,
                        history=HistoryPolicy.KEEP_LAST, depth=100,
                        durability=DurabilityPolicy.VOLATILE)

#: Rotor parameters: field -> (default or None when required, description, read-only).
ROTOR_FIELDS: dict[str, tuple[Any, str]] = {
    'center_px': (None, 'rotor centre in the image [px], [x, y]'),
    'radius_px': (None, 'blade tip radius in the image [px]'),
    'rpm': (None, 'initial shaft speed [RPM]'),
    'blades': (2, 'blade count B'),
    'direction': (0, 'rotation direction: +1, -1, or 0 = estimate it'),
    'psi_rad': (0.0, 'in-plane rotation of the rotor plane [rad]'),
    'perspective': ([0.0, 0.0], 'perspective terms [p31, p32] of the homography'),
    'rpm_range': ([0.0, 0.0], 'plausible shaft RPM [min, max] of this rotor; [0, 0]: '
                  'tracker.gate_rpm_min / gate_rpm_max'),
}

_NAME_RE = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')
_LEVEL_BYTES = [DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR,
                DiagnosticStatus.STALE]


def _stamp(ns: int) -> Time:
    """Convert integer nanoseconds to a ``builtin_interfaces/Time``."""
    ns = max(int(ns), 0)
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _packet_callback(on_packet: Callable[..., None], executor_kind: str) -> Callable[..., None]:
    """The subscription callback: with the MessageInfo where rclpy passes one.

    rclpy passes it from Iron on, but its EventsExecutor (Kilted) fails on
    such callbacks ("SystemError: null argument to internal routine"); there
    the packet is dated when its callback starts.
    """
    try:
        from rclpy.subscription import MessageInfo  # noqa: F401
    except ImportError:                 # Humble: the message only
        return on_packet
    if executor_kind == 'events':
        return on_packet
    return lambda msg, info: on_packet(msg, info)


def _arrival_ns(info: dict | None, now_ns: int) -> int:
    """A packet's arrival [ns, system clock]: the middleware's reception time when
    rclpy reports it (and it is plausible), else ``now_ns``."""
    if info:
        received = info.get('received_timestamp') or 0
        if 0 <= now_ns - received < 60_000_000_000:
            return int(received)
    return now_ns


def _homography_message() -> Float64MultiArray:
    """A ``~/<rotor>/homography`` message: 3x3 row-major, layout dims filled."""
    m = Float64MultiArray()
    m.layout.dim = [MultiArrayDimension(label='rows', size=3, stride=9),
                    MultiArrayDimension(label='cols', size=3, stride=3)]
    m.layout.data_offset = 0
    return m


def _no_event_callbacks() -> PublisherEventCallbacks:
    """No QoS event handlers for an output publisher.

    rclpy gives every publisher two default handlers (incompatible QoS and
    type), and its SingleThreadedExecutor walks every handler of the node
    on each wake-up: with 12 publishers that took 0.59 instead of 0.37 ms
    per wake-up (under cProfile). The subscriber of an output reports an
    incompatible QoS itself.
    """
    return PublisherEventCallbacks(use_default_callbacks=False)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_rotor_name(name: str) -> None:
    """Refuse rotor names that cannot be part of a topic or parameter name."""
    if not _NAME_RE.match(name) or '__' in name:
        raise ValueError(f'rotor name "{name}" cannot be a topic name: use letters, '
                         'digits and single underscores, starting with a letter')


def _level_byte(level: int) -> bytes:
    return _LEVEL_BYTES[min(max(int(level), 0), 3)]


# ---------------------------------------------------------------------- the node
class HelixtrackNode(Node):
    """Track propellers from ``EventPacket`` messages (see module docstring).

    Parameters
    ----------
    node_name : str
        Node name (remappable with ``-r __node:=...``).
    pipeline_factory : callable, optional
        ``factory(params: dict) -> TrackingPipeline``; default builds a
        :class:`helixtrack_ros.pipeline.TrackingPipeline` from
        ``PipelineConfig.from_ros_params``. Tests inject stand-ins here.
    warmup : callable, optional
        Called once before subscribing; default ``TrackingPipeline.warmup``.
    descriptions : dict, optional
        ``name -> (description, unit, min, max)`` of the runtime parameters;
        default ``PipelineConfig.parameter_descriptions()``.
    defaults : dict, optional
        Default values of the runtime parameters named in ``descriptions``;
        default taken from ``PipelineConfig()`` and its ``TrackerParams``.
    **kwargs
        Passed to :class:`rclpy.node.Node` (``context``, ``cli_args``, ...).
    """

    def __init__(self, node_name: str = NODE_NAME, *,
                 pipeline_factory: Callable[[dict[str, Any]], TrackingPipeline] | None = None,
                 warmup: Callable[[], float] | None = None,
                 descriptions: dict[str, tuple[str, str, Any, Any]] | None = None,
                 defaults: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        if pipeline_factory is None or descriptions is None or defaults is None:
            f, w, d, v = _default_pipeline_api()
            pipeline_factory = pipeline_factory or f
            warmup = warmup or w
            descriptions = descriptions if descriptions is not None else d
            defaults = defaults if defaults is not None else v
        self._descriptions = dict(descriptions)
        self._runtime_types: dict[str, type] = {}
        self._log = self.get_logger()

        params = self._declare_parameters(defaults)
        self._warn_unused_overrides()
        self._pipe = pipeline_factory(params)
        self.rotor_names = list(self._pipe.rotor_names)
        for name in self.rotor_names:
            _check_rotor_name(name)

        # ------------------------------------------------------------- publishers
        pub_qos = QoSOverridingOptions.with_default_policies()
        self._pub_rotors = self.create_publisher(JointState, '~/rotors', OUTPUT_QOS,
                                                 qos_overriding_options=pub_qos,
                                                 event_callbacks=_no_event_callbacks())
        self._pub_rpm = []
        self._pub_h = []
        self._rpm_msgs = []
        self._h_msgs = []
        self._joint = JointState()
        self._rpm_cdr: PatchableCdr | None = None
        self._h_cdr: PatchableCdr | None = None
        self._joint_cdr: PatchableCdr | None = None
        self._joint_cdr_frame = ''
        self._add_rotor_outputs(self.rotor_names)
        self._pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', OUTPUT_QOS,
                                               event_callbacks=_no_event_callbacks())
        self._pub_health = self.create_publisher(DiagnosticArray, '~/health', OUTPUT_QOS,
                                                 event_callbacks=_no_event_callbacks())
        self._health_cdr = HealthCdrCache(serialize_message)
        self._pub_image = self.create_publisher(Image, '~/debug_image', QoSProfile(depth=2),
                                                event_callbacks=_no_event_callbacks())

        # ------------------------------------------------------------- state
        self._last_seq: int | None = None
        self._last_t_us: int | None = None
        self._frame_id = ''
        self._size = (1280, 720)
        self._last_rotors: list[Any] = []
        self.counters: dict[str, int] = {
            'packets': 0, 'events': 0, 'seq_gaps': 0, 'packets_dropped': 0,
            'seq_restarts': 0, 'packets_refused': 0, 'internal_errors': 0,
            'batches': 0, 'batched_packets': 0, 'unreadable_messages': 0,
        }
        self._win = PeriodCounters()
        #: packet-in -> ~/rotors published, since start
        self._latency = LatencyHistogram()
        self._debug_events: deque = deque()
        self._debug_decoder = None
        self._debug_decoder_key: tuple | None = None
        self._debug_timer = None
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)

        #: 'events' or 'single_threaded': the executor main() spins the node with
        self.executor_kind = str(self.get_parameter('executor').value)
        if self.executor_kind == 'events' and _events_executor() is None:
            self._log.info('no EventsExecutor in this rclpy (before Kilted): '
                           'using the SingleThreadedExecutor')
            self.executor_kind = 'single_threaded'
        self.add_on_set_parameters_callback(self._on_set_parameters)
        period = float(self.get_parameter('diagnostics_period_s').value)
        self._diag_timer = self.create_timer(period, self._publish_diagnostics,
                                             clock=self._steady)
        self._update_debug_timer()

        # ------------------------------------------------------------- compile, then subscribe
        if warmup is not None:
            t0 = time.perf_counter()
            warmup()
            self._log.info(f'compiled kernels in {time.perf_counter() - t0:.1f} s')
        self._sub = self.create_subscription(
            EventPacket, '~/events', _packet_callback(self._on_packet, self.executor_kind),
            EVENTS_QOS, raw=True,
            qos_overriding_options=QoSOverridingOptions(
                policy_kinds=(QoSPolicyKind.RELIABILITY, QoSPolicyKind.HISTORY,
                              QoSPolicyKind.DEPTH, QoSPolicyKind.DURABILITY)))
        self._log.info(f'tracking {len(self.rotor_names)} rotor(s) '
                       f'[{", ".join(self.rotor_names)}] on {self._sub.topic_name}')

    # ------------------------------------------------------------------ parameters
    def _declare(self, name: str, default: Any, description: str, *, read_only: bool,
                 dynamic: bool = False, lo: Any = None, hi: Any = None) -> Any:
        desc = ParameterDescriptor(description=description, read_only=read_only,
                                   dynamic_typing=dynamic)
        if isinstance(default, bool) or (lo is None and hi is None):
            pass
        elif isinstance(default, int):
            desc.integer_range = [IntegerRange(
                from_value=int(lo) if lo is not None else -(2 ** 31),
                to_value=int(hi) if hi is not None else 2 ** 31 - 1, step=0)]
        else:
            desc.floating_point_range = [FloatingPointRange(
                from_value=float(lo) if lo is not None else -math.inf,
                to_value=float(hi) if hi is not None else math.inf, step=0.0)]
        if dynamic and default is None:
            return self.declare_parameter(name, None, desc).value
        return self.declare_parameter(name, default, desc).value

    def _declare_parameters(self, defaults: dict[str, Any]) -> dict[str, Any]:
        """Declare every parameter; return the flat dict for the pipeline."""
        out: dict[str, Any] = {}
        names = self._declare('rotor_names', None, 'names of the rotors to track; each one '
                              'needs rotors.<name>.{center_px, radius_px, rpm}',
                              read_only=True, dynamic=True)
        if names is None:
            names = []
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise ValueError(f'rotor_names must be a list of strings, not {names!r}')
        if len(set(names)) != len(names):
            raise ValueError(f'rotor_names has duplicates: {list(names)}')
        names = list(names)
        for name in names:
            _check_rotor_name(name)
        out['rotor_names'] = names
        for name in names:
            for field, (default, text) in ROTOR_FIELDS.items():
                key = f'rotors.{name}.{field}'
                value = self._declare(key, default, text, read_only=True,
                                      dynamic=True)
                if value is None:
                    if default is None:
                        raise ValueError(f'parameter {key} is missing for rotor "{name}"')
                    value = default
                out[key] = self._coerce_rotor(key, value)
        for key, (text, unit, lo, hi) in self._descriptions.items():
            default = defaults.get(key)
            if default is None:
                continue
            label = f'{text} [{unit}]' if unit else text
            bounds = []
            if lo is not None:
                bounds.append(f'min {lo}')
            if hi is not None:
                bounds.append(f'max {hi}')
            if bounds:
                label += f' ({", ".join(bounds)})'
            runtime = key.startswith('tracker.')
            is_float = isinstance(default, float)
            self._runtime_types[key] = type(default)
            # dynamic typing: YAML 400 for 400.0 is accepted, and a wrong type is refused
            # by _check_value with a readable reason instead of rclpy's type codes
            value = self._declare(key, default, label, read_only=not runtime,
                                  dynamic=True, lo=lo, hi=hi)
            reason = self._check_value(key, value)
            if reason:
                raise ValueError(f'parameter {key}: {reason}')
            out[key] = float(value) if is_float else value
        for key, default, text in (
                ('auto_detect', False, 'detect rotors from the stream when none are given'),):
            if key not in out:
                out[key] = self._declare(key, defaults.get(key, default), text, read_only=True)
        self._declare('debug_image_hz', 0.0, 'debug image rate [Hz], 0 = off (min 0, max 60)',
                      read_only=False, dynamic=True, lo=0.0, hi=60.0)
        self._declare('debug_image_encoding', 'mono8', 'debug image encoding: mono8 or rgb8',
                      read_only=False)
        self._declare('debug_image_window_ms', 10.0,
                      'sensor time of events drawn in a debug image [ms] (min 0.1, max 1000)',
                      read_only=False, dynamic=True, lo=0.1, hi=1000.0)
        self._declare('diagnostics_period_s', 1.0, 'period of /diagnostics [s]',
                      read_only=True, dynamic=True, lo=0.05, hi=60.0)
        self._declare('max_batch_packets', 20,
                      'when packets queue up (processing behind), up to this many are taken '
                      'and tracked together: one kernel call per rotor (min 1, max 1000)',
                      read_only=False, dynamic=True, lo=1, hi=1000)
        self._declare('executor', 'events',
                      'how callbacks are run: "events" (rclpy.experimental.EventsExecutor, '
                      'Kilted and newer; elsewhere single_threaded) or "single_threaded"',
                      read_only=True)
        for key in ('debug_image_hz', 'debug_image_encoding', 'debug_image_window_ms',
                    'diagnostics_period_s', 'max_batch_packets', 'executor'):
            reason = self._check_value(key, self.get_parameter(key).value)
            if reason:
                raise ValueError(f'parameter {key}: {reason}')
        return out

    @staticmethod
    def _coerce_rotor(key: str, value: Any) -> Any:
        field = key.rsplit('.', 1)[1]
        try:
            if field in ('center_px', 'perspective', 'rpm_range'):
                seq = [float(v) for v in value]
                if len(seq) != 2:
                    raise ValueError
                return seq
            if field in ('blades', 'direction'):
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
                return int(value)
            if isinstance(value, (str, bool)) or value is None:
                raise ValueError
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f'parameter {key} has a bad value: {value!r}') from None

    def _warn_unused_overrides(self) -> None:
        overrides = getattr(self, '_parameter_overrides', None) or {}
        unused = sorted(k for k in overrides
                        if not self.has_parameter(k) and not k.startswith('qos_overrides.')
                        and k not in ('use_sim_time', 'start_type_description_service'))
        if unused:
            self._log.warning('ignoring unknown parameters (typo, or rotor not in '
                              f'rotor_names?): {", ".join(unused)}')

    def _check_value(self, name: str, value: Any) -> str | None:
        """Return why ``value`` is refused for ``name``, or None when acceptable."""
        if name == 'debug_image_encoding':
            if value not in ('mono8', 'rgb8'):
                return f'must be "mono8" or "rgb8", not {value!r}'
            return None
        if name == 'executor':
            if value not in EXECUTORS:
                return f'must be one of {", ".join(EXECUTORS)}, not {value!r}'
            return None
        if name == 'max_batch_packets' and not (isinstance(value, int)
                                                and not isinstance(value, bool)):
            return f'must be an integer, not {value!r}'
        if name in ('debug_image_hz', 'debug_image_window_ms', 'diagnostics_period_s',
                    'max_batch_packets'):
            lo, hi = {'debug_image_hz': (0.0, 60.0), 'debug_image_window_ms': (0.1, 1000.0),
                      'diagnostics_period_s': (0.05, 60.0), 'max_batch_packets': (1, 1000)}[name]
        elif name in self._descriptions:
            _, _, lo, hi = self._descriptions[name]
            want = self._runtime_types.get(name)
            if want is bool:
                if not isinstance(value, bool):
                    return f'must be true or false, not {value!r}'
                return None
            if want is int and not (isinstance(value, int) and not isinstance(value, bool)):
                return f'must be an integer, not {value!r}'
        else:
            return None
        if not _is_number(value):
            return f'must be a number, not {value!r}'
        if not math.isfinite(float(value)):
            return f'must be finite, not {value!r}'
        if lo is not None and value < lo:
            return f'{value} is below the minimum {lo}'
        if hi is not None and value > hi:
            return f'{value} is above the maximum {hi}'
        return None

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        tracker_changes: dict[str, Any] = {}
        for p in params:
            reason = self._check_value(p.name, p.value)
            if reason:
                return SetParametersResult(successful=False, reason=f'{p.name}: {reason}')
            if p.name.startswith('tracker.') and p.name in self._descriptions:
                value = p.value
                if self._runtime_types.get(p.name) is float:
                    value = float(value)
                tracker_changes[p.name[len('tracker.'):]] = value
        if tracker_changes:
            try:
                self._pipe.update_tracker_params(tracker_changes)
            except (ValueError, TypeError) as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            self._log.info(f'tracker parameters changed: {tracker_changes}')
        if any(p.name == 'debug_image_hz' for p in params):
            # the new values are not stored yet: hand them over
            self._update_debug_timer({p.name: p.value for p in params})
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ debug image
    def _debug_param(self, name: str, pending: dict[str, Any] | None = None) -> Any:
        if pending and name in pending:
            return pending[name]
        return self.get_parameter(name).value

    def _update_debug_timer(self, pending: dict[str, Any] | None = None) -> None:
        hz = float(self._debug_param('debug_image_hz', pending))
        if self._debug_timer is not None:
            self.destroy_timer(self._debug_timer)
            self._debug_timer = None
        if hz > 0.0:
            self._debug_timer = self.create_timer(1.0 / hz, self._publish_debug_image,
                                                  clock=self._steady)
        else:
            self._debug_events.clear()
            self._debug_decoder = None

    def _collect_debug_events(self, pkt: RawPacket, res: PacketResult) -> None:
        ev = getattr(res, 'events', None)
        if ev is None:
            ev = getattr(self._pipe, 'last_events', None)
        if ev is None:
            ev = self._decode_for_debug(pkt)
        if ev is None or len(ev.t_us) == 0:
            return
        self._debug_events.append((int(ev.t_us[-1]), ev.x, ev.y, ev.p))
        window_us = float(self.get_parameter('debug_image_window_ms').value) * 1000.0
        newest = int(ev.t_us[-1])
        while self._debug_events and (self._debug_events[0][0] < newest - window_us
                                      or self._debug_events[0][0] > newest):
            self._debug_events.popleft()
        while len(self._debug_events) > 2000:
            self._debug_events.popleft()

    def _decode_for_debug(self, pkt: RawPacket) -> Any:
        """Decode again, for the debug image only (when the pipeline does not share)."""
        try:
            from helixtrack_ros.codecs import make_decoder
            key = (pkt.encoding, int(pkt.width), int(pkt.height))
            if key != self._debug_decoder_key:
                self._debug_decoder = make_decoder(*key)
                self._debug_decoder_key = key
            return self._debug_decoder.decode(pkt.payload, is_bigendian=bool(pkt.is_bigendian),
                                              time_base=int(pkt.time_base)).events
        except Exception:  # noqa: BLE001 - a debug image must never stop tracking
            return None

    def _publish_debug_image(self) -> None:
        if self.counters['packets'] == self._packets_at_image:
            return  # nothing new since the last image
        self._packets_at_image = self.counters['packets']
        w, h = self._size
        enc = str(self.get_parameter('debug_image_encoding').value)
        events = [(x, y, p) for _, x, y, p in self._debug_events]
        recent = getattr(self._pipe, 'recent_detections', None)
        dets = recent(DETECTION_SHOW_US) if recent is not None else []
        img = render_debug_image(w, h, events, self._last_rotors, enc, dets)
        msg = Image()
        msg.header.stamp = _stamp(self._last_stamp_ns) if self._last_rotors else \
            self.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        msg.height, msg.width = h, w
        msg.encoding = enc
        msg.is_bigendian = 0
        msg.step = w * (3 if enc == 'rgb8' else 1)
        msg.data = array.array('B', img.tobytes())
        self._pub_image.publish(msg)

    _last_stamp_ns = 0
    _packets_at_image = -1

    # ------------------------------------------------------------------ packets
    def _on_packet(self, msg: bytes | EventPacket, info: dict | None = None) -> None:
        """Track a packet, with every packet queued behind it (up to max_batch_packets).

        When the node keeps up the queue is empty and each packet is tracked
        alone; when it falls behind, the queued packets are taken at once and
        tracked in one call (:meth:`TrackingPipeline.process_packets`), which
        removes the per-packet costs of threads and Python. Results are
        published per packet either way.

        Packets arrive as their serialized bytes and are read in place
        (:mod:`helixtrack_ros.io.event_packet_cdr`); a deserialized message
        is taken as well. ``info`` (rclpy's MessageInfo, where rclpy passes
        it) dates the packet's arrival for the latency statistics.
        """
        t0 = time.perf_counter()
        now_ns = time.time_ns()
        limit = int(self.get_parameter('max_batch_packets').value)
        fields = []
        arrivals = []
        batch = []
        for item, item_info in [(msg, info)] + self._take_queued(limit - 1):
            f = self._unpack(item)
            if f is None:
                continue
            self._count_seq(f)
            fields.append(f)
            arrivals.append(_arrival_ns(item_info, now_ns))
            batch.append(RawPacket(f.events, f.encoding, f.width, f.height, f.is_bigendian,
                                   f.stamp_ns, f.seq, f.time_base))
        if not batch:
            return
        c = self.counters
        note_backlog = getattr(self._pipe, 'note_backlog', None)
        if note_backlog is not None:
            note_backlog(len(batch) - 1)
        try:
            process = getattr(self._pipe, 'process_packets', None)
            results = (process(batch) if process is not None and len(batch) > 1
                       else [self._pipe.process_packet(*p) for p in batch])
        except Exception as exc:  # noqa: BLE001 - one bad packet must not stop the node
            c['internal_errors'] += 1
            self._log.error(f'packets {batch[0].seq}..{batch[-1].seq} failed: '
                            f'{type(exc).__name__}: {exc}', throttle_duration_sec=5.0)
            return
        c['batches'] += 1
        c['batched_packets'] += len(batch) if len(batch) > 1 else 0
        for f, pkt, res, arrival_ns in zip(fields, batch, results, arrivals):
            self._handle_result(f, pkt, res, arrival_ns)
        dt = time.perf_counter() - t0
        win = self._win
        win.cb_s += dt
        win.cb_max_s = max(win.cb_max_s, dt)

    def _unpack(self, item: bytes | EventPacket) -> EventPacketFields | None:
        """The fields of a packet as taken (bytes or message); None when unreadable."""
        if not isinstance(item, (bytes, bytearray, memoryview)):
            return fields_of_message(item)
        try:
            return parse_event_packet(item)
        except (ValueError, struct.error, IndexError, UnicodeDecodeError):
            pass
        try:
            # not the layout every ROS 2 middleware sends: the generic deserializer
            return fields_of_message(deserialize_message(bytes(item), EventPacket))
        except Exception as exc:  # noqa: BLE001 - garbage must not stop the node
            self.counters['unreadable_messages'] += 1
            self._log.error(f'an EventPacket could not be read ({len(item)} bytes): {exc}',
                            throttle_duration_sec=5.0)
            return None

    def _take_queued(self, limit: int) -> list[tuple[bytes | EventPacket, dict | None]]:
        """Take up to ``limit`` packets already waiting in the subscription's queue.

        Returns (message, MessageInfo) pairs.
        """
        out: list[tuple[bytes | EventPacket, dict | None]] = []
        sub = getattr(self, '_sub', None)
        if limit <= 0 or sub is None:
            return out
        try:
            with sub.handle:
                while len(out) < limit:
                    got = sub.handle.take_message(sub.msg_type, sub.raw)
                    if got is None:
                        break
                    out.append((got[0], got[1] if len(got) > 1 else None))
        except RuntimeError as exc:
            # a message rclpy cannot convert (it is lost; the others are kept)
            self.counters['internal_errors'] += 1
            self._log.error(f'a message could not be taken: {exc}', throttle_duration_sec=5.0)
        except Exception:  # noqa: BLE001 - e.g. the subscription is being destroyed
            pass
        return out

    def _count_seq(self, msg: EventPacketFields) -> None:
        c = self.counters
        c['packets'] += 1
        seq = int(msg.seq)
        if self._last_seq is not None and seq != self._last_seq + 1:
            if seq > self._last_seq:
                c['seq_gaps'] += 1
                c['packets_dropped'] += seq - self._last_seq - 1
                self._log.warning(f'packets lost: seq {self._last_seq} -> {seq} '
                                  f'({c["packets_dropped"]} dropped so far)',
                                  throttle_duration_sec=5.0)
            else:
                c['seq_restarts'] += 1
                self._log.warning(f'sequence restarted: {self._last_seq} -> {seq} '
                                  '(camera restart?)', throttle_duration_sec=5.0)
        self._last_seq = seq

    def _handle_result(self, msg: EventPacketFields, pkt: RawPacket,
                       res: PacketResult, arrival_ns: int | None = None) -> None:
        """Publish one packet's result (or count why it was refused)."""
        c = self.counters
        seq = pkt.seq
        if res.error is not None:
            c['packets_refused'] += 1
            self._log.warning(f'packet {seq} refused ({c["packets_refused"]} so far): '
                              f'{res.error}', throttle_duration_sec=5.0)
            return
        self._frame_id = msg.frame_id
        if msg.width and msg.height:
            self._size = (msg.width, msg.height)
        c['events'] += int(res.n_events)
        try:
            self._publish(res)
            if arrival_ns is not None:
                latency_us = (time.time_ns() - arrival_ns) // 1000
                self._latency.add(latency_us)
                self._win.latency.add(latency_us)
            if self._debug_timer is not None:
                self._collect_debug_events(pkt, res)
        except Exception as exc:  # noqa: BLE001 - e.g. a result not shaped as announced
            c['internal_errors'] += 1
            self._log.error(f'packet {seq}: publishing failed: {type(exc).__name__}: {exc}',
                            throttle_duration_sec=5.0)
        win = self._win
        if self._last_t_us is not None and 0 < res.t_us - self._last_t_us < 1_000_000:
            win.sensor_us += int(res.t_us - self._last_t_us)
        if res.n_events:
            self._last_t_us = int(res.t_us)
        win.packets += 1
        win.events += int(res.n_events)

    def _add_rotor_outputs(self, names: list[str]) -> None:
        """Create the per-rotor publishers and messages of rotors not seen yet."""
        for name in names[len(self._rpm_msgs):]:
            _check_rotor_name(name)
            self._pub_rpm.append(self.create_publisher(Float64, f'~/{name}/rpm', OUTPUT_QOS,
                                                       event_callbacks=_no_event_callbacks()))
            self._pub_h.append(self.create_publisher(Float64MultiArray, f'~/{name}/homography',
                                                     OUTPUT_QOS,
                                                     event_callbacks=_no_event_callbacks()))
            self._rpm_msgs.append(Float64())
            self._h_msgs.append(_homography_message())
        self._joint.name = list(names)
        self.rotor_names = list(names)
        self._joint_cdr = None

    def _output_templates(self) -> bool:
        """Make the serialized output templates (io.cdr_patch) once the layout is known.

        Returns False when they cannot be made (a middleware without
        little-endian CDR): the messages are then published as objects.
        """
        if self._joint_cdr is not None and self._joint_cdr_frame == self._frame_id:
            return True
        n = len(self.rotor_names)
        try:
            if self._rpm_cdr is None:
                self._rpm_cdr = PatchableCdr(
                    serialize_message(Float64(data=sentinels(1)[0])), 1)
                h = _homography_message()
                h.data = array.array('d', sentinels(9))
                self._h_cdr = PatchableCdr(serialize_message(h), 9)
            j = JointState()
            j.header.frame_id = self._frame_id
            j.name = list(self.rotor_names)
            values = sentinels(2 * n)
            j.position = array.array('d', values[:n])
            j.velocity = array.array('d', values[n:])
            self._joint_cdr = PatchableCdr(serialize_message(j), 2 * n, has_header=True)
            self._joint_cdr_frame = self._frame_id
        except ValueError as exc:
            self._log.warning(f'outputs published as message objects: {exc}', once=True)
            self._rpm_cdr = self._h_cdr = self._joint_cdr = None
            return False
        return True

    def _publish(self, res: PacketResult) -> None:
        rotors = res.rotors
        if not rotors:
            return
        if len(rotors) > len(self._rpm_msgs) and not self._rpm_msgs:
            # rotors found by the start-up detection (auto_detect)
            names = [r.name for r in rotors]
            self._log.info('detected rotors: ' + ', '.join(
                f'{r.name} at ({r.homography[0][2]:.0f}, {r.homography[1][2]:.0f}) px, '
                f'{r.rpm_shaft:.0f} RPM' for r in rotors))
            self._add_rotor_outputs(names)
        if len(rotors) != len(self._rpm_msgs):
            raise ValueError(f'{len(rotors)} rotor states for {len(self._rpm_msgs)} rotors')
        self._last_stamp_ns = int(res.stamp_ns)
        self._last_rotors = rotors
        phases = [float(r.phase_rad) for r in rotors]
        omegas = [float(r.omega_rad_s) for r in rotors]
        states = tuple((int(r.state), int(r.cause)) for r in rotors)
        if self._output_templates():
            # the bytes of each message, its numbers written in place
            self._pub_rotors.publish(self._joint_cdr.fill(phases + omegas, res.stamp_ns))
            self._pub_health.publish(self._health_cdr.fill(
                self.rotor_names, states, self._frame_id, res.stamp_ns))
            for i, r in enumerate(rotors):
                self._pub_rpm[i].publish(self._rpm_cdr.fill((float(r.rpm_shaft),)))
                self._pub_h[i].publish(self._h_cdr.fill(
                    np.asarray(r.homography, np.float64).reshape(9).tolist()))
            return
        j = self._joint
        j.header.stamp = _stamp(res.stamp_ns)
        j.header.frame_id = self._frame_id
        j.position = array.array('d', phases)
        j.velocity = array.array('d', omegas)
        self._pub_rotors.publish(j)
        health = health_message(self.rotor_names, states, self._frame_id)
        health.header.stamp = j.header.stamp
        self._pub_health.publish(health)
        for i, r in enumerate(rotors):
            m = self._rpm_msgs[i]
            m.data = float(r.rpm_shaft)
            self._pub_rpm[i].publish(m)
            h = self._h_msgs[i]
            h.data = array.array('d', np.asarray(r.homography, np.float64).reshape(9).tobytes())
            self._pub_h[i].publish(h)

    # ------------------------------------------------------------------ diagnostics
    def node_status(self) -> dict[str, Any]:
        """The node's own status for ``/diagnostics`` (resets the rate window)."""
        win = self._win
        wall = max(time.monotonic() - win.wall0, 1e-9)
        sensor_s = win.sensor_us * 1e-6
        load = win.cb_s / sensor_s if sensor_s > 0 else 0.0
        c = self.counters
        values = {
            'events_per_s_in': f'{win.events / wall:.0f}',
            'packets_per_s_in': f'{win.packets / wall:.1f}',
            'processing_load': f'{load:.3f}',
            'callback_ms_mean': f'{1e3 * win.cb_s / max(win.packets, 1):.3f}',
            'callback_ms_max': f'{1e3 * win.cb_max_s:.3f}',
            'latency_ms_p50': f'{win.latency.percentile_ms(50):.2f}',
            'latency_ms_p99': f'{win.latency.percentile_ms(99):.2f}',
            'latency_ms_max': f'{win.latency.max_us / 1000:.2f}',
            'latency_ms_p50_since_start': f'{self._latency.percentile_ms(50):.2f}',
            'latency_ms_p99_since_start': f'{self._latency.percentile_ms(99):.2f}',
            'packets_dropped': str(c['packets_dropped']),
            'seq_gaps': str(c['seq_gaps']),
            'decode_errors': str(c['packets_refused']),
            'last_seq': str(self._last_seq if self._last_seq is not None else -1),
        }
        values.update({k: str(v) for k, v in c.items() if k not in values})
        level, message = 0, 'ok'
        if win.packets == 0:
            level, message = 0, 'waiting for events'
        if c['packets_refused'] or c['internal_errors'] or c['unreadable_messages']:
            level, message = 1, 'bad packets seen'
        if load > 1.0:
            level, message = 1, f'behind real time (load {load:.2f})'
        win.reset()
        return {'name': f'helixtrack: node {self.get_fully_qualified_name()}', 'level': level,
                'message': message, 'hardware_id': self.get_fully_qualified_name(),
                'values': values}

    def _publish_diagnostics(self) -> None:
        statuses = [self.node_status()]
        try:
            statuses += list(self._pipe.diagnostics())
        except Exception as exc:  # noqa: BLE001
            statuses.append({'name': 'helixtrack: pipeline', 'level': 2,
                             'message': f'diagnostics failed: {exc}', 'hardware_id': '',
                             'values': {}})
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        for s in statuses:
            arr.status.append(DiagnosticStatus(
                level=_level_byte(s.get('level', 0)), name=str(s.get('name', '')),
                message=str(s.get('message', '')), hardware_id=str(s.get('hardware_id', '')),
                values=[KeyValue(key=str(k), value=str(v))
                        for k, v in (s.get('values') or {}).items()]))
        self._pub_diag.publish(arr)

    def destroy_node(self) -> None:
        """Stop the pipeline's workers, then the node."""
        close = getattr(self._pipe, 'close', None) if hasattr(self, '_pipe') else None
        if close is not None:
            close()
        super().destroy_node()


def _default_pipeline_api() -> tuple[Callable, Callable, dict, dict]:
    """Return (factory, warmup, descriptions, defaults) of the real pipeline."""
    from dataclasses import replace

    from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline

    def factory(params: dict[str, Any]) -> TrackingPipeline:
        # live: the packets of the tracked rotors do not wait for a re-detection
        config = PipelineConfig.from_ros_params(params)
        return TrackingPipeline(replace(config, detect_in_background=True))

    base = PipelineConfig(realtime_stride=True)
    defaults: dict[str, Any] = {f'tracker.{k}': v for k, v in base.tracker.to_dict().items()}
    for key in ('realtime_stride', 'max_stride', 'threads', 'auto_detect', 'recovery',
                'recovery_min_us', 'recovery_window_us', 'recovery_retry_us', 'recovery_margin'):
        if hasattr(base, key):
            defaults[key] = getattr(base, key)
    return factory, TrackingPipeline.warmup, PipelineConfig.parameter_descriptions(), defaults


def _freeze_startup_objects() -> None:
    """Keep Python's cyclic garbage collector off the start-up objects.

    After start-up the process holds ~120,000 tracked objects (rclpy, numba,
    numpy); every full collection walked them all: up to 35 ms in which no
    packet was processed. Frozen, a collection walks only what packets
    allocate. A larger first-generation threshold makes collections rarer.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD_0, 10, 10)


def _events_executor() -> Callable[[], Any] | None:
    """rclpy's EventsExecutor factory, or None where rclpy has none (before Kilted)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return None
    return EventsExecutor


def _make_executor(node: HelixtrackNode) -> Any:
    """The executor the node chose from its ``executor`` parameter.

    rclpy's SingleThreadedExecutor rebuilds its wait set in Python on every
    wake-up: with the node's ~20 entities (parameter services, timers, the
    subscription) that cost about 0.3 ms of CPU per packet on this
    project's machine. The EventsExecutor (rclpy >= 9, ROS 2 Kilted) does it
    in C++ (2.7 instead of 3.0 CPU seconds per sensor second at 1 ms
    packets, 4.2 M events/s).
    """
    if node.executor_kind == 'events':
        return _events_executor()()
    return SingleThreadedExecutor()


def _spin(node: HelixtrackNode) -> None:
    """Spin until shutdown; a message that fails to convert costs only itself.

    rclpy raises RuntimeError from ``take_message`` when a message cannot be
    turned into Python, and also when Ctrl-C lands while it is converting one
    (pybind11 wraps the KeyboardInterrupt). Neither may end the node: the
    first is counted and logged, the second is a shutdown.
    """
    executor = _make_executor(node)
    executor.add_node(node)
    try:
        while rclpy.ok():
            try:
                executor.spin_once(timeout_sec=0.25)
            except RuntimeError as exc:
                if not rclpy.ok():
                    break
                node.counters['internal_errors'] += 1
                node.get_logger().error(f'a message could not be taken: {exc}',
                                        throttle_duration_sec=5.0)
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=0.5)


def _params_file_problem(argv: list[str]) -> str | None:
    """Why a ``--params-file`` of the command line cannot be read, as one line, or None.

    Checked before ``rclpy.init``, which otherwise answers a missing or
    broken file with a traceback. The YAML is parsed, not interpreted, as
    rcl does, so that no file rcl accepts is refused here.
    """
    import yaml
    in_ros = False
    for i, arg in enumerate(argv):
        if arg in ('--ros-args', '--'):
            in_ros = arg == '--ros-args'
        if not (in_ros and arg == '--params-file' and i + 1 < len(argv)):
            continue
        path = argv[i + 1]
        try:
            with open(path, encoding='utf-8') as fh:
                for _ in yaml.parse(fh, Loader=yaml.SafeLoader):
                    pass
        except OSError as exc:
            return f'parameter file {path}: {exc.strerror or exc}'
        except UnicodeDecodeError:
            return f'parameter file {path}: not UTF-8 text'
        except yaml.YAMLError as exc:
            mark = getattr(exc, 'problem_mark', None)
            where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark else ''
            what = getattr(exc, 'problem', None) or ' '.join(str(exc).split())
            return f'parameter file {path} is not valid YAML: {what}{where}'
    return None


def _init_rclpy(args: list[str] | None) -> str | None:
    """``rclpy.init``; None, or why rcl refused the command line, as one line.

    rcl logs a line of its own before it raises; fd 2 goes to a temporary
    file meanwhile and is replayed only when the start worked, so that a
    refusal reads as the caller's one line.
    """
    import os
    import tempfile
    sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            rclpy.init(args=args)
        except RuntimeError as exc:   # rclpy's RCLError
            # rcl appends ', at <source file>:<line>' for every layer
            return re.sub(r', at \S+:\d+', '', ' '.join(str(exc).split()))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        os.write(2, held.read())
    return None


def main(args: list[str] | None = None, **node_kwargs: Any) -> int:
    """Run the node until Ctrl-C or shutdown; return the exit code.

    A command line that cannot start the node (an unreadable or broken
    ``--params-file``, a value out of range) gives one line and exit code 1.

    Parameters
    ----------
    args : list of str, optional
        Command line (default ``sys.argv``), with ``--ros-args ...``.
    **node_kwargs
        Passed to :class:`HelixtrackNode` (tests inject a pipeline here).
    """
    reason = _params_file_problem(sys.argv if args is None else args)
    if reason is None:
        reason = _init_rclpy(args)
    if reason is not None:
        get_logger(NODE_NAME).fatal(f'cannot start: {reason}')
        return 1
    node = None
    code = 0
    try:
        node = HelixtrackNode(**node_kwargs)
        _freeze_startup_objects()
        _spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ValueError, FileNotFoundError, InvalidParameterTypeException,
            InvalidParameterValueException) as exc:
        get_logger(NODE_NAME).fatal(f'cannot start: {exc}')
        code = 1
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == '__main__':
    sys.exit(main())
