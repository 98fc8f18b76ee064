# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node in a child process, a probe node in the test, and waiting on either.

:class:`NodeProcess` runs ``helixtrack_node`` (or the stand-in) with its output
in a file; :class:`Probe` publishes, subscribes and calls parameter services
from its own rclpy context; :func:`wait_until` polls and fails at once when a
watched node process dies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any

from node_env import PYTHON, ROOT, TEST_DIR, subprocess_env
from node_messages import fake_packets, node_values

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
