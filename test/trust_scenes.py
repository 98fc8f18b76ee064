# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Simulated EVT3 packet streams for the trust tests (test_trust_*.py): a scene's ~1 ms
packets, and records of a chosen subset of them (lost, reordered, repeated)."""

from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder, packetize
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.sim import Simulator, make_scenario

STAMP0_NS = 10**18


def _encoded(scene, seed: int) -> list[tuple[bytes, int, int]]:
    """(payload, first t_us, last t_us) of ~1 ms EVT3 packets of a simulated scene."""
    ev = Simulator(scene, seed=seed).all_events()
    enc = Evt3Encoder()
    out = []
    for a, b in packetize(ev.t_us, 1000):
        part = ev.slice(a, b)
        out.append((enc.encode(part), int(part.t_us[0]), int(part.t_us[-1])))
    return out


def _raw(pkts, indices) -> list[EventPacketRecord]:
    return [EventPacketRecord(STAMP0_NS + pkts[i][1] * 1000, '', 720, 1280, i, 0, 'evt3', False,
                              pkts[i][0]) for i in indices]




def quad_scene(ego_level: int = 3):
    """The trust tests' quadcopter (4 m, egomotion 3 unless told, 0.4 s) and its packets."""
    scene = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=ego_level, seed=2)
    return scene, _encoded(scene, 2)
