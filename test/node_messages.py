# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Messages and files for the node tests: packets, parameter files, diagnostics, bags.

Builds EventPackets (empty stand-in payloads, or a simulated scene encoded as
EVT3 like the driver), writes ``ros__parameters`` files, reads values out of
DiagnosticArrays and loads ``scripts/play_bag.py``.
"""

from __future__ import annotations

from pathlib import Path
import sys
from typing import Any

from node_env import ROOT


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
