# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Conformance of the libcaer decoders on a real iniVation recording (test/data).

The sums are those event_camera_codecs' own decoder test asserts for this
recording, over all events decoded to nanoseconds; the decoders here give
microseconds, and the packets' common sub-microsecond part of ``time_base``
is added back.
"""

import io
import lzma
from pathlib import Path

import numpy as np
import pytest

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.codecs.libcaer_encoder import encode_libcaer, encode_libcaer_cmp
from helixtrack_ros.core.events import EventArrays

DATA = Path(__file__).parent / 'data' / 'libcaer_rollover.npz.xz'


@pytest.fixture(scope='module')
def packets():
    with np.load(io.BytesIO(lzma.decompress(DATA.read_bytes()))) as d:
        payload, sizes, time_base = d['payload'], d['sizes'], d['time_base']
    assert len(sizes) == 201 and int(sizes.sum()) == payload.size
    return [(p, int(tb)) for p, tb in zip(np.split(payload, np.cumsum(sizes)[:-1]), time_base,
                                          strict=True)]


def _decode(dec, pkts):
    return [dec.decode(p, False, tb).events for p, tb in pkts]


def test_checksums_of_event_camera_codecs(packets):
    dec = make_decoder('libcaer', 640, 480)
    evs = _decode(dec, packets)
    t_ns = np.concatenate([e.t_us * 1000 + tb % 1000 for e, (_, tb) in zip(evs, packets,
                                                                             strict=True)])
    ev = EventArrays.concatenate(evs)
    assert int(ev.x.astype(np.int64).sum()) == 111_651_612
    assert int(ev.y.astype(np.int64).sum()) == 82_801_007
    assert int(ev.p.astype(np.int64).sum()) == 181_908
    assert int(t_ns.astype(np.uint64).sum(dtype=np.uint64)) == 15_762_826_572_202_229_126
    assert int(t_ns[0]) == 1_702_309_120_762_236_018
    first = evs[0]
    assert int(np.count_nonzero(first.p == 0)) == 741 and int(first.p.sum()) == 872
    # the counter rolls over between packets: time still increases
    assert np.all(np.diff(ev.t_us) >= 0)
    c = dec.counters
    assert c['packets'] == 201 and c['events'] == len(ev) == 334_331
    assert c['out_of_bounds'] == c['skipped_other'] == c['skipped_unknown'] == 0
    assert c['time_clamped'] == c['time_resets'] == c['odd_bytes'] == 0


def test_reencoding_gives_the_same_bytes_and_cmp_the_same_events(packets):
    plain = make_decoder('libcaer', 640, 480)
    cmp = make_decoder('libcaer_cmp', 640, 480)
    for payload, tb in packets:
        ev = plain.decode(payload, False, tb).events
        assert encode_libcaer(ev, tb)[0] == payload.tobytes()
        # the driver's cmp time base: the packet's first event, same sub-microsecond part
        data, base = encode_libcaer_cmp(ev, int(ev.t_us[0]) * 1000 + tb % 1000)
        got = cmp.decode(data, False, base).events
        for a, b in zip(got, ev, strict=True):
            np.testing.assert_array_equal(a, b)
    c = cmp.counters
    assert c['events'] == 334_331 and c['time_clamped'] == c['skipped_unknown'] == 0


def test_big_endian_and_split_payloads(packets):
    ref = EventArrays.concatenate(_decode(make_decoder('libcaer', 640, 480), packets))
    swapped = [(p.view('<u4').astype('>u4').view(np.uint8), tb) for p, tb in packets]
    dec = make_decoder('libcaer', 640, 480)
    got = EventArrays.concatenate([dec.decode(p, True, tb).events for p, tb in swapped])
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)
