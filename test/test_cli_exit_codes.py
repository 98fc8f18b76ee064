# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Exit codes and one-line messages of ``helixtrack`` and ``helixtrack_node`` (issue #11.8).

0 done, 1 nothing found, 2 bad command line or input, 3 a bag cut short
(read up to the damage), 130 interrupted; every failure is one line on
stderr, never a traceback.
"""

import csv
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys

from cli_scenes import simulated
import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer

from helixtrack_ros.cli import main
from helixtrack_ros.io.bags import (
    EVENT_PACKET_TYPE,
    EventBagWriter,
    ResultBagWriter,
    TruncatedBagError,
    count_messages,
    iter_event_packets,
    typestore,
)

ROOT = Path(__file__).resolve().parents[1]


def one_line(err: str) -> str:
    """The only non-empty line of ``err`` (fails on tracebacks and on several lines)."""
    assert 'Traceback' not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope='module')
def scene(tmp_path_factory):
    """A 0.1 s lone rotor scene (100 packets, 3 MB chunks of mcap)."""
    return simulated(tmp_path_factory, 'lone_constant', 0.1, 3)


@pytest.fixture(scope='module')
def background(tmp_path_factory):
    """0.15 s of background events without any rotor."""
    return simulated(tmp_path_factory, 'background_only', 0.15, 1, 'background')


def cut_copy(scene: Path, dest: Path, keep: 'float | int', metadata: bool = True) -> Path:
    """A copy of the scene's bag with its mcap file cut to ``keep`` (fraction or bytes)."""
    dest.mkdir(parents=True)
    (src,) = (scene / 'events').glob('*.mcap')
    data = src.read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else keep
    (dest / src.name).write_bytes(data[:n])
    if metadata:
        shutil.copy(scene / 'events' / 'metadata.yaml', dest / 'metadata.yaml')
    return dest


def raw_event_bag(path: Path, payloads: list, encoding: str = 'evt3') -> Path:
    """A bag of EventPackets with the given payloads (bytes) or raw CDR messages."""
    if encoding == 'cdr':
        w = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
        w.open()
        conn = w.add_connection('/event_camera/events', EVENT_PACKET_TYPE, typestore=typestore())
        for k, raw in enumerate(payloads):
            w.write(conn, 1_000_000 + k, raw)
        w.close()
        return path
    with EventBagWriter(path) as w:
        for k, payload in enumerate(payloads):
            w.write(1_000_000_000 + 1_000_000 * k, k, payload, encoding=encoding)
    return path


# ---------------------------------------------------------------------- documentation
def test_exit_codes_are_defined_once_and_documented(capsys):
    from helixtrack_ros.cli import ExitCode
    assert {int(c) for c in ExitCode} == {0, 1, 2, 3, 130}
    with pytest.raises(SystemExit) as exc:
        main(['--help'])
    assert exc.value.code == 0
    help_text = capsys.readouterr().out
    readme = (ROOT / 'README.md').read_text()
    section = readme[readme.index('## The `helixtrack` command'):readme.index('## Running')]
    for code in ExitCode:
        assert re.search(rf'^  {int(code)}\s+\S', help_text, re.M), code
        assert f'| {int(code)} |' in section, code
    assert 'mcap recover' in help_text and 'mcap recover' in section


# ---------------------------------------------------------------------- 1: nothing tracked
def test_track_without_messages_on_the_topic_exits_1(scene, tmp_path, capsys):
    bag = raw_event_bag(tmp_path / 'bag', [], encoding='cdr')
    assert main(['track', str(bag), '--params', str(scene / 'params.yaml'),
                 '--out', str(tmp_path / 'o')]) == 1
    line = one_line(capsys.readouterr().err)
    assert 'no rotor tracked' in line and 'no EventPacket message' in line


def test_track_of_packets_without_events_exits_1(scene, tmp_path, capsys):
    bag = raw_event_bag(tmp_path / 'bag', [b''] * 5)
    assert main(['track', str(bag), '--params', str(scene / 'params.yaml'),
                 '--out', str(tmp_path / 'o')]) == 1
    assert 'hold no event' in one_line(capsys.readouterr().err)


def test_track_with_every_packet_refused_exits_1(scene, tmp_path, capsys):
    bag = raw_event_bag(tmp_path / 'bag', [b'\x00' * 64] * 5, encoding='bogus')
    assert main(['track', str(bag), '--params', str(scene / 'params.yaml'),
                 '--out', str(tmp_path / 'o')]) == 1
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    assert 'every one of the 5 packets was refused' in err.splitlines()[-1]


def test_events_leaves_out_the_packets_track_refuses(tmp_path, capsys):
    """Random bytes labelled evt3 came out of `events` as 1.5 M events and 0.6 M
    triggers, exit 0, while track refused every packet (red-team review)."""
    rng = np.random.default_rng(4)
    bag = raw_event_bag(tmp_path / 'bag', [rng.integers(0, 256, 20_000, np.uint8).tobytes()
                                           for _ in range(5)])
    assert main(['events', str(bag), '-o', str(tmp_path / 'e.npz'), '-q']) == 1
    err = capsys.readouterr().err
    assert '5 of 5 packets refused' in err and 'no event decoded' in err
    assert len(np.load(tmp_path / 'e.npz')['t_us']) == 0


def test_refused_packets_are_said_three_times_then_counted(capsys):
    """A file whose every packet is refused for its own reason printed 1,372 lines
    (adversarial review)."""
    from types import SimpleNamespace

    from helixtrack_ros.cli.track import REFUSALS_SAID, _TrackRun
    run = _TrackRun(['a'], frames=False)
    for seq in range(10):
        run._note(SimpleNamespace(seq=seq), SimpleNamespace(error=f'sensor time leapt {seq} s'))
    run._note(SimpleNamespace(seq=10), SimpleNamespace(error='unsupported encoding x'))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == REFUSALS_SAID + 2 and 'counted, not listed' in lines[-2]
    assert 'packet 0: sensor time leapt 0 s' in lines[0]
    assert 'packet 10: unsupported encoding x' in lines[-1]     # a new kind is said
    assert run.errors == {'sensor time leapt # s': 10, 'unsupported encoding x': 1}


def test_evt3_data_under_an_evt2_header_is_nothing_tracked_not_a_cut_file(tmp_path, capsys):
    """Every packet refused and the data ending inside a 4-byte word: exit 3 "cut short,
    no repair needed" hid that nothing was tracked (adversarial review)."""
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.03', '--format',
                 'raw-evt3', '-q', '-o', str(tmp_path / 's')]) == 0
    data = (tmp_path / 's' / 'events.raw').read_bytes()
    body = data[data.index(b'% end\n') + 6:]
    body = body if len(body) % 4 else body + bytes(2)
    bad = tmp_path / 'mislabelled.raw'
    bad.write_bytes(b'% evt 2.0\n% format EVT2;height=720;width=1280\n% end\n' + body)
    capsys.readouterr()
    assert main(['track', str(bad), '--params', str(tmp_path / 's' / 'params.yaml'),
                 '-o', str(tmp_path / 'o'), '-q']) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert 'no rotor tracked' in last and 'also cut short' in last


def test_packets_in_reverse_order_are_said_not_silently_clamped(scene, tmp_path, capsys):
    """Every event held at the latest time and "time backwards 0" in the summary: nothing
    said why nothing was tracked (adversarial review)."""
    # (mono packets: reversed EVT3 packets are refused as stale or leaping first)
    from helixtrack_ros.codecs import make_decoder
    from helixtrack_ros.io.bags import iter_event_packets
    from helixtrack_ros.io.event_packets import mono_packets
    dec = make_decoder('evt3', 1280, 720)
    events = [dec.decode(p.events).events for p in iter_event_packets(scene / 'events')]
    pkts = list(mono_packets(events, 1280, 720))[::-1]
    with EventBagWriter(tmp_path / 'reversed') as w:
        for k, pkt in enumerate(pkts):
            w.write(1_000_000_000 + 1_000_000 * k, pkt.seq, bytes(pkt.events),
                    encoding=pkt.encoding, time_base=pkt.time_base)
    capsys.readouterr()
    assert main(['track', str(tmp_path / 'reversed'), '--params', str(scene / 'params.yaml'),
                 '-o', str(tmp_path / 'o'), '-q']) == 1
    out, err = capsys.readouterr()
    assert 'events clamped' in out
    assert 'held at the latest time: packets out of order' in err


def test_track_without_params_and_no_rotor_in_view_exits_1(background, tmp_path, capsys):
    assert main(['track', str(background / 'events'), '--out', str(tmp_path / 'o')]) == 1
    line = one_line(capsys.readouterr().err)   # (and no matplotlib legend warning)
    assert 'no rotor detected' in line and '--params' in line
    assert (tmp_path / 'o' / 'rpm.csv').read_text().count('\n') == 1   # the header only


def test_detect_finding_nothing_exits_1_with_one_line(background, tmp_path, capsys):
    """...and leaves a parameter file already there as it was (it was replaced by one of
    no rotor: red-team review)."""
    mine = tmp_path / 'p.yaml'
    mine.write_text('helixtrack:\n  ros__parameters: {rotor_names: [a]}\n')
    assert main(['detect', str(background / 'events'), '--out', str(mine)]) == 1
    assert 'no rotor found' in one_line(capsys.readouterr().err)
    assert 'rotor_names: [a]' in mine.read_text()


# ---------------------------------------------------------------------- 2: bad input
def test_topic_of_another_type_is_one_line_and_exit_2(tmp_path, capsys):
    bag = tmp_path / 'results'
    with ResultBagWriter(bag) as w:
        w.write_diagnostics(1, [])
    for cmd in (['track', str(bag), '--out', str(tmp_path / 'o')],
                ['events', str(bag), '--out', str(tmp_path / 'e.npz')],
                ['detect', str(bag), '--out', str(tmp_path / 'p.yaml')]):
        assert main([*cmd, '--topic', '/diagnostics']) == 2, cmd
        line = one_line(capsys.readouterr().err)
        assert 'diagnostic_msgs/msg/DiagnosticArray' in line and EVENT_PACKET_TYPE in line


def test_corrupt_message_is_one_line_and_exit_2(scene, tmp_path, capsys):
    bag = raw_event_bag(tmp_path / 'bag', [b'\x00\x01\x00\x00' + b'\xff' * 7], encoding='cdr')
    assert main(['events', str(bag), '--out', str(tmp_path / 'e.npz')]) == 2
    assert 'corrupt EventPacket 0' in one_line(capsys.readouterr().err)
    assert main(['track', str(bag), '--params', str(scene / 'params.yaml'),
                 '--out', str(tmp_path / 'o')]) == 2
    assert 'corrupt EventPacket 0' in one_line(capsys.readouterr().err)


def test_unwritable_outputs_are_one_line_and_exit_2(scene, tmp_path, capsys):
    a_file = tmp_path / 'a_file'
    a_file.write_text('x')
    (tmp_path / 'd.npz').mkdir()
    bag, params = str(scene / 'events'), str(scene / 'params.yaml')
    cases = [
        (['track', bag, '--params', params, '--out', str(a_file)], 'is a file'),
        (['track', bag, '--params', params, '--out', str(a_file / 'sub')], 'is a file'),
        (['simulate', '--scenario', 'lone_constant', '--duration', '0.1', '--out',
          '/proc/helixtrack_x'], 'cannot write to output directory /proc/helixtrack_x'),
        (['demo', '--duration', '0.3', '--out', str(a_file)], 'is a file'),
        (['events', bag, '--out', str(a_file / 'e.npz')], 'is a file'),
        (['events', bag, '--out', str(tmp_path / 'd.npz')], 'is a directory'),
        (['events', bag, '--out', str(a_file / 'chunks')], 'is a file'),
        (['detect', bag, '--out', str(tmp_path)], 'is a directory'),
        (['detect', bag, '--out', '/proc/helixtrack_x.yaml'], 'cannot write'),
    ]
    for cmd, words in cases:
        assert main(cmd) == 2, cmd
        line = one_line(capsys.readouterr().err)
        assert words in line, (cmd, line)
    assert a_file.read_text() == 'x'


@pytest.mark.parametrize('cmd', [
    ['simulate', '--duration', '0', '--out', 'X'],
    ['simulate', '--duration', '-1', '--out', 'X'],
    ['simulate', '--duration', 'nan', '--out', 'X'],
    ['demo', '--duration', '0', '--out', 'X'],
    ['demo', '--skip', '-0.1', '--out', 'X'],
    ['track', 'BAG', '--skip', '-1', '--out', 'X'],
    ['detect', 'BAG', '--window', '0', '--out', 'X'],
    ['detect', 'BAG', '--at-s', '-0.5', '--out', 'X'],
])
def test_durations_must_be_positive(cmd, tmp_path, capsys):
    cmd = [str(tmp_path / 'x') if a == 'X' else str(tmp_path / 'bag') if a == 'BAG' else a
           for a in cmd]
    with pytest.raises(SystemExit) as exc:
        main(cmd)
    assert exc.value.code == 2
    line = one_line(capsys.readouterr().err)
    assert re.search(r'must be >=? 0 s', line) and '--help' in line
    assert not (tmp_path / 'x').exists()


@pytest.mark.parametrize('cmd', [
    ['track', 'BAG', '--out', ''], ['simulate', '--out', ' '], ['demo', '--out', ''],
    ['detect', 'BAG', '--out', ''], ['events', 'BAG', '-o', ''],
])
def test_an_empty_output_path_is_one_line_not_the_current_directory(cmd, tmp_path, capsys,
                                                                     monkeypatch):
    """``-o ""`` wrote rpm.csv and results.mcap into the current directory (bad-input
    review)."""
    monkeypatch.chdir(tmp_path)
    cmd = [str(tmp_path / 'bag') if a == 'BAG' else a for a in cmd]
    with pytest.raises(SystemExit) as exc:
        main(cmd)
    assert exc.value.code == 2
    assert 'empty' in one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_simulate_to_dir_refuses_a_zero_duration(tmp_path):
    from helixtrack_ros.cli import CliError, simulate_to_dir
    with pytest.raises(CliError, match='> 0'):
        simulate_to_dir('lone_constant', 0.0, 0, tmp_path / 's', quiet=True)


# ---------------------------------------------------------------------- 3: bag cut short
def test_a_cut_mcap_file_reads_every_intact_packet_before_the_damage(scene, tmp_path):
    from helixtrack_ros.io.bags import TruncatedBagError
    full = list(iter_event_packets(scene / 'events'))
    (src,) = (scene / 'events').glob('*.mcap')
    for k, keep in enumerate([0.3, 0.62, 0.97]):
        # the recorder killed: no metadata.yaml either (a lone .mcap in the directory)
        bag = cut_copy(scene, tmp_path / f'cut{k}', keep, metadata=k != 1)
        n = count_messages(bag)
        got = []
        with pytest.raises(TruncatedBagError) as exc:
            got.extend(iter_event_packets(bag))
        assert 0 < len(got) == n == exc.value.messages_read < len(full)
        assert all(a.seq == b.seq and np.array_equal(a.events, b.events)
                   for a, b in zip(got, full))
        assert 'mcap recover' in str(exc.value)
    # cut inside the summary (index) after the last message: nothing is lost
    bag = cut_copy(scene, tmp_path / 'cut_summary', src.stat().st_size - 40)
    assert [r.seq for r in iter_event_packets(bag)] == [r.seq for r in full]


def track_damaged(bag: Path, scene: Path, out: Path, capsys,
                  warned: bool = False) -> tuple[str, int, list]:
    """``track`` of a damaged bag: exit 3 and one line (after ``warning:`` lines, where
    ``warned``); (the line, the intact messages it names, the rpm.csv rows)."""
    assert main(['track', str(bag), '--params', str(scene / 'params.yaml'), '--out',
                 str(out)]) == 3
    err = capsys.readouterr().err
    if warned:
        err = '\n'.join(x for x in err.splitlines() if 'warning:' not in x)
    line = one_line(err)
    n = int(re.search(r'the (\d+) intact messages', line).group(1))
    return line, n, list(csv.DictReader((out / 'rpm.csv').open()))


def test_track_of_a_cut_bag_keeps_what_precedes_the_damage_and_exits_3(scene, tmp_path,
                                                                     capsys):
    bag = cut_copy(scene, tmp_path / 'cut', 0.45)
    line, n, rows = track_damaged(bag, scene, tmp_path / 'o', capsys)
    assert 'cut short' in line and 'mcap recover' in line
    assert 10 < n < 100 and len(rows) == n   # one rotor: one row per packet
    assert (tmp_path / 'o' / 'rpm.png').exists()


def test_events_and_detect_of_a_cut_bag_exit_3(scene, tmp_path, capsys):
    bag = cut_copy(scene, tmp_path / 'cut', 0.45)
    out = tmp_path / 'e.npz'
    assert main(['events', str(bag), '--out', str(out)]) == 3
    line = one_line(capsys.readouterr().err)
    n = int(re.search(r'the (\d+) intact messages', line).group(1))
    assert main(['events', str(scene / 'events'), '--out', str(tmp_path / 'full.npz')]) == 0
    capsys.readouterr()
    cut, full = np.load(out), np.load(tmp_path / 'full.npz')
    assert 0 < len(cut['t_us']) < len(full['t_us'])
    assert np.array_equal(cut['t_us'], full['t_us'][:len(cut['t_us'])])
    assert n == count_messages(bag)
    assert main(['detect', str(bag), '--out', str(tmp_path / 'p.yaml')]) == 3
    assert 'mcap recover' in one_line(capsys.readouterr().err)


def checksummed_copy(scene: Path, dest: Path) -> tuple[Path, list[int]]:
    """A copy of the scene's bag whose uncompressed chunks carry their CRC-32 (rosbags
    writes 0: none); the bag and the byte offset of each chunk's records."""
    import struct
    import zlib
    dest.mkdir(parents=True)
    (src,) = (scene / 'events').glob('*.mcap')
    data = bytearray(src.read_bytes())
    pos, chunks = 8, []
    while pos + 9 <= len(data):
        op, length = struct.unpack_from('<BQ', data, pos)
        body = pos + 9
        if op == 0x06:
            (n,) = struct.unpack_from('<I', data, body + 28)
            assert n == 0   # uncompressed
            start = body + 32 + n + 8
            (size,) = struct.unpack_from('<Q', data, body + 32 + n)
            struct.pack_into('<I', data, body + 24, zlib.crc32(data[start:start + size]))
            chunks.append(start)
        pos = body + length
    (dest / src.name).write_bytes(bytes(data))
    shutil.copy(scene / 'events' / 'metadata.yaml', dest / 'metadata.yaml')
    return dest, chunks


def test_a_chunk_failing_its_checksum_is_skipped_and_the_rest_read(scene, tmp_path, capsys):
    """Before: rosbags stopped at the chunk, the command ended with exit 2, and the
    packets of the batch being read before it were lost too (helper review, 2026-11-27)."""
    bag, chunks = checksummed_copy(scene, tmp_path / 'crc')
    full = [r.seq for r in iter_event_packets(bag)]
    assert len(chunks) >= 3 and len(full) == 100
    (mcap,) = bag.glob('*.mcap')
    data = bytearray(mcap.read_bytes())
    data[chunks[1] + 1000:chunks[1] + 5096] = bytes(4096)
    mcap.write_bytes(bytes(data))
    line, n, rows = track_damaged(bag, scene, tmp_path / 'o', capsys)
    assert 'fails its checksum' in line and 'around the damage' in line
    # (after the gap the decoder waits for a time word: a packet or two give no row)
    assert n - 3 <= len(rows) <= n and 40 < n < 100
    got = []
    with pytest.raises(TruncatedBagError) as exc:
        for r in iter_event_packets(bag):
            got.append(r.seq)
    assert exc.value.read_past and len(got) == n
    # what is read is in order, nothing twice, and the last packets are there
    assert got == sorted(set(got)) and set(got) <= set(full) and got[-1] == full[-1]


def test_a_bag_cut_before_its_first_message_exits_3(scene, tmp_path, capsys):
    bag = cut_copy(scene, tmp_path / 'cut', 100)
    assert main(['events', str(bag), '--out', str(tmp_path / 'e.npz')]) == 3
    line = one_line(capsys.readouterr().err)
    assert 'the 0 intact messages' in line and 'mcap recover' in line


# ---------------------------------------------------------------------- node
@pytest.mark.parametrize('content', [
    None, '/**:\n  ros__parameters:\n    rotor_names: [a\n   x: :\n', 'foo: 1\n'])
def test_node_with_a_missing_or_broken_parameter_file_says_so_in_one_line(content, tmp_path):
    import node_fixtures as F  # noqa: N812
    F.require_ros()
    path = tmp_path / ('missing.yaml' if content is None else 'broken.yaml')
    if content is not None:
        path.write_text(content)
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', ROS_DOMAIN_ID='77')
    exe = Path(sys.executable).with_name('helixtrack_node')
    proc = subprocess.run([str(exe), '--ros-args', '--params-file', str(path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    line = one_line(proc.stderr + proc.stdout)
    assert 'cannot start' in line and str(path) in line


def test_node_without_ros_says_so_in_one_line(tmp_path):
    """As before sourcing a ROS 2 setup: one line naming what is missing, exit status 1."""
    import node_fixtures as F  # noqa: N812
    (tmp_path / 'sitecustomize.py').write_text(F.HIDE_ROS_SITECUSTOMIZE)
    path = [str(tmp_path), *filter(None, [os.environ.get('PYTHONPATH')])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    proc = subprocess.run([sys.executable, '-m', 'helixtrack_ros.node'], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    line = one_line(proc.stderr + proc.stdout)
    assert 'cannot start' in line and "'rclpy'" in line and 'setup.bash' in line


def test_every_command_takes_o_for_out():
    from helixtrack_ros.cli import build_parser
    parser = build_parser()
    for argv in (['demo', '-o', 'x'], ['simulate', '-o', 'x'], ['track', 'b', '-o', 'x'],
                 ['detect', 'b', '-o', 'x.yaml'], ['events', 'b', '-o', 'x'],
                 ['batch', 'b', '-o', 'x'], ['sweep', 'b', '--grid', 'g', '-o', 'x']):
        assert parser.parse_args(argv).out.startswith('x'), argv


def test_a_read_failure_keeps_the_packets_read_before_it():
    """Before: the half-filled batch before a read failure was dropped (47 packets lost
    before a damaged chunk in the helper's bag)."""
    from helixtrack_ros.cli.common import CliError
    from helixtrack_ros.cli.track import _batches

    class Pkt:
        events = b'\0' * 10

    def packets():
        yield from [Pkt()] * 5
        raise CliError('cannot read message 5')

    it = _batches(packets())
    assert len(next(it)) == 5
    with pytest.raises(CliError):
        next(it)


def test_packets_recorded_a_few_places_out_of_order_are_put_back_in_order():
    """(Input review: offline, each of 50 swapped pairs was dropped as late and the packet
    it passed counted lost, 17 % of the events.) Equal numbers keep their order; a restart
    of the numbers is not reordered across; a read failure comes after the packets held."""
    from types import SimpleNamespace

    from helixtrack_ros.cli.common import CliError
    from helixtrack_ros.cli.track import _in_seq_order

    def pkts(seqs):
        return [SimpleNamespace(seq=q, tag=i) for i, q in enumerate(seqs)]

    def order(seqs, window=4):
        return [(p.seq, p.tag) for p in _in_seq_order(iter(pkts(seqs)), window)]

    swapped = [0, 1, 3, 2, 5, 4, 6, 7]
    assert [q for q, _ in order(swapped)] == list(range(8))
    assert order([5, 5, 6, 6]) == [(5, 0), (5, 1), (6, 2), (6, 3)]
    assert [q for q, _ in order([100, 101, 102, 103, 104, 0, 1, 2])] == [
        100, 101, 102, 103, 104, 0, 1, 2]   # (a restart: 0 after 104)
    assert [q for q, _ in order([1, 0, 9, 40], window=16)] == [0, 1, 9, 40]

    def failing():
        yield from pkts([1, 0, 2])
        raise CliError('cannot read message 3')

    it = _in_seq_order(failing(), 4)
    assert [next(it).seq for _ in range(3)] == [0, 1, 2]
    with pytest.raises(CliError):
        next(it)


@pytest.mark.parametrize('content, message', [
    (b'\x89MCAP0\r\n\xff\xfe\x00garbage', 'not a ground-truth CSV file'),   # not UTF-8
    (b't_us,rotor,rpm\n', 'no ground-truth rows'),
    (b'time,name\n1,2\n', 'expected columns t_us,rotor,rpm'),
    (b't_us,rotor,rpm\n1,a,fast\n', 'line 2'),
    (None, 'is a directory'),
])
def test_a_bad_ground_truth_file_is_one_line(scene, tmp_path, capsys, content, message):
    """Before: a file that is not UTF-8 gave a UnicodeDecodeError traceback, and one
    with only a header was blamed on the rotor centres (helper review, 2026-11-27)."""
    gt = tmp_path / 'gt.csv'
    if content is None:
        gt.mkdir()
    else:
        gt.write_bytes(content)
    assert main(['track', str(scene / 'events'), '--params', str(scene / 'params.yaml'),
                 '--ground-truth', str(gt), '--out', str(tmp_path / 'o')]) == 2
    assert message in one_line(capsys.readouterr().err)


def test_ctrl_c_inside_a_numba_call_is_an_interrupt(monkeypatch, capsys, tmp_path):
    """Ctrl-C in a numba kernel can come back as a SystemError chained to the
    KeyboardInterrupt; before, that was a traceback (helper review, 2026-11-27).
    Any other SystemError still propagates."""
    import helixtrack_ros.cli.simulate as cli

    def interrupted(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError('CPUDispatcher(<function sort_emit>) returned a result with '
                              'an exception set') from exc

    def broken(args):
        raise SystemError('a real bug')

    argv = ['simulate', '--scenario', 'lone_constant', '--duration', '0.01', '-o',
            str(tmp_path / 's')]
    monkeypatch.setattr(cli, 'cmd_simulate', interrupted)
    assert main(argv) == 130
    assert one_line(capsys.readouterr().err) == 'helixtrack: interrupted'
    monkeypatch.setattr(cli, 'cmd_simulate', broken)
    with pytest.raises(SystemError, match='a real bug'):
        main(argv)


def test_a_run_that_measures_no_rpm_exits_1_and_says_why(scene, tmp_path, capsys):
    """Before: every row NaN (here the rotor given far off the sensor) and exit 0, as if
    something had been measured (helper review, 2026-11-27)."""
    import yaml
    params = yaml.safe_load((scene / 'params.yaml').read_text())
    rotors = params['/**']['ros__parameters']['rotors']
    for r in rotors.values():
        r['center_px'] = [-5000.0, 99999.0]
    bad = tmp_path / 'far.yaml'
    bad.write_text(yaml.safe_dump(params))
    assert main(['track', str(scene / 'events'), '--params', str(bad), '--out',
                 str(tmp_path / 'o')]) == 1
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    warning, line = err.strip().splitlines()   # (the warning since the sensor check)
    assert 'rotor rotor: center_px [-5000, 99999] is outside the 1280x720 sensor' in warning
    assert 'every given rotor is impossible' in line
    assert 'no rotor reached TRACKING' in line and 'OUTSIDE' in line


def test_decode_errors_get_a_warning_line(scene, tmp_path, capsys):
    """Before: millions of decode errors (a header with the wrong sensor size) were only a
    number in the summary, with no warning (helper review, 2026-11-27)."""
    raw = tmp_path / 'r.raw'
    assert main(['events', str(scene / 'events'), '--out', str(tmp_path / 'e.npz')]) == 0
    from helixtrack_ros.io.raw_file import RawFileWriter
    ev = np.load(tmp_path / 'e.npz')
    capsys.readouterr()
    from helixtrack_ros.codecs.evt3_encoder import Evt3Encoder
    from helixtrack_ros.core.events import EventArrays
    events = EventArrays(ev['t_us'], ev['x'], ev['y'], ev['p'])
    with RawFileWriter(raw, 'evt3', 1280, 720) as w:
        w.write(Evt3Encoder().encode(events))
    data = raw.read_bytes().replace(b'width=1280', b'width=100').replace(b'height=720',
                                                                        b'height=100')
    raw.write_bytes(data)
    code = main(['track', str(raw), '--params', str(scene / 'params.yaml'), '--out',
                 str(tmp_path / 'o')])
    err = capsys.readouterr().err
    assert 'Traceback' not in err and code == 1
    assert re.search(r'warning: \d+ decode errors .*100x100 sensor', err)


def test_simulate_refuses_a_scene_that_would_fill_the_disk(tmp_path, capsys, monkeypatch):
    """Before: --duration 1e9 wrote 27 MB/s with no end (helper review, 2026-11-27)."""
    import shutil as sh

    from helixtrack_ros.cli import simulate
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '1e9', '-q',
                 '-o', str(tmp_path / 'a')]) == 2
    assert 'at most 3600 s' in one_line(capsys.readouterr().err)
    usage = sh.disk_usage(tmp_path)
    monkeypatch.setattr(simulate.shutil, 'disk_usage',
                        lambda p: usage._replace(free=50_000_000))
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '10', '-q',
                 '-o', str(tmp_path / 'b')]) == 2
    line = one_line(capsys.readouterr().err)
    assert 'GB are free' in line and 'shorter --duration' in line


@pytest.mark.parametrize('text, message', [
    ('rotor_names: [rotor, rotor]', "rotor_names has duplicates: ['rotor', 'rotor']"),
    ('rotor_names: rotor', "rotor_names must be a list of strings, not 'rotor'"),
    ('rotor_names: [front-left]', 'cannot be a topic name'),
    ('rotor_names: [rotor', 'not valid YAML (line '),
    ('rotor_names: [rotor]\n    tracker: {gate_rpm_max: 9000.0}',
     'rotors.rotor.rpm=10000 is outside the plausible shaft RPM [100, 9000]'),
    # before: accepted, and recovery_min_us then ignored (helper review, 2026-11-27)
    ('rotor_names: [rotor]\n    recovery_min_us: 200000\n    recovery_window_us: 50000',
     'recovery_min_us=200000 is above recovery_window_us=50000'),
])
def test_the_command_line_refuses_rotor_names_as_the_node_does(scene, tmp_path, capsys,
                                                               text, message):
    """Before: the command line tracked a name given twice twice, read a string letter
    by letter, and printed PyYAML's error over seven lines with the file named twice
    (helper review, 2026-11-27); the node refused the first two already."""
    params = tmp_path / 'p.yaml'
    params.write_text('/**:\n  ros__parameters:\n    ' + text + '\n    rotors:\n      rotor: '
                      '{center_px: [600.0, 360.0], radius_px: 100.0, rpm: 10000.0}\n')
    assert main(['track', str(scene / 'events'), '--params', str(params), '--out',
                 str(tmp_path / 'o')]) == 2
    line = one_line(capsys.readouterr().err)
    assert message in line and line.count(str(params)) == 1


def ros1_copy(scene: Path, bag: Path, compression: str) -> Path:
    """The scene's packets as a ROS 1 bag (``compression`` none or bz2, 200 kB chunks)."""
    from rosbags.rosbag1 import Writer as Ros1Writer

    from helixtrack_ros.io.ros1_bags import Ros1EventBagWriter
    writer = Ros1EventBagWriter(bag)
    if compression == 'bz2':
        writer._writer.set_compression(Ros1Writer.CompressionFormat.BZ2)
    writer._writer.chunk_threshold = 200_000
    with writer as w:
        for r in iter_event_packets(scene / 'events'):
            w.write(r.stamp_ns, r.seq, r.events, r.width, r.height, r.encoding)
    return bag


@pytest.mark.parametrize('compression', ['none', 'bz2'])
def test_a_cut_ros1_bag_keeps_what_precedes_the_damage_and_exits_3(scene, tmp_path, capsys,
                                                                 compression):
    """Before: rosbags refused a ROS 1 bag without its index ("Bag index looks damaged",
    exit 2, nothing read; helper review, 2026-11-27)."""
    from helixtrack_ros.io.ros1_bags import iter_ros1_event_packets
    full = list(iter_event_packets(scene / 'events'))
    bag = ros1_copy(scene, tmp_path / 'full.bag', compression)
    cut = tmp_path / 'cut.bag'
    cut.write_bytes(bag.read_bytes()[:int(bag.stat().st_size * 0.45)])
    line, n, rows = track_damaged(cut, scene, tmp_path / 'o', capsys)
    assert 'cut short' in line and 'rosbag reindex' in line
    assert 10 < n < 100 and len(rows) == n
    got = []
    with pytest.raises(TruncatedBagError):
        for r in iter_ros1_event_packets(cut):
            got.append(r)
    assert [r.seq for r in got] == [r.seq for r in full[:n]]
    assert all(bytes(a.events) == bytes(b.events) for a, b in zip(got, full))


def test_a_damaged_first_chunk_loses_only_its_own_messages(scene, tmp_path, capsys):
    """The channels stand in the first chunk and in the summary; before, a bad first
    chunk lost every message of the bag (input review, 2026-11-27)."""
    bag, chunks = checksummed_copy(scene, tmp_path / 'crc')
    (mcap,) = bag.glob('*.mcap')
    data = bytearray(mcap.read_bytes())
    data[chunks[0] + 1000:chunks[0] + 5096] = bytes(4096)
    mcap.write_bytes(bytes(data))
    # (the words before the stream's first time word then are decode errors: a warning)
    line, n, rows = track_damaged(bag, scene, tmp_path / 'o', capsys, warned=True)
    assert 'fails its checksum' in line and 50 < n < 100 and n - 3 <= len(rows) <= n


@pytest.mark.parametrize('compression', ['none', 'bz2'])
def test_a_ros1_bag_with_a_damaged_chunk_is_read_around_it(scene, tmp_path, capsys,
                                                          compression):
    """An indexed ROS 1 bag with 64 kB zeroed inside: before, a ReaderError traceback
    or exit 2, and nothing kept (input review, 2026-11-27); now exit 3 with the
    messages before the damage (and after it, where the damage lies inside a chunk)."""
    bag = ros1_copy(scene, tmp_path / 'full.bag', compression)
    data = bytearray(bag.read_bytes())
    at = len(data) * 3 // 10
    data[at:at + 65536] = bytes(65536)
    bag.write_bytes(bytes(data))
    line, n, rows = track_damaged(bag, scene, tmp_path / 'o', capsys)
    # (where the zeros hit the records between chunks the reading stops there)
    assert 'rosbag reindex' in line and 20 < n < 100 and n - 3 <= len(rows) <= n


def test_the_console_script_ends_quickly_with_its_exit_code_and_every_line(scene, tmp_path):
    """``console_main`` skips the interpreter's teardown (0.6 s after a track run): the exit
    code and the last lines, written to pipes, must still come out, and every output be
    whole."""
    run = [sys.executable, '-m', 'helixtrack_ros.cli', 'track', str(scene / 'events'),
           '--params', str(scene / 'params.yaml'), '-q', '-o', str(tmp_path / 'o')]
    res = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip().splitlines()[-1].startswith('outputs: ')
    rows = (tmp_path / 'o' / 'rpm.csv').read_text().splitlines()
    assert len(rows) == 1 + 100 and rows[-1].count(',') == rows[0].count(',')
    missing = subprocess.run(run[:4] + [str(tmp_path / 'none')] + run[5:], capture_output=True,
                             text=True, timeout=300)
    assert missing.returncode == 2 and 'recording not found' in one_line(missing.stderr)


def test_the_command_loads_without_numpy_before_its_interrupt_handling():
    """Ctrl-C in the first 0.3 s of a run (the package's imports, numpy among them, before
    main) printed a 46-line traceback (red-team review); the parser's module now loads
    nothing heavy, and an interrupt inside main is one line, exit 130."""
    code = 'import sys, helixtrack_ros.cli; print("numpy" in sys.modules)'
    res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=60)
    assert res.stdout.strip() == 'False', res.stderr


def test_an_os_error_says_where_it_happened():
    """A full disk said only "[Errno 28] No space left on device" (red-team review)."""
    import argparse

    from helixtrack_ros.cli import _os_error_text
    full = OSError(28, 'No space left on device')
    assert _os_error_text(full, argparse.Namespace(out='o')) == \
        'No space left on device (writing o)'
    named = OSError(28, 'No space left on device', 'o/rpm.csv')
    assert _os_error_text(named, argparse.Namespace(out='o')) == \
        'o/rpm.csv: No space left on device'


def test_a_rotor_the_sensor_cannot_show_is_said_and_named_in_the_summary(scene, tmp_path,
                                                                         capsys):
    """Before: a centre off the sensor, a disc far larger than it or a 1 px radius were
    tracked without a word, exit 0, the rotor OUTSIDE on every row (helper review,
    2026-11-27); with every given rotor impossible the run measured nothing."""
    import yaml
    params = yaml.safe_load((scene / 'params.yaml').read_text())
    tree = params['/**']['ros__parameters']
    (name,) = tree['rotor_names']
    good = tree['rotors'][name]
    bad = {'off': {**good, 'center_px': [5000.0, -3000.0]},
           'huge': {**good, 'radius_px': 5000.0}, 'tiny': {**good, 'radius_px': 1.0}}
    tree['rotors'].update(bad)
    tree['rotor_names'] = [name, *bad]
    path = tmp_path / 'p.yaml'
    path.write_text(yaml.safe_dump(params))
    assert main(['track', str(scene / 'events'), '--params', str(path), '-q',
                 '--out', str(tmp_path / 'o')]) == 0
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    for what, text in (('off', 'center_px [5000, -3000] is outside the 1280x720 sensor'),
                       ('huge', 'radius_px 5000 is far larger than the 1280x720 sensor'),
                       ('tiny', 'radius_px 1 is below health_min_radius_px (8 px)')):
        assert f'warning: rotor {what}: {text}' in err, err
        assert re.search(f'rotor {what} never reached TRACKING.*last state [A-Z]+', err), err
    assert f'rotor {name} never' not in err
    tree['rotor_names'] = list(bad)
    path.write_text(yaml.safe_dump(params))
    assert main(['track', str(scene / 'events'), '--params', str(path), '-q',
                 '--out', str(tmp_path / 'o2')]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert 'no rotor tracked: every given rotor is impossible on this sensor' in last, last


def test_a_skip_longer_than_the_recording_is_said_in_one_line(scene, tmp_path, capsys):
    """Before: exit 0 with an all-NaN error table and no word (helper review,
    2026-11-27); demo, which knows its duration, ran the whole scene first."""
    assert main(['demo', '--duration', '0.1', '--skip', '5', '-q',
                 '-o', str(tmp_path / 'dm')]) == 2
    line = one_line(capsys.readouterr().err)
    assert '--skip 5 s leaves no sample for the errors: --duration is 0.1 s' in line
    assert not (tmp_path / 'dm').exists()
    assert main(['track', str(scene / 'events'), '--params', str(scene / 'params.yaml'),
                 '--ground-truth', str(scene / 'ground_truth.csv'), '--skip', '100', '-q',
                 '-o', str(tmp_path / 't')]) == 0
    captured = capsys.readouterr()
    line = one_line(captured.err)
    assert re.search(r'--skip 100 s leaves no sample for the errors: the events span 0\.\d+ s',
                     line), line
    assert 'nan' not in captured.out


@pytest.mark.parametrize('given, out', [('bag', 'bag'), ('bag', 'bag/sub'),
                                        ('bag/x.mcap', 'bag'), ('bag', 'bag/../bag/')])
def test_track_refuses_to_write_into_the_input_recording(scene, tmp_path, capsys,
                                                         monkeypatch, given, out):
    """Before: ``track simcopy -o simcopy`` wrote rpm.csv, results.mcap, ... among the
    rosbag2's own files (helper review, 2026-11-27)."""
    bag = tmp_path / 'bag'
    shutil.copytree(scene / 'events', bag)
    (mcap,) = bag.glob('*.mcap')
    mcap.rename(bag / 'x.mcap')
    meta = bag / 'metadata.yaml'
    meta.write_text(meta.read_text().replace(mcap.name, 'x.mcap'))
    before = sorted(p.name for p in bag.iterdir())
    monkeypatch.chdir(tmp_path)
    assert main(['track', given, '-q', '-o', out]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"output directory {Path(out)} lies in the input recording's directory {bag}" in line
    assert sorted(p.name for p in bag.iterdir()) == before


def test_a_rosbag2_with_a_garbage_metadata_file_is_said_so(tmp_path, capsys):
    """Before: "ReaderError: Invalid bag metadata: string indices must be integers, not
    'str'." (helper review, 2026-11-27)."""
    bag = tmp_path / 'bag'
    bag.mkdir()
    (bag / 'metadata.yaml').write_text('hi\n')
    (bag / 'x.mcap').write_bytes(b'x' * 100)
    assert main(['track', str(bag), '-q', '-o', str(tmp_path / 'o')]) == 2
    line = one_line(capsys.readouterr().err)
    assert line == (f'helixtrack: error: cannot read bag {bag}: {bag}/metadata.yaml is not a '
                    'rosbag2 metadata file (no rosbag2_bagfile_information mapping)')


@pytest.mark.parametrize('cmd, message', [
    # before: "duration_us must be positive" (neither the option nor the unit)
    (['simulate', '--duration', '1e-9'],
     'helixtrack simulate: error: argument --duration: must be at least 1e-06 s, got 1e-9 s'),
    (['demo', '--duration', '5e-7'], 'argument --duration: must be at least 1e-06 s'),
    # before: "front_left: radius_px must be > 1"
    (['simulate', '--duration', '0.01', '--size', '1x1'],
     'error: a 1x1 sensor is too small for scenario quadcopter (a rotor tip radius would be '
     '1 px or less): at least 25x15'),
    (['simulate', '--duration', '0.01', '--size', '12x7', '--scenario', 'lone_constant'],
     'error: a 12x7 sensor is too small for scenario lone_constant'),
    # before: "expected non-negative integer" (numpy's, without the option)
    (['simulate', '--duration', '0.01', '--seed', '-1'],
     'argument --seed: must be an integer >= 0, got -1'),
    (['demo', '--seed', '-3'], 'argument --seed: must be an integer >= 0, got -3'),
    # before: simulated, tracked, then exit 2 "no ground-truth rows below the header"
    (['demo', '--duration', '0.05', '--scenario', 'background_only'],
     'error: scenario background_only has no rotor to track and score'),
])
def test_simulation_options_are_refused_in_one_line_naming_them(cmd, message, tmp_path,
                                                                capsys):
    """Helper review, 2026-11-27: each message named neither the option nor the remedy."""
    try:
        code = main([*cmd, '-q', '-o', str(tmp_path / 'o')])
    except SystemExit as exc:   # (argparse's refusals)
        code = exc.code
    assert code == 2
    line = one_line(capsys.readouterr().err)
    assert message in line, line
    assert not (tmp_path / 'o').exists() or not any((tmp_path / 'o').iterdir())


def test_the_least_sensor_size_said_is_enough(tmp_path):
    assert main(['simulate', '--duration', '0.005', '--size', '25x15', '-q',
                 '-o', str(tmp_path / 'q')]) == 0
    assert main(['simulate', '--duration', '0.005', '--size', '13x8', '-q', '--scenario',
                 'lone_constant', '-o', str(tmp_path / 'l')]) == 0


def test_sigterm_ends_a_track_run_as_ctrl_c_does(scene, tmp_path, capsys, monkeypatch):
    """SIGTERM (timeout, docker stop, a batch scheduler) closes the outputs, which hold
    what was processed so far; before, results.mcap stayed an unfinished hidden part file
    and the pictures were missing (input review, 2026-11-27)."""
    import os
    import signal

    from helixtrack_ros.cli import track
    real_note = track._TrackRun._note

    def note(self, pkt, res):
        if self.n_packets == 80:   # (in the second batch: the first one is written)
            os.kill(os.getpid(), signal.SIGTERM)
        return real_note(self, pkt, res)
    monkeypatch.setattr(track._TrackRun, '_note', note)
    before = signal.getsignal(signal.SIGTERM)
    out = tmp_path / 'o'
    assert main(['track', str(scene / 'events'), '--params', str(scene / 'params.yaml'),
                 '--out', str(out)]) == 130
    assert 'interrupted: outputs hold what was processed so far' in capsys.readouterr().out
    assert signal.getsignal(signal.SIGTERM) == before
    assert sorted(p.name for p in out.iterdir()) == ['overlay.png', 'results.mcap', 'rpm.csv',
                                                     'rpm.png']
    rows = (out / 'rpm.csv').read_text().splitlines()
    assert 1 < len(rows) < 200


def test_an_output_that_is_the_input_recording_is_refused(tmp_path, capsys):
    """Found by a review: ``track OUT/rpm.csv -o OUT`` emptied the recording before
    reading it (then said it held no event); ``detect`` and ``events`` overwrote an
    input given as their own ``-o`` (one of them with exit 0)."""
    out = tmp_path / 'out'
    out.mkdir()
    rec_csv = out / 'rpm.csv'
    rng = np.random.default_rng(0)
    rows = zip(np.arange(2000) * 10, rng.integers(0, 64, 2000), rng.integers(0, 48, 2000),
               rng.integers(0, 2, 2000))
    rec_csv.write_text('t_us,x,y,p\n' + ''.join(f'{t},{x},{y},{p}\n' for t, x, y, p in rows))
    npz = tmp_path / 'ev.npz'
    assert main(['events', str(rec_csv), '-o', str(npz), '-q']) == 0
    chunk = tmp_path / 'chunks' / 'events_000003.npz'
    chunk.parent.mkdir()
    shutil.copy(npz, chunk)
    for args, given in ((['track', str(rec_csv), '-o', str(out)], rec_csv),
                        (['detect', str(npz), '-o', str(npz)], npz),
                        (['events', str(npz), '-o', str(npz)], npz),
                        (['events', str(chunk), '-o', str(chunk.parent)], chunk)):
        before = given.read_bytes()
        capsys.readouterr()
        assert main(args + ['-q']) == 2, args
        line = one_line(capsys.readouterr().err)
        assert f'output {given} would overwrite the input recording {given}' in line, args
        assert given.read_bytes() == before, args


@pytest.mark.parametrize('cut', [0, 2])
def test_evt3_packets_without_a_sensor_size_are_refused_saying_so(scene, tmp_path, capsys, cut):
    """Found by a review: EVT3 packets with width and height 0 went through the size
    look-up meant for ``mono`` words: "buffer size must be a multiple of element size"
    (exit 2), or (payloads of whole 8-byte words) evt3 words read as mono events, a
    32817x28672 sensor "taken from the events". Now the pipeline refuses them, in track
    and in ``events`` alike."""
    from helixtrack_ros.io.bags import iter_event_packets
    bag = tmp_path / 'wh0'
    with EventBagWriter(bag) as w:
        for k, pkt in enumerate(iter_event_packets(scene / 'events')):
            payload = bytes(pkt.events)
            payload = payload[:len(payload) - len(payload) % 8 + cut]
            w.write(pkt.stamp_ns, k, payload, width=0, height=0)
            if k == 20:
                break
    assert main(['track', str(bag), '-q', '-o', str(tmp_path / 'o')]) == 1
    err = capsys.readouterr().err
    assert 'Traceback' not in err and 'element size' not in err
    assert 'every one of the 21 packets was refused (bad packet: width must be in 1..2048, ' \
           'got 0)' in err
    # (events checks packets as track does: every one refused, nothing found, as track)
    assert main(['events', str(bag), '-q', '-o', str(tmp_path / 'e.npz')]) == 1
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    assert '21 of 21 packets refused' in err and 'width must be in 1..2048, got 0' in err


def test_messages_lost_inside_an_mcap_without_an_error_are_said(scene, tmp_path, capsys):
    """Found by a review: 50 KB zeroed inside an MCAP chunk without a checksum (as our
    own writer makes them) lost 28 % of the messages with no error from the reader:
    exit 0, nothing on stderr. Fewer messages than the metadata lists is damage."""
    from helixtrack_ros.io.bags import iter_event_packets
    bag = tmp_path / 'bag'
    with EventBagWriter(bag) as w:     # 300 small messages: the zeros hit their records
        for k, pkt in enumerate(iter_event_packets(scene / 'events')):
            for j in range(3):
                w.write(pkt.stamp_ns + j, 3 * k + j, bytes(pkt.events)[400 * j:400 * j + 400])
    (mcap,) = bag.glob('*.mcap')
    data = bytearray(mcap.read_bytes())
    data[len(data) // 2:len(data) // 2 + 5000] = bytes(5000)
    mcap.write_bytes(bytes(data))
    assert main(['events', str(bag), '-q', '-o', str(tmp_path / 'e.npz')]) == 3
    line = one_line(capsys.readouterr().err)
    assert re.search(rf'{re.escape(str(mcap))} is damaged \(\d+ of the 300 messages its '
                     r'metadata lists could not be read\): decoded the \d+ intact messages',
                     line), line
    # the reader of other topics says it too (before, it gave the intact ones silently)
    from helixtrack_ros.io.bags import DEFAULT_EVENT_TOPIC, TruncatedBagError, iter_messages
    got = []
    with pytest.raises(TruncatedBagError, match='messages its metadata lists could not be'):
        got.extend(iter_messages(bag, [DEFAULT_EVENT_TOPIC]))
    assert 0 < len(got) < 300


def test_events_all_off_the_sensor_are_not_called_no_event(tmp_path, capsys):
    """Found by a review: a 1 x 1 sensor whose every event lies off it ended with "the
    120 packets hold no event" though the events were there (each a decode error)."""
    path = tmp_path / 'off.csv'
    path.write_text('%geometry:1,1\n' + ''.join(f'{5 + k % 7},{3 + k % 5},{k % 2},{10 * k}\n'
                                                for k in range(3000)))
    assert main(['track', str(path), '-q', '-o', str(tmp_path / 'o')]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert re.search(r'no rotor tracked: the \d+ packets hold no usable event \(3000 decode '
                     r'errors, see the warning above\)', last), last


@pytest.mark.parametrize('kind', ['csv', 'npz'])
def test_decoded_events_on_a_sensor_too_large_are_refused_at_once(kind, tmp_path, capsys):
    """Found by a review: a size of 65535 was refused packet by packet in a .csv or .npz
    file (exit 1 for track, three warnings, then a count), at the header in a .raw file.
    Now the file is refused in one line with exit 2, as a bad .raw header is."""
    k = np.arange(3000)
    path = tmp_path / f'big.{kind}'
    if kind == 'csv':
        path.write_text('%geometry:65535,100\n' + ''.join(
            f'{k % 300},{k % 90},{k % 2},{10 * k}\n' for k in range(3000)))
    else:
        np.savez(path, t_us=10 * k, x=k % 300, y=k % 90, p=k % 2, width=65535, height=100)
    for cmd in ('track', 'events'):
        out = tmp_path / f'o_{cmd}' if cmd == 'track' else tmp_path / 'e.npz'
        assert main([cmd, str(path), '-q', '-o', str(out)]) == 2
        assert one_line(capsys.readouterr().err).endswith(
            'a sensor of 65535 x 100 pixels is larger than the 32768 x 32768 this reader takes')


@pytest.mark.parametrize('string_first', [True, False])
def test_a_topic_recorded_under_another_type_too_is_read_for_its_events(scene, tmp_path,
                                                                        capsys, string_first):
    """A topic written as std_msgs/String and as EventPacket was refused: "has type
    EventPacket, expected EventPacket or ..." (the last connection's type named), or "no
    event topic" (red-team review). Its EventPackets are read; the rest is not."""
    from rosbags.rosbag2 import Reader
    ts = typestore()
    bag = tmp_path / 'mixed'
    with Reader(scene / 'events') as r, Writer(bag, version=Writer.VERSION_LATEST,
                                                storage_plugin=StoragePlugin.MCAP) as w:
        (conn,) = r.connections
        string = 'std_msgs/msg/String'
        text = ts.serialize_cdr(ts.types[string](data='hello'), string)
        order = [string, conn.msgtype] if string_first else [conn.msgtype, string]
        out = {t: w.add_connection(conn.topic, t, typestore=ts) for t in order}
        w.write(out[string], 1, bytes(text))
        for _, stamp, raw in r.messages():
            w.write(out[conn.msgtype], stamp, raw)
    assert main(['track', str(bag), '--params', str(scene / 'params.yaml'), '-q', '-o',
                 str(tmp_path / 'o')]) == 0, capsys.readouterr().err
    rows = (tmp_path / 'o' / 'rpm.csv').read_text().splitlines()
    assert len(rows) == 1 + 100


def test_a_rotor_re_detected_with_other_blades_than_given_is_said(tmp_path, capsys):
    """A wrong blade count in --params: every value withheld, while the re-detection's line
    named the right count and an RPM, without a word on the mismatch (red-team review)."""
    from helixtrack_ros.cli import simulate_to_dir
    simulate_to_dir('lone_constant', 0.3, 1, tmp_path / 'scene', quiet=True)
    params = (tmp_path / 'scene' / 'params.yaml').read_text()
    assert 'blades: 2' in params
    (tmp_path / 'p.yaml').write_text(params.replace('blades: 2', 'blades: 3'))
    main(['track', str(tmp_path / 'scene' / 'events'), '--params', str(tmp_path / 'p.yaml'),
          '-q', '-o', str(tmp_path / 'o')])
    err = capsys.readouterr().err
    assert 're-detected with 2 blades' in err and 'the parameters give 3 blades' in err
