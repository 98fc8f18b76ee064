# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The ``helixtrack_node`` ROS 2 node: event packets in, rotor states out.

ROS plumbing only; all processing lives in :mod:`helixtrack_ros.pipeline`.
Topics and parameters are listed in the README ("The node"): ``~/events``
in (``event_camera_msgs/EventPacket``, the driver's QoS, overridable);
``~/rotors``, ``~/<rotor>/rpm``, ``~/<rotor>/homography`` and ``~/health``
out per packet (every number NaN while its rotor is not TRACKING);
``/diagnostics`` once a period; ``~/debug_image`` when enabled.
"""

from __future__ import annotations

from collections.abc import Callable
import sys
import time
from typing import Any, NamedTuple

from diagnostic_msgs.msg import DiagnosticArray
from event_camera_msgs.msg import EventPacket
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter

from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.latency import LatencyHistogram, PeriodCounters
from helixtrack_ros.pipeline.config import ParamSpec, check_rotor_name, checks_off, unknown_text
from helixtrack_ros.pipeline.records import PacketResult
from helixtrack_ros.pipeline.sequence import SEQ_COUNTERS
from helixtrack_ros.process_memory import HeapTrimmer, rss_mb
from helixtrack_ros.ros.arrival_stamps import ArrivalStamps
from helixtrack_ros.ros.debug_publisher import DebugImagePublisher
from helixtrack_ros.ros.executors import events_executor
from helixtrack_ros.ros.inputs import EventInput
from helixtrack_ros.ros.messages import arrival_ns, diagnostic_array, unpack_event_packet
from helixtrack_ros.ros.outputs import OUTPUT_QOS, RotorPublishers, no_event_callbacks
from helixtrack_ros.ros.overrides import Dropped, dropped_for_node
from helixtrack_ros.ros.parameters import NodeParameters
from helixtrack_ros.ros.pipeline_api import PipelineApi
from helixtrack_ros.ros.stream_notes import StampSteps, StreamNotes

#: Default node name.
NODE_NAME = 'helixtrack'

#: The node's counters in its status; the sequence ones (SEQ_COUNTERS) are the pipeline's.
_NODE_COUNTERS = ('packets', 'events', 'seq_gaps', 'packets_dropped', 'seq_restarts',
                  'packets_refused', 'internal_errors', 'batches', 'batched_packets',
                  'unreadable_messages')


class DebugView(NamedTuple):
    """What the debug image draws besides the events."""

    packets: int
    size: tuple[int, int]
    frame_id: str
    stamp_ns: int
    rotors: list[Any]
    detections: Callable[[int], list]


class HelixtrackNode(Node):
    """Track propellers from ``EventPacket`` messages (see module docstring).

    ``pipeline_factory(params) -> PipelineApi`` builds the pipeline from the
    flat parameter dict, ``warmup()`` compiles its kernels before the node
    subscribes, ``parameters`` is the table of its scalar parameters
    (:func:`helixtrack_ros.pipeline.config.parameter_table`); the defaults
    are the real pipeline's, tests inject stand-ins. ``command_line`` is what
    ``rclpy.init`` was given (default ``sys.argv``): the node looks there, and
    in its own ``cli_args``, for parameter values rcl dropped. Other keyword
    arguments go to :class:`rclpy.node.Node`.
    """

    def __init__(self, node_name: str = NODE_NAME, *,
                 pipeline_factory: Callable[[dict[str, Any]], PipelineApi] | None = None,
                 warmup: Callable[[], float] | None = None,
                 parameters: dict[str, ParamSpec] | None = None,
                 command_line: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        if pipeline_factory is None or parameters is None:
            from helixtrack_ros.ros.main import default_pipeline_api
            f, w, t = default_pipeline_api()
            pipeline_factory, warmup = pipeline_factory or f, warmup or w
            parameters = parameters if parameters is not None else t
        self._log = self.get_logger()
        self._params = NodeParameters(self, parameters)
        params = self._params.declare(self._dropped_overrides(command_line, kwargs))
        unused = self._params.unused_overrides(getattr(self, '_parameter_overrides', {}) or {})
        if unused:
            self._log.warning('ignoring unknown parameters (typo, or rotor not in '
                              f'rotor_names?): {unknown_text(unused, list(self._parameters))}')
        self._pipe = pipeline_factory(params)
        config = getattr(self._pipe, 'config', None)    # (a stand-in pipeline has none)
        unchecked = checks_off(config.tracker) if config is not None else None
        if unchecked:
            self._log.warning(unchecked)
        self.rotor_names = list(self._pipe.rotor_names)
        for name in self.rotor_names:
            check_rotor_name(name)
        self._outputs = RotorPublishers(self, self.rotor_names, float(
            self.get_parameter('rotor_topics_hz').value))
        self._pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', OUTPUT_QOS,
                                               event_callbacks=no_event_callbacks())
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._debug = DebugImagePublisher(self, self._steady)
        self._last_t_us: int | None = None
        self._last_stamp_ns = 0
        self._frame_id = ''
        self._size = (1280, 720)
        self._last_rotors: list[Any] = []
        self._counts = {k: 0 for k in _NODE_COUNTERS if k not in SEQ_COUNTERS}
        self._notes = StreamNotes(self._log)           # the stream's counts, said
        self._stamps = StampSteps(self._log)           # what the output stamps did, said
        self._arrival = ArrivalStamps(self._log.warning)   # stamps of a driver that sets none
        self._win = PeriodCounters()
        #: packet-in -> ~/rotors published, since start
        self._latency = LatencyHistogram()
        self._heap = HeapTrimmer()
        self._start(warmup)

    def _dropped_overrides(self, command_line: list[str] | None,
                           kwargs: dict[str, Any]) -> dict[str, Dropped]:
        """The command-line parameter values rcl dropped for others of another type."""
        try:
            return dropped_for_node(self, sys.argv if command_line is None else command_line,
                                    kwargs)
        except Exception as exc:  # noqa: BLE001 - a check of the command line must not stop it
            self.get_logger().warning('could not check the command line for parameter values '
                                      f'rcl dropped: {type(exc).__name__}: {exc}')
            return {}

    def describe_parameter(self, name: str) -> ParameterDescriptor:
        """The parameter's descriptor, its type that of its value: rclpy writes the type of
        every value offered into a dynamically typed descriptor before the value is
        checked, so a refused value left its type there."""
        desc = super().describe_parameter(name)
        if desc.dynamic_typing and self.has_parameter(name):
            desc.type = self.get_parameter(name).type_.value
        return desc

    @property
    def counters(self) -> dict[str, int]:
        """The node's counters: its own, and the pipeline's count of packets and sequence."""
        seq = self._pipe.counters
        return {k: seq[k] if k in SEQ_COUNTERS else self._counts[k] for k in _NODE_COUNTERS}

    def _start(self, warmup: Callable[[], float] | None) -> None:
        """Timers and callbacks, then compile, then subscribe."""
        #: 'events' or 'single_threaded': the executor main() spins the node with
        self.executor_kind = str(self.get_parameter('executor').value)
        if self.executor_kind == 'events' and events_executor() is None:
            self._log.info('no EventsExecutor in this rclpy (before Kilted): '
                           'using the SingleThreadedExecutor')
            self.executor_kind = 'single_threaded'
        if hasattr(self, 'add_pre_set_parameters_callback'):   # (Jazzy and newer)
            # an integer for a double parameter becomes the double (keeps its type)
            self.add_pre_set_parameters_callback(self._params.pre_set)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # read per packet: kept here, updated by _on_set_parameters (rclpy's get_parameter
        # costs microseconds)
        self._max_batch_packets = int(self.get_parameter('max_batch_packets').value)
        self._debug_window_us = float(self.get_parameter('debug_image_window_ms').value) * 1e3
        period = float(self.get_parameter('diagnostics_period_s').value)
        self._diag_timer = self.create_timer(period, self._publish_diagnostics,
                                             clock=self._steady)
        self._debug.set_rate(float(self.get_parameter('debug_image_hz').value))
        if warmup is not None:
            self._log.info('loading the tracking kernels (the first start after an install '
                           'compiles them: up to a minute)')
            t0 = time.perf_counter()
            warmup()
            self._log.info(f'kernels ready in {time.perf_counter() - t0:.1f} s')
        self._input = EventInput(self, self._on_packet, self.executor_kind,
                                 str(self.get_parameter('events_type').value), self._steady,
                                 lambda: self._pipe.counters['packets'] > 0, self.on_take_error)
        self._say_rotors()

    def _say_rotors(self) -> None:
        """One start-up line: the rotors tracked, or that they will be detected."""
        from helixtrack_ros.pipeline.startup import DETECT_WINDOW_US
        topic = self._input.topic
        if self.rotor_names:
            self._log.info(f'tracking {len(self.rotor_names)} rotor(s) '
                           f'[{", ".join(self.rotor_names)}] on {topic}')
        elif self.has_parameter('auto_detect') and self.get_parameter('auto_detect').value:
            self._log.info(f'no rotors configured: detecting them in the first '
                           f'{DETECT_WINDOW_US // 1000} ms of events on {topic} (auto_detect)')
        else:
            self._log.warning(f'no rotors configured and auto_detect is false: nothing will be '
                              f'tracked on {topic} (give rotor_names and rotors.<name>.*, '
                              'or set auto_detect: true)')

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        changes, reason = self._params.tracker_changes(params)
        if reason:
            return SetParametersResult(successful=False, reason=reason)
        if changes:
            try:
                self._pipe.update_tracker_params(changes)
            except (ValueError, TypeError) as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            self._log.info(f'tracker parameters changed: {changes}')
            config = getattr(self._pipe, 'config', None)     # (as at the start; review)
            unchecked = checks_off(config.tracker) if config is not None else None
            if unchecked:
                self._log.warning(unchecked)
        for p in params:
            if p.name == 'debug_image_hz':
                self._debug.set_rate(float(p.value))
            elif p.name == 'rotor_topics_hz':
                self._outputs.set_rotor_rate(float(p.value))
            elif p.name == 'max_batch_packets':
                self._max_batch_packets = int(p.value)
            elif p.name == 'debug_image_window_ms':
                self._debug_window_us = float(p.value) * 1e3
        return SetParametersResult(successful=True)

    def debug_view(self) -> DebugView:
        """The last outputs for the debug image."""
        return DebugView(self._pipe.counters['packets'], self._size, self._frame_id,
                         self._last_stamp_ns, self._last_rotors, self._pipe.recent_detections)

    # ------------------------------------------------------------------ packets
    def _on_packet(self, msg: bytes | EventPacket, info: dict | None = None) -> None:
        """Track a packet, with every packet queued behind it (up to max_batch_packets).

        When the node keeps up each packet is tracked alone; when it falls
        behind, the queued packets are tracked in one call, which removes
        per-packet costs of threads and Python. Results are published per
        packet either way. ``info`` (rclpy's MessageInfo, where passed) dates
        the packet's arrival for the latency statistics. No error leaves the
        callback (the executor would stop the node): it is counted and said.
        """
        try:
            self._track_queued(msg, info)
        except Exception as exc:  # noqa: BLE001 - a bug must cost a packet, not the node
            self._counts['internal_errors'] += 1
            self._log.error(f'packet callback failed: {type(exc).__name__}: {exc}',
                            throttle_duration_sec=5.0)

    def _track_queued(self, msg: bytes | EventPacket, info: dict | None) -> None:
        """:meth:`_on_packet`'s work."""
        t0 = time.perf_counter()
        now_ns = time.time_ns()
        queued = self._input.take_queued(self._max_batch_packets - 1)
        if queued:
            arrivals, batch = [], []
            for item, item_info in [(msg, info), *queued]:
                pkt = self._unpack(item)
                if pkt is not None:
                    batch.append(pkt)
                    arrivals.append(arrival_ns(item_info, now_ns))
            if not batch:
                return
        else:                   # (the node keeping up: one packet)
            pkt = self._unpack(msg)
            if pkt is None:
                return
            batch, arrivals = [pkt], [arrival_ns(info, now_ns)]
        if self._arrival.filling or not self._pipe.time_mapped:
            batch = self._arrival.fill(batch, arrivals,
                                       self.get_clock().now().nanoseconds - time.time_ns(),
                                       self._pipe.time_mapped)
        c = self._counts
        self._pipe.note_backlog(len(batch) - 1)
        aside = self._pipe.counters.get('stamp_jumps', 0)
        try:
            results = self._pipe.process_packets(batch)
        except Exception as exc:  # noqa: BLE001 - one bad packet must not stop the node
            c['internal_errors'] += 1
            self._log.error(f'packets {batch[0].seq}..{batch[-1].seq} failed: '
                            f'{type(exc).__name__}: {exc}', throttle_duration_sec=5.0)
            self._notes.say(self._pipe)
            return
        c['batches'] += 1
        if len(batch) > 1:
            c['batched_packets'] += len(batch)
        for pkt, res, arrived_ns in zip(batch, results, arrivals):
            self._handle_result(pkt, res, arrived_ns)
        self._notes.say(self._pipe, batch, results)     # (what the stream's counts did)
        self._stamps.note(batch, results, self._pipe.counters.get('stamp_jumps', 0) - aside)
        dt = time.perf_counter() - t0
        win = self._win
        win.cb_s += dt
        if dt > win.cb_max_s:
            win.cb_max_s = dt

    def _unpack(self, item: bytes | EventPacket) -> EventPacketRecord | None:
        """The record of a packet as taken (bytes or message); None when unreadable."""
        try:
            return unpack_event_packet(item)
        except ValueError as exc:  # garbage must not stop the node
            self._counts['unreadable_messages'] += 1
            self._log.error(str(exc), throttle_duration_sec=5.0)
            return None

    def _handle_result(self, pkt: EventPacketRecord, res: PacketResult,
                       arrival_ns: int | None = None) -> None:
        """Publish one packet's result (or count why it was refused)."""
        c = self._counts
        if res.dropped is not None:   # (counted by the pipeline, said by StreamNotes)
            return
        if res.error is not None:
            c['packets_refused'] += 1       # (said by StreamNotes)
            self._publish_guarded(pkt, res)   # the rotors' states: nothing measured
            return
        self._frame_id = pkt.frame_id
        if pkt.width and pkt.height:
            self._size = (pkt.width, pkt.height)
        n_events = int(res.n_events)
        c['events'] += n_events
        win = self._win
        if self._publish_guarded(pkt, res):
            if arrival_ns is not None:
                latency_us = (time.time_ns() - arrival_ns) // 1000
                self._latency.add(latency_us)
                win.latency.add(latency_us)
            if self._debug.timer is not None:
                self._debug.add(res.events, self._debug_window_us)
        win.count_packet(res.t_us, n_events, self._last_t_us)
        if n_events:
            self._last_t_us = int(res.t_us)

    def _publish_guarded(self, pkt: EventPacketRecord, res: PacketResult) -> bool:
        """Publish a packet's outputs; a failure is counted and said (False), never raised."""
        try:
            self._publish(res)
        except Exception as exc:  # noqa: BLE001 - e.g. a result not shaped as announced
            self._counts['internal_errors'] += 1
            self._log.error(f'packet {pkt.seq}: publishing failed: {type(exc).__name__}: '
                            f'{exc}', throttle_duration_sec=5.0)
            return False
        return True

    def _publish(self, res: PacketResult) -> None:
        rotors = res.rotors
        if not rotors:
            return
        if not self._outputs.names:
            # rotors found by the start-up detection (auto_detect)
            self._log.info('detected rotors: ' + ', '.join(
                f'{r.name} at ({r.homography[0][2]:.0f}, {r.homography[1][2]:.0f}) px, '
                f'{r.rpm_shaft:.0f} RPM' for r in rotors))
            self._outputs.add([r.name for r in rotors])
            self.rotor_names = list(self._outputs.names)
        self._last_stamp_ns = int(res.stamp_ns)
        self._last_rotors = rotors
        self._outputs.publish(rotors, int(res.stamp_ns), self._frame_id)

    # ------------------------------------------------------------------ diagnostics
    def node_status(self) -> dict[str, Any]:
        """The node's own status for ``/diagnostics`` (resets the rate window)."""
        c = self.counters
        last_seq = self._pipe.sequence.last
        values, load = self._win.values(self._latency)
        values.update({
            'packets_dropped': str(c['packets_dropped']), 'seq_gaps': str(c['seq_gaps']),
            'last_seq': str(last_seq if last_seq is not None else -1),
            'rss_mb': f'{rss_mb():.1f}'})
        values.update({k: str(v) for k, v in c.items() if k not in values})
        level, message = 0, 'ok'
        if self._win.packets == 0:
            level, message = 0, 'waiting for events'
        if c['packets_refused'] or c['internal_errors'] or c['unreadable_messages']:
            level, message = 1, 'bad packets seen'
        if load > 1.0:
            level, message = 1, f'behind real time (load {load:.2f})'
        self._win.reset()
        name = self.get_fully_qualified_name()
        return {'name': f'helixtrack: node {name}', 'level': level, 'message': message,
                'hardware_id': name, 'values': values}

    def _publish_diagnostics(self) -> None:
        self._heap.trigger(rss_mb())
        self._notes.flush(self._pipe)     # (counts that changed within a line's 5 s, said)
        statuses = [self.node_status()]
        try:
            statuses += list(self._pipe.diagnostics())
        except Exception as exc:  # noqa: BLE001
            statuses.append({'name': 'helixtrack: pipeline', 'level': 2,
                             'message': f'diagnostics failed: {exc}', 'hardware_id': '',
                             'values': {}})
        self._pub_diag.publish(diagnostic_array(statuses, self.get_clock().now().to_msg()))

    def on_take_error(self, exc: Exception) -> None:
        """A message the executor could not convert: counted and said, never fatal."""
        self._counts['internal_errors'] += 1
        self._log.error(f'a message could not be taken: {exc}', throttle_duration_sec=5.0)

    def destroy_node(self) -> None:
        """Stop the pipeline's workers, then the node."""
        if hasattr(self, '_pipe'):
            if hasattr(self, '_notes'):
                self._notes.flush(self._pipe, force=True)
            self._pipe.close()
        super().destroy_node()
