# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the node tests: local-only DDS, a node subprocess, a probe node.

Importing this module confines DDS to this machine before any rclpy context
exists: ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, a ``ROS_DOMAIN_ID`` of
its own (from the pid, 1..100; ``HELIXTRACK_TEST_DOMAIN_ID`` overrides) and
a Fast DDS profile with short announcement periods so that matching takes a
fraction of a second. Subprocesses get the same environment.

It also holds a test-only stand-in for :mod:`helixtrack_ros.pipeline`
(:class:`FakePipeline`) so that the ROS plumbing can be tested on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import math
import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

TEST_DIR = Path(__file__).resolve().parent
ROOT = TEST_DIR.parent
PYTHON = sys.executable

_FASTDDS_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com">
  <transport_descriptors>
    <!-- shared memory with room for a burst of event packets (default: 0.5 MB) -->
    <transport_descriptor>
      <transport_id>helixtrack_shm</transport_id>
      <type>SHM</type>
      <segment_size>33554432</segment_size>
      <port_queue_capacity>2048</port_queue_capacity>
    </transport_descriptor>
    <transport_descriptor>
      <transport_id>helixtrack_udp</transport_id>
      <type>UDPv4</type>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="helixtrack_test_participant" is_default_profile="true">
    <rtps>
      <userTransports>
        <transport_id>helixtrack_shm</transport_id>
        <transport_id>helixtrack_udp</transport_id>
      </userTransports>
      <useBuiltinTransports>false</useBuiltinTransports>
      <builtin>
        <discovery_config>
          <initialAnnouncements>
            <count>10</count>
            <period><nanosec>20000000</nanosec></period>
          </initialAnnouncements>
          <leaseAnnouncement><sec>1</sec></leaseAnnouncement>
          <leaseDuration><sec>4</sec></leaseDuration>
        </discovery_config>
      </builtin>
    </rtps>
  </participant>
</profiles>
"""


def _setup_ros_env() -> dict[str, str]:
    """Confine DDS to loopback with a private domain; return the variables set."""
    domain = os.environ.get('HELIXTRACK_TEST_DOMAIN_ID') or str(1 + os.getpid() % 100)
    os.environ['HELIXTRACK_TEST_DOMAIN_ID'] = domain  # children keep the parent's domain
    prof_dir = Path(tempfile.gettempdir()) / f'helixtrack_test_{os.getuid()}'
    prof_dir.mkdir(exist_ok=True)
    profile = prof_dir / 'fastdds_fast_discovery.xml'
    if not profile.exists() or profile.read_text() != _FASTDDS_PROFILE:
        tmp = profile.with_suffix(f'.{os.getpid()}.tmp')
        tmp.write_text(_FASTDDS_PROFILE)
        tmp.replace(profile)
    values = {
        'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
        'ROS_LOCALHOST_ONLY': '1' if os.environ.get('ROS_DISTRO') == 'humble' else '0',
        'ROS_DOMAIN_ID': domain,
        'RMW_IMPLEMENTATION': 'rmw_fastrtps_cpp',
        'FASTDDS_DEFAULT_PROFILES_FILE': str(profile),
        'RCUTILS_LOGGING_BUFFERED_STREAM': '0',
        'PYTHONUNBUFFERED': '1',
    }
    if values['ROS_LOCALHOST_ONLY'] == '0':
        del values['ROS_LOCALHOST_ONLY']
        os.environ.pop('ROS_LOCALHOST_ONLY', None)
    os.environ.update(values)
    return values


ROS_ENV = _setup_ros_env()

import numpy as np  # noqa: E402  (after the environment is set)


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a child process: ours plus the DDS confinement."""
    env = dict(os.environ)
    env.update(ROS_ENV)
    env.update(extra)
    return env


#: Processes whose death ends any wait early (see :class:`NodeProcess`).
_WATCHED: list[Any] = []


def wait_until(pred: Callable[[], Any], timeout: float, what: str = 'condition',
               poll: float = 0.01) -> Any:
    """Poll ``pred`` until it is truthy; raise AssertionError after ``timeout`` s.

    Fails at once when a watched node process has exited.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        for proc in _WATCHED:
            if proc.proc.poll() is not None and proc.expect_alive:
                raise AssertionError(f'node process exited ({proc.proc.returncode}) while '
                                     f'waiting for {what}:\n{proc.output()[-3000:]}')
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out after {timeout:.1f} s waiting for {what}')
        time.sleep(poll)


# ---------------------------------------------------------------------- stand-in pipeline
def _fake_parameters() -> dict[str, Any]:
    from helixtrack_ros.pipeline.config import ParamSpec
    return {
        'tracker.q_jerk': ParamSpec(400.0, 'phase EKF process noise', 'rad^2/s^5', 0.0, None),
        'tracker.kappa': ParamSpec(22.0, 'von Mises concentration', '', 0.1, 1000.0),
        'tracker.min_events': ParamSpec(2000, 'events before a pose solve', '', 1, 1_000_000),
        'tracker.estimate_pose': ParamSpec(True, 'run the pose solver'),
        'realtime_stride': ParamSpec(True, 'stride when behind'),
        'max_stride': ParamSpec(8, 'largest stride', '', 1, 64),
    }


FAKE_PARAMETERS: dict[str, Any] = _fake_parameters()


class FakeRotor:
    """Attribute bag shaped like ``RotorOutput``."""

    def __init__(self, **kw: Any) -> None:
        self.state = 0      # RotorState.TRACKING, no health cause
        self.cause = 0
        self.__dict__.update(kw)


class FakeResult:
    """Attribute bag shaped like ``PacketResult``."""

    def __init__(self, stamp_ns: int = 0, t_us: int = 0, n_events: int = 0,
                 rotors: list | None = None, error: str | None = None) -> None:
        self.stamp_ns, self.t_us, self.n_events = stamp_ns, t_us, n_events
        self.rotors = rotors or []
        self.error = error
        self.events = None


class FakePipeline:
    """Stand-in for ``TrackingPipeline`` (test only): constant rotors, no decoding.

    Counts packets and sequence numbers with the pipeline's own
    :class:`~helixtrack_ros.pipeline.intake.SeqCounter`. Accepts encoding
    ``evt3`` only. Each payload byte pair counts as one
    event; an odd length counts a decode error. Sensor time is the header
    stamp in microseconds, so output stamps equal input stamps (to 1 us).
    Rotor ``k`` turns at its configured RPM; its homography is the circle of
    the configured centre and radius.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        from helixtrack_ros.pipeline.intake import SeqCounter
        self.params = dict(params)
        self.rotor_names = list(params['rotor_names'])
        self.tracker = {k[len('tracker.'):]: v for k, v in params.items()
                        if k.startswith('tracker.')}
        self.counters = {'packets_refused': 0, 'decode_errors': 0, 'time_backwards': 0,
                         'events_in': 0}
        self.sequence = SeqCounter(self.counters)
        self._last_t: int | None = None
        self.closed = False
        self.batches: list[int] = []

    def process_packet(self, payload: Any, encoding: str, width: int, height: int,
                       is_bigendian: bool, stamp_ns: int, seq: int,
                       time_base: int = 0) -> FakeResult:
        self.sequence.count(int(seq))
        if encoding != 'evt3':
            self.counters['packets_refused'] += 1
            return FakeResult(error=f'unsupported encoding "{encoding}"')
        n = len(payload)
        if n % 2:
            self.counters['decode_errors'] += 1
        t_us = int(stamp_ns) // 1000
        if self._last_t is not None and t_us < self._last_t:
            self.counters['time_backwards'] += 1
        self._last_t = t_us
        self.counters['events_in'] += n // 2
        rotors = []
        for name in self.rotor_names:
            pre = f'rotors.{name}.'
            rpm = float(self.params[pre + 'rpm'])
            cx, cy = self.params[pre + 'center_px']
            r = float(self.params[pre + 'radius_px'])
            omega = 2 * math.pi * rpm / 60.0 * (1 if self.params[pre + 'direction'] >= 0 else -1)
            rotors.append(FakeRotor(
                name=name, t_us=t_us, phase_rad=(abs(omega) * t_us * 1e-6) % (2 * math.pi),
                omega_rad_s=omega, rpm_shaft=rpm, rpm_shaft_std=1.0,
                homography=np.array([[r, 0.0, cx], [0.0, r, cy], [0.0, 0.0, 1.0]]),
                events=n // 2, level=0, message='tracking'))
        return FakeResult(stamp_ns=t_us * 1000, t_us=t_us, n_events=n // 2, rotors=rotors)

    def process_packets(self, packets: list[Any]) -> list[FakeResult]:
        """Each packet (an EventPacketRecord) through :meth:`process_packet`."""
        self.batches.append(len(packets))
        return [self.process_packet(p.events, p.encoding, p.width, p.height, p.is_bigendian,
                                    p.stamp_ns, p.seq, p.time_base) for p in packets]

    def diagnostics(self) -> list[dict[str, Any]]:
        return [{'name': 'helixtrack: pipeline', 'level': 0, 'message': 'stand-in',
                 'hardware_id': 'helixtrack',
                 'values': {k: str(v) for k, v in self.counters.items()} | {'stride': '1'}}]

    def note_backlog(self, waiting: int) -> None:
        self.backlog = waiting

    def recent_detections(self, span_us: int) -> list:
        return []

    def update_tracker_params(self, changes: dict[str, Any]) -> None:
        for k, v in changes.items():
            if k not in self.tracker:
                raise ValueError(f'unknown tracker parameter {k}')
            if k == 'q_jerk' and v <= 0:
                raise ValueError('q_jerk must be > 0')
        self.tracker.update(changes)

    def close(self) -> None:
        self.closed = True


STANDIN_KWARGS: dict[str, Any] = dict(pipeline_factory=FakePipeline, warmup=lambda: 0.0,
                                      parameters=FAKE_PARAMETERS)


def standin_main() -> int:
    """Run ``helixtrack_ros.node.main`` with the stand-in pipeline (child process)."""
    from helixtrack_ros.node import main
    return main(None, **STANDIN_KWARGS)


def close_and_check(probe: Probe, proc: NodeProcess) -> str:
    """Close the probe, stop the node; assert a clean exit without a traceback; its log."""
    probe.close()
    rc = proc.stop()
    log = proc.output()
    assert rc == 0, log[-3000:]
    assert 'Traceback' not in log, log[-3000:]
    return log


def node_saw_packets(probe: Probe, node_fqn: str) -> bool:
    """True once the node's diagnostics count a packet (a ``prime`` condition)."""
    values = node_values(probe.messages('/diagnostics'), node_fqn) or {}
    return int(values.get('packets', 0)) > 0


#: A ``sitecustomize.py`` that hides ROS 2's Python packages from an interpreter (put
#: its folder first on PYTHONPATH): how the suite and the node are tried without ROS.
HIDE_ROS_SITECUSTOMIZE = """\
import importlib.abc
import sys

_HIDDEN = ('rclpy', 'rcl_interfaces', 'builtin_interfaces', 'launch', 'launch_ros',
           'ament_index_python', 'rosidl_runtime_py', 'rpyutils')


class _HideRos(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split('.')[0]
        if top in _HIDDEN or top.endswith('_msgs'):
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
        return None


sys.meta_path.insert(0, _HideRos())
"""

#: What a test that starts or builds a node needs beyond this package.
ROS_IMPORTS = ('rclpy', 'event_camera_msgs.msg')


def require_ros() -> None:
    """Skip the calling test (or module, at module level) unless rclpy and EventPacket import."""
    import pytest
    for name in ROS_IMPORTS:
        pytest.importorskip(name)


def require_real_node() -> None:
    """Skip the calling test module unless rclpy, EventPacket and the real pipeline import."""
    import pytest
    require_ros()
    reason = real_pipeline_available()
    if reason:
        pytest.skip(reason, allow_module_level=True)


def real_pipeline_available() -> str | None:
    """Return None when the real pipeline imports, else the reason it does not."""
    try:
        import helixtrack_ros.pipeline  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return f'helixtrack_ros.pipeline unavailable: {type(exc).__name__}: {exc}'
    return None


# ---------------------------------------------------------------------- node subprocess
class NodeProcess:
    """``helixtrack_node`` in a child process, output captured to a file.

    Parameters
    ----------
    ros_args : list of str
        Everything after ``--ros-args``.
    standin : bool
        Use :class:`FakePipeline` instead of the real pipeline.
    log_dir : Path, optional
        Where ``node.log`` goes (default: a new temporary directory).
    expect_alive : bool
        Make :func:`wait_until` fail as soon as this process exits.
    """

    def __init__(self, ros_args: list[str], standin: bool = False,
                 log_dir: Path | None = None, expect_alive: bool = True) -> None:
        if standin:
            code = (f'import sys; sys.path.insert(0, {str(TEST_DIR)!r}); '
                    'import node_fixtures; sys.exit(node_fixtures.standin_main())')
            cmd = [PYTHON, '-c', code]
        else:
            cmd = [PYTHON, '-m', 'helixtrack_ros.node']
        self.cmd = cmd + ['--ros-args', *ros_args]
        log_dir = Path(log_dir or tempfile.mkdtemp(prefix='helixtrack_node_'))
        self.log_path = log_dir / 'node.log'
        self._log = open(self.log_path, 'w')  # noqa: SIM115
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=subprocess_env(), cwd=str(ROOT))
        self.expect_alive = expect_alive
        _WATCHED.append(self)

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors='replace')

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> int:
        """Ctrl-C the node; return its exit code (kill after ``timeout``)."""
        self.expect_alive = False
        if self in _WATCHED:
            _WATCHED.remove(self)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return int(self.proc.returncode)


# ---------------------------------------------------------------------- probe node
class Probe:
    """A test node in its own rclpy context, spun by a background thread."""

    def __init__(self, name: str = 'helixtrack_probe') -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._lock = threading.Lock()
        self._stop = False
        self.received: dict[str, list[tuple[float, Any]]] = {}
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:  # noqa: BLE001 - shutdown races
                if self._stop:
                    return
                raise

    def close(self) -> None:
        self._stop = True
        self._thread.join(5)
        try:
            self.executor.shutdown()
            self.node.destroy_node()
        finally:
            self.rclpy.try_shutdown(context=self.context)

    def prime(self, publisher: Any, ready: Callable[[], Any], seq0: int = 0,
              start_ns: int = 1_600_000_000_000_000_000, timeout: float = 60.0) -> int:
        """Publish empty packets until ``ready()``; return the next free ``seq``.

        A best-effort reader drops samples from a writer it has not matched
        yet even when the writer already matched it, so the first packets of
        a stream can vanish. Priming with packets without events (which no
        tracker sees) until the node reports one removes that race.
        """
        seq = seq0
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise AssertionError(f'node did not receive packets within {timeout} s')
            (m,) = fake_packets(1, start_ns=start_ns + seq * 1000, seq0=seq, payload_bytes=0)
            publisher.publish(m)
            seq += 1
            time.sleep(0.02)
        return seq

    # ------------------------------------------------------------------ topics
    def events_publisher(self, topic: str):
        """Best-effort, keep-last 1000 EventPacket publisher (like the driver)."""
        from event_camera_msgs.msg import EventPacket
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        qos = QoSProfile(reliability=ReliabilityPolicy.BEST_EFFORT,
                         history=HistoryPolicy.KEEP_LAST, depth=1000,
                         durability=DurabilityPolicy.VOLATILE)
        return self.node.create_publisher(EventPacket, topic, qos)

    def collect(self, msg_type: Any, topic: str, depth: int = 5000) -> list[tuple[float, Any]]:
        """Subscribe (reliable) and append ``(monotonic receive time, msg)`` to a list."""
        from rclpy.qos import QoSProfile
        out: list[tuple[float, Any]] = []
        self.received[topic] = out

        def cb(msg: Any) -> None:
            with self._lock:
                out.append((time.monotonic(), msg))
        self.node.create_subscription(msg_type, topic, cb, QoSProfile(depth=depth))
        return out

    def messages(self, topic: str) -> list[Any]:
        with self._lock:
            return [m for _, m in self.received[topic]]

    def clear(self, topic: str | None = None) -> None:
        with self._lock:
            for key, lst in self.received.items():
                if topic is None or key == topic:
                    lst.clear()

    def wait_matched(self, publisher: Any = None, topics: Iterable[str] = (),
                     timeout: float = 90.0) -> None:
        """Wait for ``publisher`` to match a reader and each topic to have a writer."""
        if publisher is not None:
            wait_until(lambda: publisher.get_subscription_count() > 0, timeout,
                       f'a subscriber on {publisher.topic_name}')
        for t in topics:
            wait_until(lambda t=t: self.node.count_publishers(t) > 0, timeout,
                       f'a publisher on {t}')
            wait_until(lambda t=t: self._sub_matched(t), timeout, f'matching on {t}')

    def _sub_matched(self, topic: str) -> bool:
        for sub in self.node.subscriptions:
            if sub.topic_name == topic:
                count = getattr(sub, 'get_publisher_count', None)
                return count() > 0 if count else True
        return True

    # ------------------------------------------------------------------ parameters
    def _call(self, srv_type: Any, name: str, request: Any, timeout: float = 10.0) -> Any:
        client = self.node.create_client(srv_type, name)
        try:
            wait_until(lambda: client.service_is_ready(), timeout, f'service {name}')
            future = client.call_async(request)
            wait_until(future.done, timeout, f'reply of {name}')
            return future.result()
        finally:
            self.node.destroy_client(client)

    def set_parameters(self, node_fqn: str, values: dict[str, Any]) -> list[Any]:
        """Set parameters of another node; return the SetParametersResult list."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter
        req = SetParameters.Request()
        req.parameters = [Parameter(k, value=v).to_parameter_msg() for k, v in values.items()]
        return list(self._call(SetParameters, f'{node_fqn}/set_parameters', req).results)

    def get_parameters(self, node_fqn: str, names: list[str]) -> list[Any]:
        """Return the Python values of another node's parameters."""
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python
        req = GetParameters.Request()
        req.names = list(names)
        res = self._call(GetParameters, f'{node_fqn}/get_parameters', req)
        return [parameter_value_to_python(v) for v in res.values]

    def describe_parameters(self, node_fqn: str, names: list[str]) -> list[Any]:
        from rcl_interfaces.srv import DescribeParameters
        req = DescribeParameters.Request()
        req.names = list(names)
        return list(self._call(DescribeParameters, f'{node_fqn}/describe_parameters',
                               req).descriptors)


# ---------------------------------------------------------------------- packets
def fake_packets(n: int, start_ns: int = 1_700_000_000_000_000_000, period_ns: int = 1_000_000,
                 seq0: int = 0, payload_bytes: int = 2000, encoding: str = 'evt3'):
    """EventPackets for the stand-in pipeline (payload content is not decoded)."""
    from event_camera_msgs.msg import EventPacket
    out = []
    payload = bytes(payload_bytes)
    for k in range(n):
        m = EventPacket()
        ns = start_ns + k * period_ns
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(ns, 1_000_000_000)
        m.header.frame_id = 'camera'
        m.width, m.height = 1280, 720
        m.seq = seq0 + k
        m.encoding = encoding
        m.events = payload
        out.append(m)
    return out


def write_params_file(path: Path, tree: dict[str, Any]) -> Path:
    """Write ``tree`` as a ``/**: ros__parameters:`` file."""
    import yaml
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': tree}}, sort_keys=False))
    return path


TWO_ROTORS: dict[str, Any] = {
    'rotor_names': ['front_left', 'rear_right'],
    'rotors': {
        'front_left': {'center_px': [400.0, 300.0], 'radius_px': 80.0, 'rpm': 6000.0,
                       'blades': 2, 'direction': 1},
        'rear_right': {'center_px': [900, 420], 'radius_px': 100, 'rpm': 4500,
                       'blades': 3, 'direction': -1},
    },
    'tracker': {'q_jerk': 300},
    'rotor_topics_hz': 0.0,          # per-rotor topics with every packet
}


def node_values(diag_msgs: list[Any], node_fqn: str) -> dict[str, str] | None:
    """Values of the node status (``helixtrack: node <fqn>``) in the latest DiagnosticArray."""
    for arr in reversed(diag_msgs):
        for s in arr.status:
            if s.name == f'helixtrack: node {node_fqn}':
                return {kv.key: kv.value for kv in s.values}
    return None


def status_values(diag_msgs: list[Any], name: str) -> dict[str, str] | None:
    """Values of the latest status called ``name``."""
    for arr in reversed(diag_msgs):
        for s in arr.status:
            if s.name == name:
                return {kv.key: kv.value for kv in s.values}
    return None


PLAY_MSGTYPE = 'event_camera_msgs/msg/EventPacket'


def stamp_ns(msg: Any) -> int:
    """Header stamp in integer nanoseconds."""
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def load_play_bag():
    """Import ``scripts/play_bag.py`` (not a package) as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('play_bag', ROOT / 'scripts' / 'play_bag.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules['play_bag'] = module   # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def sim_stream(scenario: str, duration_s: float, seed: int = 1, ego_level: int | None = None,
               packet_us: int = 1000, base_ns: int = 1_700_000_000_000_000_000,
               thin: int = 1, **scene_kw: Any):
    """Simulate a scene and encode it as EVT3 EventPackets like metavision_driver.

    Returns
    -------
    scene, packets, last_t_us
        The scene (ground truth), the EventPacket list (seq from 0, header
        stamp = ``base_ns`` + first event time, frame ``camera``) and the
        sensor time [us] of each packet's last event. ``thin`` > 1 keeps every
        thin-th event (a sensor with fewer events per edge, at the same pace).
        ``scene_kw`` go to ``make_scenario`` (e.g. ``hide_rotor``).
    """
    from event_camera_msgs.msg import EventPacket

    from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
    from helixtrack_ros.core.events import EventArrays
    from helixtrack_ros.sim import Simulator, make_scenario

    scene = make_scenario(scenario, duration_s, ego_level, seed, **scene_kw)
    ev = Simulator(scene, seed=seed).all_events()
    if thin > 1:
        ev = EventArrays(ev.t_us[::thin], ev.x[::thin], ev.y[::thin], ev.p[::thin])
    enc = Evt3Encoder()
    packets, last_t = [], []
    for k, (a, b) in enumerate(packetize(ev.t_us, packet_us)):
        m = EventPacket()
        ns = base_ns + int(ev.t_us[a]) * 1000
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(ns, 1_000_000_000)
        m.header.frame_id = 'camera'
        m.width, m.height = scene.width, scene.height
        m.seq = k
        m.encoding = 'evt3'
        m.events = enc.encode(ev.slice(a, b))
        packets.append(m)
        last_t.append(int(ev.t_us[b - 1]))
    return scene, packets, last_t
