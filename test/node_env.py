# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Local-only DDS for the node tests, and the checks that skip them without ROS.

Importing this module confines DDS to this machine before any rclpy context
exists: ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, a ``ROS_DOMAIN_ID`` of
its own (from the pid, 1..100; ``HELIXTRACK_TEST_DOMAIN_ID`` overrides) and
a Fast DDS profile with short announcement periods so that matching takes a
fraction of a second. Subprocesses get the same environment
(:func:`subprocess_env`).
"""

from __future__ import annotations

import os
from pathlib import Path
import sys
import tempfile

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


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a child process: ours plus the DDS confinement."""
    env = dict(os.environ)
    env.update(ROS_ENV)
    env.update(extra)
    return env


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
