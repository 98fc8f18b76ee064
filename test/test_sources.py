# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""One camera per stream: packets of another source (frame_id) on the topic are left out.

Found by the red-team review of the node (two cameras on one topic): their interleaved
sequence numbers, clocks and sizes gave millions of "dropped" packets, a thousand
"camera restarts", valid packets "corrupt", "damaged data" and no rotor TRACKING.
"""

import math

import pytest
from trust_scenes import STAMP0_NS, _encoded, quad_scene

from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.pipeline.sources import ADOPT_RUN, SourceFilter
from helixtrack_ros.sim import make_scenario


def test_the_first_frame_is_the_stream_and_a_lone_other_one_is_adopted():
    counters: dict[str, int] = {}
    src = SourceFilter(counters)
    assert src.foreign('') is None and src.frame_id is None      # (no frame: no source)
    assert src.foreign('camera') is None and src.frame_id == 'camera'
    assert 'camera2' in src.foreign('camera2')
    assert src.foreign('camera') is None                          # (the run is broken)
    said = [src.foreign('camera2') for _ in range(ADOPT_RUN)]
    assert all(said[:-1]) and said[-1] is None and src.frame_id == 'camera2'
    assert counters['packets_foreign'] == ADOPT_RUN and src.last_foreign == ('camera',
                                                                             'camera2')
    assert src.foreign('camera') is not None


def _records(pkts, frame, seq0, stamp0_ns):
    return [EventPacketRecord(stamp0_ns + t0 * 1000, frame, 720, 1280, seq0 + i, 0, 'evt3',
                              False, payload) for i, (payload, t0, _) in enumerate(pkts)]


@pytest.fixture(scope='module')
def two_cameras():
    scene, pkts = quad_scene()
    other = make_scenario('quadcopter_4m', duration_s=0.4, ego_level=1, seed=5)
    mine = _records(pkts, 'camera', 0, STAMP0_NS)
    theirs = _records(_encoded(other, 5), 'camera2', 50_000, STAMP0_NS + 5 * 10**9)
    return scene, mine, theirs


def _rows(results):
    return [(r.t_us, r.stamp_ns, [(o.state, repr(o.rpm_shaft)) for o in r.rotors])
            for r in results]


def test_a_second_camera_on_the_topic_is_left_out_and_the_first_tracked_as_alone(
        two_cameras):
    scene, mine, theirs = two_cameras
    alone = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    want = alone.process_packets(mine)
    alone.close()
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    mixed = [p for pair in zip(mine, theirs) for p in pair]
    got = pipe.process_packets(mixed)
    pipe.close()
    c = pipe.counters
    assert c['packets_foreign'] == len(theirs)
    assert c['packets_dropped'] == 0 and c['seq_restarts'] == 0 and c['camera_restarts'] == 0
    assert c['packets_corrupt'] == 0 and c['format_changes'] == 0
    assert all(r.dropped and 'camera2' in r.dropped and not r.rotors for r in got[1::2])
    assert _rows(got[0::2]) == _rows(want)
    assert sum(not math.isnan(o.rpm_shaft) for r in got for o in r.rotors) > 1000
    assert pipe.foreign_source == ('camera', 'camera2')


def test_an_empty_packet_of_another_frame_sets_no_source(two_cameras):
    """(A test's priming packets, empty and under another frame, made the stream theirs and
    every camera packet foreign.)"""
    scene, mine, _ = two_cameras
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    empty = mine[0]._replace(frame_id='prime', events=b'', seq=99)
    got = pipe.process_packets([empty, *mine[:50]])
    pipe.close()
    assert pipe.counters['packets_foreign'] == 0 and all(r.dropped is None for r in got)
