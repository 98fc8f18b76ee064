# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""HDF5 (Metavision, DSEC, M3ED layouts) and AEDAT 4 recordings: events, sizes, errors,
and a scene tracked from each exactly as from the same events in an ``.npz`` file.

The HDF5 files are written with h5py in the layouts those tools use; the AEDAT 4 files by
iniVation's own dv-processing, so the reader is checked against the vendor's writer.
"""

import csv

from cli_scenes import simulated
import numpy as np
import pytest

from helixtrack_ros.cli import main
from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.recordings import open_recording

h5py = pytest.importorskip('h5py')
dv = pytest.importorskip('dv_processing')
pytest.importorskip('aedat')

#: Metavision's CD event (x, y, p, t), as its HDF5 event files store it
CD_EVENT = np.dtype([('x', '<u2'), ('y', '<u2'), ('p', '<i2'), ('t', '<i8')])
#: microseconds since 1970 of the AEDAT 4 files written here (a whole second)
EPOCH_US = 1_700_000_000_000_000


def _events(n: int, seed: int = 0, t0: int = 0, span_us: int = 5000) -> EventArrays:
    rng = np.random.default_rng(seed)
    return EventArrays(t0 + np.sort(rng.integers(0, span_us, n)).astype(np.int64),
                       rng.integers(0, 640, n).astype(np.uint16),
                       rng.integers(0, 480, n).astype(np.uint16),
                       rng.integers(0, 2, n).astype(np.uint8))


def write_metavision_h5(path, ev: EventArrays, width: int, height: int, **dset) -> None:
    """A Metavision-style HDF5 event file: /CD/events, /CD/indexes, a trigger group."""
    a = np.zeros(len(ev), CD_EVENT)
    a['x'], a['y'], a['p'], a['t'] = ev.x, ev.y, ev.p, ev.t_us
    with h5py.File(path, 'w') as f:
        f.attrs['geometry'] = f'{width}x{height}'
        cd = f.create_group('CD')
        cd.create_dataset('events', data=a, **dset)
        cd.create_dataset('indexes', data=np.zeros(2, [('id', '<u8'), ('ts', '<i8')]))
        f.create_group('EXT_TRIGGER').create_dataset(
            'events', data=np.zeros(0, [('p', '<i2'), ('t', '<i8'), ('id', '<i2')]))


def write_dsec_h5(path, ev: EventArrays, t_offset_us: int) -> None:
    """A DSEC-style file: /events/{x,y,p,t}, t relative to /t_offset; no sensor size."""
    with h5py.File(path, 'w') as f:
        g = f.create_group('events')
        g['x'], g['y'], g['p'] = ev.x, ev.y, ev.p
        g['t'] = (ev.t_us - t_offset_us).astype('<u4')
        f['t_offset'] = np.int64(t_offset_us)
        f['ms_to_idx'] = np.zeros(4, np.uint64)


def write_aedat4(path, ev: EventArrays, width: int, height: int, per_packet: int = 0) -> None:
    """An AEDAT 4 file by dv-processing (packets of ``per_packet`` events; 0: one)."""
    writer = dv.io.MonoCameraWriter(str(path), dv.io.MonoCameraWriter.EventOnlyConfig(
        'DVXplorer_test', (width, height)))
    step = per_packet or len(ev)
    for lo in range(0, len(ev), step):
        store = dv.EventStore()
        for i in range(lo, min(lo + step, len(ev))):
            store.push_back(EPOCH_US + int(ev.t_us[i]), int(ev.x[i]), int(ev.y[i]),
                            bool(ev.p[i]))
        writer.writeEvents(store)
    del writer


def _read(path, topic=None, notes=None) -> tuple[EventArrays, list]:
    rec = open_recording(path, topic)
    dec, parts, pkts = None, [], []
    for pkt in rec.packets(on_notice=None if notes is None else notes.append):
        assert pkt.encoding == 'mono' and (pkt.width, pkt.height) == (rec.width, rec.height)
        dec = dec or make_decoder('mono', pkt.width, pkt.height)
        parts.append(dec.decode(pkt.events, time_base=pkt.time_base).events)
        pkts.append(pkt)
    return EventArrays.concatenate(parts), pkts


def _same(a: EventArrays, b: EventArrays) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ('t_us', 'x', 'y', 'p'))


# ------------------------------------------------------------------------------ HDF5
def test_a_metavision_file_gives_its_events_in_1_ms_packets(tmp_path):
    ev = _events(20_000, t0=123)
    write_metavision_h5(tmp_path / 'a.hdf5', ev, 640, 480, compression='gzip', chunks=True)
    rec = open_recording(tmp_path / 'a.hdf5')
    assert (rec.kind, rec.topic, rec.width, rec.height) == ('hdf5', '/CD/events', 640, 480)
    got, pkts = _read(tmp_path / 'a.hdf5')
    assert _same(got, ev)
    assert [p.seq for p in pkts] == list(range(len(pkts))) and 4 <= len(pkts) <= 6
    assert pkts[0].stamp_ns == 123_000


def test_a_dsec_file_adds_its_offset_and_takes_its_size_from_the_events(tmp_path):
    ev = _events(5000, t0=52_000_000_000)
    write_dsec_h5(tmp_path / 'events.h5', ev, 52_000_000_000)
    rec = open_recording(tmp_path / 'events.h5')
    assert (rec.topic, rec.width, rec.height) == ('/events', int(ev.x.max()) + 1,
                                                  int(ev.y.max()) + 1)
    assert _same(_read(tmp_path / 'events.h5')[0], ev)


def test_two_places_of_events_need_one_named(tmp_path, capsys):
    """An M3ED-like file of two cameras: the error lists both, ``--topic`` picks one."""
    left, right = _events(3000, 1), _events(3000, 2)
    with h5py.File(tmp_path / 'm3ed.h5', 'w') as f:
        for name, ev in (('left', left), ('right', right)):
            g = f.create_group(f'prophesee/{name}')
            g['x'], g['y'], g['p'], g['t'] = ev.x, ev.y, ev.p, ev.t_us
    assert main(['detect', str(tmp_path / 'm3ed.h5'), '-o', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err
    assert '/prophesee/left, /prophesee/right' in err and '--topic' in err
    assert len(err.strip().splitlines()) == 1
    assert _same(_read(tmp_path / 'm3ed.h5', 'prophesee/right')[0], right)


def test_nanoseconds_are_read_as_t_ns_and_refused_under_t(tmp_path):
    ev = _events(5000, t0=10_000)
    with h5py.File(tmp_path / 'ns.h5', 'w') as f:
        f['ev/x'], f['ev/y'], f['ev/p'], f['ev/t_ns'] = ev.x, ev.y, ev.p, ev.t_us * 1000
    assert _same(_read(tmp_path / 'ns.h5')[0], ev)
    with h5py.File(tmp_path / 'ns_as_t.h5', 'w') as f:
        f['ev/x'], f['ev/y'], f['ev/p'], f['ev/t'] = ev.x, ev.y, ev.p, ev.t_us * 1000
    with pytest.raises(ValueError, match='nanoseconds, not microseconds'):
        _read(tmp_path / 'ns_as_t.h5')


def test_events_out_of_order_are_sorted_and_said(tmp_path):
    ev = _events(4000)
    a = np.zeros(len(ev), CD_EVENT)
    a['x'], a['y'], a['p'], a['t'] = ev.x, ev.y, ev.p, ev.t_us
    a[[10, 11]] = a[[11, 10]]
    a[[500, 2000]] = a[[2000, 500]]
    with h5py.File(tmp_path / 'u.hdf5', 'w') as f:
        f.attrs['geometry'] = '640x480'
        f['CD/events'] = a
    notes = []
    got = _read(tmp_path / 'u.hdf5', notes=notes)[0]
    assert np.array_equal(got.t_us, ev.t_us) and len(notes) == 1 and 'sorted' in notes[0]


def test_a_codec_plugin_missing_is_one_line_naming_it(tmp_path, capsys):
    """Metavision's files are compressed with its ECF codec, an HDF5 plugin (0x8ECF)."""
    from h5py import h5d, h5p, h5s, h5t, h5z
    assert not h5z.filter_avail(0x8ECF)
    with h5py.File(tmp_path / 'ecf.hdf5', 'w') as f:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((100,))
        dcpl.set_filter(0x8ECF, h5z.FLAG_OPTIONAL, ())
        h5d.create(f.create_group('CD').id, b'events', h5t.py_create(CD_EVENT),
                   h5s.create_simple((500,)), dcpl=dcpl)
    assert main(['track', str(tmp_path / 'ecf.hdf5'), '-o', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Prophesee's ECF codec" in err
    assert 'HDF5_PLUGIN_PATH' in err


def test_a_damaged_block_is_left_out_and_the_rest_read(tmp_path, monkeypatch):
    """A block whose compressed bytes are damaged: said, the other blocks' events kept."""
    import helixtrack_ros.io.hdf5_events as mod
    monkeypatch.setattr(mod, '_CHUNK', 1000)
    ev = _events(4000, span_us=20_000)
    path = tmp_path / 'd.hdf5'
    write_metavision_h5(path, ev, 640, 480, compression='gzip', chunks=(1000,))
    with h5py.File(path, 'r') as f:
        info = f['CD/events'].id.get_chunk_info(1)
    data = bytearray(path.read_bytes())
    data[info.byte_offset:info.byte_offset + info.size] = b'\x55' * info.size
    path.write_bytes(bytes(data))
    notes = []
    got = _read(path, notes=notes)[0]
    keep = np.r_[0:1000, 2000:4000]
    assert _same(got, EventArrays(ev.t_us[keep], ev.x[keep], ev.y[keep], ev.p[keep]))
    assert len(notes) == 1 and 'events 1000..1999 cannot be read' in notes[0]


def test_files_that_are_no_event_hdf5_are_one_line(tmp_path, capsys):
    (tmp_path / 'text.h5').write_text('not hdf5\n')
    with h5py.File(tmp_path / 'tensor.h5', 'w') as f:
        f['data'] = np.zeros((3, 4, 5), np.float32)
    for name, says in (('text.h5', 'cannot be read as HDF5'), ('tensor.h5', 'no events found')):
        assert main(['track', str(tmp_path / name), '-o', str(tmp_path / 'o')]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err, err


# ------------------------------------------------------------------------------ AEDAT 4
def test_an_aedat4_file_gives_its_events_stamped_at_their_clock(tmp_path):
    ev = _events(6000, t0=2_500_000)
    write_aedat4(tmp_path / 'a.aedat4', ev, 640, 480, per_packet=700)
    rec = open_recording(tmp_path / 'a.aedat4')
    assert (rec.kind, rec.topic, rec.width, rec.height) == ('aedat4', '0', 640, 480)
    got, pkts = _read(tmp_path / 'a.aedat4')
    # sensor time counts from the whole second before the first event
    assert _same(got, EventArrays(ev.t_us - 2_000_000, ev.x, ev.y, ev.p))
    assert pkts[0].stamp_ns == (EPOCH_US + int(ev.t_us[0])) * 1000


def test_an_aedat4_file_cut_short_keeps_its_whole_packets(tmp_path, capsys):
    ev = _events(6000, span_us=30_000)
    write_aedat4(tmp_path / 'a.aedat4', ev, 640, 480, per_packet=1000)
    data = (tmp_path / 'a.aedat4').read_bytes()
    (tmp_path / 'cut.aedat4').write_bytes(data[:len(data) * 2 // 3])
    assert main(['events', str(tmp_path / 'cut.aedat4'), '--out', str(tmp_path / 'e.npz'),
                 '-q']) == 3
    assert 'cut short' in capsys.readouterr().err
    with np.load(tmp_path / 'e.npz') as got:
        n = len(got['t_us'])
        assert 1000 <= n < 6000 and np.array_equal(got['t_us'], ev.t_us[:n])


def test_a_file_that_is_no_aedat4_is_one_line(tmp_path, capsys):
    (tmp_path / 'x.aedat4').write_bytes(b'#!AER-DAT3.1\r\n' + bytes(100))
    assert main(['track', str(tmp_path / 'x.aedat4'), '-o', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and 'not a readable AEDAT 4 file' in err


# ------------------------------------------------------------------------------ a scene
@pytest.fixture(scope='module')
def scene_files(tmp_path_factory):
    """A 0.2 s scene's events as .npz, Metavision HDF5, DSEC HDF5 and AEDAT 4."""
    scene = simulated(tmp_path_factory, 'lone_constant', 0.2, 5)
    assert main(['events', str(scene / 'events'), '--out', str(scene / 'ev.npz'), '-q']) == 0
    with np.load(scene / 'ev.npz') as d:
        ev = EventArrays(d['t_us'], d['x'], d['y'], d['p'])
        width, height = int(d['width']), int(d['height'])
    write_metavision_h5(scene / 'mv.hdf5', ev, width, height, compression='gzip',
                        chunks=True)
    write_aedat4(scene / 'dv.aedat4', ev, width, height, per_packet=20_000)
    # (DSEC's offset moves the times: the same events, shifted, in an npz beside it)
    off = 52_000_000_000
    np.savez(scene / 'shifted.npz', t_us=ev.t_us + off, x=ev.x, y=ev.y, p=ev.p, width=width,
             height=height)
    write_dsec_h5(scene / 'dsec.h5', EventArrays(ev.t_us + off, ev.x, ev.y, ev.p), off)
    return scene


def _rows(scene, name, out):
    assert main(['track', str(scene / name), '--params', str(scene / 'params.yaml'), '-q',
                 '--out', str(out)]) == 0
    return [{k: v for k, v in r.items() if k != 'stamp_ns'}
            for r in csv.DictReader((out / 'rpm.csv').open())]


@pytest.mark.parametrize('name, ref', [('mv.hdf5', 'ev.npz'), ('dv.aedat4', 'ev.npz'),
                                       ('dsec.h5', 'shifted.npz')])
def test_a_scene_tracks_as_from_the_same_events_in_npz(scene_files, name, ref, tmp_path,
                                                       capsys):
    want = _rows(scene_files, ref, tmp_path / 'ref')
    assert sum(r['state'] == 'TRACKING' for r in want) > 150
    assert _rows(scene_files, name, tmp_path / 'got') == want
    capsys.readouterr()


@pytest.mark.parametrize('module, name, says', [('h5py', 'a.h5', 'pip install h5py'),
                                                ('aedat', 'a.aedat4', 'pip install aedat')])
def test_a_missing_reader_library_is_one_line_naming_it(module, name, says, tmp_path,
                                                        monkeypatch, capsys):
    (tmp_path / name).write_bytes(bytes(64))
    monkeypatch.setitem(__import__('sys').modules, module, None)   # (import fails)
    assert main(['track', str(tmp_path / name), '-o', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
