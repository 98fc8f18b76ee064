# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Conformance of the EVT 3.0 decoder on a real Prophesee recording (test/data)."""

from pathlib import Path

import numpy as np
import pytest
from reference.naive_evt3 import NaiveEvt3Decoder

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.bags import iter_event_packets

DATA = Path(__file__).parent / 'data'
BAG = DATA / 'test_data_evt3_trigger'
REF = DATA / 'test_data_evt3_trigger.ref_decoded.npz'


@pytest.fixture(scope='module')
def packets():
    recs = list(iter_event_packets(BAG))
    assert len(recs) == 105
    assert {r.encoding for r in recs} == {'evt3'}
    assert {(r.width, r.height) for r in recs} == {(1280, 720)}
    return recs


@pytest.fixture(scope='module')
def ref():
    with np.load(REF) as d:
        return {k: d[k] for k in d.files}


def _check_against_ref(events, trig_t, trig_v, trig_id, ref):
    assert len(events) == 82469
    np.testing.assert_array_equal(events.t_us, ref['t'])
    np.testing.assert_array_equal(events.x, ref['x'])
    np.testing.assert_array_equal(events.y, ref['y'])
    np.testing.assert_array_equal(events.p, ref['p'])
    np.testing.assert_array_equal(trig_t, ref['trig_t'])
    np.testing.assert_array_equal(trig_v, ref['trig_value'])
    np.testing.assert_array_equal(trig_id, ref['trig_id'])


def _decode_all(dec, payloads, is_bigendian=False):
    out = [dec.decode(p, is_bigendian) for p in payloads]
    return (EventArrays.concatenate([o.events for o in out]),
            np.concatenate([o.trig_t_us for o in out]),
            np.concatenate([o.trig_value for o in out]),
            np.concatenate([o.trig_id for o in out]))


def test_real_bag_decodes_like_reference(packets, ref):
    dec = make_decoder('evt3', 1280, 720)
    ev, tt, tv, tid = _decode_all(dec, [r.events for r in packets])
    _check_against_ref(ev, tt, tv, tid, ref)
    assert ev.t_us.dtype == np.int64 and ev.x.dtype == np.uint16
    assert ev.y.dtype == np.uint16 and ev.p.dtype == np.uint8
    c = dec.counters
    assert c['packets'] == 105
    assert c['events'] == 82469 and c['triggers'] == 2
    assert c['skipped_other'] > 0  # the recording holds OTHERS/CONTINUED words
    assert c['out_of_bounds'] == c['odd_bytes'] == c['before_time_high'] == 0
    assert c['words'] == sum(len(r.events) // 2 for r in packets)


def test_real_bag_naive_twin_agrees(packets):
    dec = make_decoder('evt3', 1280, 720)
    naive = NaiveEvt3Decoder(1280, 720)
    for r in packets[:40]:
        pkt = dec.decode(r.events)
        ev, tr = naive.decode(r.events)
        assert list(zip(*(a.tolist() for a in pkt.events), strict=True)) == ev
        assert list(zip(pkt.trig_t_us.tolist(), pkt.trig_value.tolist(),
                        pkt.trig_id.tolist(), strict=True)) == tr
    assert dec.counters == naive.counters


def test_real_stream_cut_at_any_word(packets, ref):
    stream = np.concatenate([r.events for r in packets])
    rng = np.random.default_rng(7)
    cuts = np.sort(rng.choice(np.arange(1, stream.size // 2), 400, replace=False)) * 2
    pieces = np.split(stream, cuts)
    dec = make_decoder('evt3', 1280, 720)
    _check_against_ref(*_decode_all(dec, pieces), ref)


def test_real_stream_big_endian(packets, ref):
    swapped = [r.events.view('<u2').astype('>u2').view(np.uint8) for r in packets]
    dec = make_decoder('evt3', 1280, 720)
    _check_against_ref(*_decode_all(dec, swapped, is_bigendian=True), ref)


def test_real_stream_as_bytes_and_odd_offsets(packets, ref):
    dec = make_decoder('evt3', 1280, 720)
    # bytes objects, and uint8 views that start at an odd address
    payloads = []
    for i, r in enumerate(packets):
        if i % 2:
            payloads.append(bytes(r.events))
        else:
            buf = np.empty(r.events.size + 1, np.uint8)
            buf[1:] = r.events
            payloads.append(buf[1:])
    _check_against_ref(*_decode_all(dec, payloads), ref)


def test_real_stream_in_one_call_and_in_small_chunks(packets, ref, monkeypatch):
    stream = np.concatenate([r.events for r in packets]).tobytes()
    dec = make_decoder('evt3', 1280, 720)
    _check_against_ref(*_decode_all(dec, [stream]), ref)
    monkeypatch.setattr(type(dec), '_CHUNK_WORDS', 1000)  # many kernel calls per payload
    small = make_decoder('evt3', 1280, 720)
    _check_against_ref(*_decode_all(small, [stream]), ref)
    assert small.counters == dec.counters
