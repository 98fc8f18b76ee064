# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Outputs of the offline commands (#15.7): one-file results.mcap, chunked events."""

from cli_scenes import simulated
import numpy as np
import pytest

from helixtrack_ros.cli import events as events_cmd
from helixtrack_ros.cli import main
from helixtrack_ros.io.bags import iter_messages

MCAP_MAGIC = b'\x89MCAP0\r\n'


@pytest.fixture(scope='module')
def scene(tmp_path_factory):
    return simulated(tmp_path_factory, 'lone_constant', 0.15, 5)


def test_results_mcap_is_one_self_contained_file(scene, tmp_path, capsys):
    out = tmp_path / 'track'
    for _ in range(2):   # a second run replaces the first run's file
        assert main(['track', str(scene / 'events'), '--params', str(scene / 'params.yaml'),
                     '--out', str(out)]) == 0
    bag = out / 'results.mcap'
    assert bag.is_file()
    assert sorted(p.name for p in out.iterdir()) == ['overlay.png', 'results.mcap', 'rpm.csv',
                                                     'rpm.png']
    data = bag.read_bytes()
    assert data.startswith(MCAP_MAGIC) and data.endswith(MCAP_MAGIC)
    # schemas travel in the file: a viewer needs nothing else
    assert b'ros2msg' in data and b'sensor_msgs/msg/JointState' in data
    topics = {t for t, _, _ in iter_messages(bag)}
    assert {'/helixtrack/rotors', '/diagnostics'} <= topics
    assert any(t.endswith('/rpm') for t in topics)
    assert f'{out / "results.mcap"}' in capsys.readouterr().out


def test_simulate_and_demo_replace_an_earlier_run(tmp_path, capsys):
    out = tmp_path / 's'
    for seed in ('1', '2'):
        assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.05', '--seed',
                     seed, '--out', str(out)]) == 0, capsys.readouterr().err
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.05',
                 '--format', 'raw-evt3', '--out', str(out)]) == 0
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.05',
                 '--format', 'raw-evt3', '--out', str(out)]) == 0
    assert (out / 'events').is_dir() and (out / 'events.raw').is_file()


def test_events_to_a_directory_streams_chunks(scene, tmp_path, capsys, monkeypatch):
    assert main(['events', str(scene / 'events'), '--out', str(tmp_path / 'all.npz')]) == 0
    assert f'-> {tmp_path / "all.npz"}' in capsys.readouterr().out
    whole = np.load(tmp_path / 'all.npz')
    monkeypatch.setattr(events_cmd, 'CHUNK_EVENTS', 300_000)
    out = tmp_path / 'chunks'
    (out).mkdir()
    (out / 'events_000099.npz').write_bytes(b'stale')   # left by an earlier run
    assert main(['events', str(scene / 'events'), '--out', str(out)]) == 0
    files = sorted(out.glob('events_*.npz'))
    assert len(files) >= 3 and files[0].name == 'events_000000.npz'
    text = capsys.readouterr().out
    assert f'-> {out}/ ({files[0].name} .. {files[-1].name})' in text
    parts = [np.load(f) for f in files]
    # bounded: no chunk holds much more than CHUNK_EVENTS (one packet at most beyond)
    assert max(len(p['t_us']) for p in parts[:-1]) < 300_000 + 100_000
    for key in ('t_us', 'x', 'y', 'p'):
        assert np.array_equal(np.concatenate([p[key] for p in parts]), whole[key])



def test_a_directory_of_event_chunks_tracks_as_the_one_file(scene, tmp_path, capsys,
                                                            monkeypatch):
    """(Formats review: ``track`` did not read the chunks ``events --out DIR`` writes back:
    "not a rosbag2 directory".)"""
    from cli_scenes import rotor_rows
    assert main(['events', str(scene / 'events'), '--out', str(tmp_path / 'all.npz')]) == 0
    monkeypatch.setattr(events_cmd, 'CHUNK_EVENTS', 300_000)
    chunks = tmp_path / 'chunks'
    assert main(['events', str(scene / 'events'), '--out', str(chunks)]) == 0
    assert len(list(chunks.glob('events_*.npz'))) >= 3
    whole = rotor_rows(tmp_path / 'all.npz', scene, tmp_path / 't_file')
    assert whole and rotor_rows(chunks, scene, tmp_path / 't_dir') == whole
    capsys.readouterr()
    assert main(['events', str(chunks), '--out', str(chunks)]) == 2      # (not over itself)
    assert 'holds the recording read' in capsys.readouterr().err
    assert len(list(chunks.glob('events_*.npz'))) >= 3


def test_events_interrupted_writes_what_was_decoded(scene, tmp_path, capsys, monkeypatch):
    """(Review: Ctrl-C left no file for --out FILE.npz, and with --out DIR a chunk cut
    short, whose x no longer loaded, among whole ones.)"""
    assert main(['events', str(scene / 'events'), '--out', str(tmp_path / 'all.npz')]) == 0
    whole = np.load(tmp_path / 'all.npz')
    take = events_cmd._Checked.take
    calls = []

    def interrupted_take(self, pkt):
        calls.append(1)
        if len(calls) == 60:
            raise KeyboardInterrupt
        return take(self, pkt)
    monkeypatch.setattr(events_cmd._Checked, 'take', interrupted_take)
    capsys.readouterr()
    assert main(['events', str(scene / 'events'), '--out', str(tmp_path / 'part.npz')]) == 130
    assert 'interrupted' in capsys.readouterr().err
    part = np.load(tmp_path / 'part.npz')
    n = len(part['t_us'])
    assert 0 < n < len(whole['t_us'])
    for key in ('t_us', 'x', 'y', 'p'):
        assert np.array_equal(part[key], whole[key][:n])


def test_an_npz_chunk_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    def cut_short(fh, **arrays):
        fh.write(b'PK\x03\x04 half a zip')
        raise KeyboardInterrupt
    monkeypatch.setattr(events_cmd.np, 'savez', cut_short)
    with pytest.raises(KeyboardInterrupt):
        events_cmd._save_whole(tmp_path / 'events_000000.npz', t_us=np.arange(3))
    assert list(tmp_path.iterdir()) == []


#: a track run whose files may not grow past a size (as on a full disk: EFBIG, not ENOSPC,
#: but the same partly written buffer); run in a process of its own
_FULL_DISK_RUN = """
import resource, signal, sys
from helixtrack_ros.cli import main
args = ['track', {events!r}, '--params', {params!r}, '-q', '-o']
assert main([*args, {out!r} + '_warm']) == 0      # (kernels cached: no cache file written)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
sys.exit(main([*args, {out!r}]))
"""


@pytest.mark.parametrize('limit', [20_000, 60_000])   # (rpm.csv 25 kB, results.mcap 100)
def test_a_full_disk_leaves_whole_rows_and_no_unfinished_bag(scene, tmp_path, limit):
    """(Review: rpm.csv ended in a row cut short, 10001.336,3.3, which reads as other
    numbers, and a hidden .results.mcap.part folder was left.)"""
    import subprocess
    import sys
    out = tmp_path / 'out'
    code = _FULL_DISK_RUN.format(limit=limit, events=str(scene / 'events'),
                                 params=str(scene / 'params.yaml'), out=str(out))
    run = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2, run.stderr[-800:]
    assert 'Traceback' not in run.stderr
    assert run.stderr.count('helixtrack: error:') == 1, run.stderr[-800:]
    text = (out / 'rpm.csv').read_text()
    lines = text.splitlines()
    assert text.endswith('\n') and len(lines) >= 1
    assert {len(line.split(',')) for line in lines} == {len(lines[0].split(','))}
    assert not any(p.name.endswith('.part') for p in out.iterdir()), list(out.iterdir())
