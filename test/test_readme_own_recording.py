# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The README's "Your own recording" section: its offline commands run, its ROS ones fit.

Every ``bash`` block of the section is split into commands. The offline ones
run as written, in order, in a directory where ``flight`` is a short
simulated rosbag2 (what ``ros2 bag record -s mcap -o flight`` writes) and
``helixtrack`` runs this interpreter's CLI. ROS commands cannot run here:
their ``~`` remaps must be quoted, the launch files, launch arguments,
executables, files and topics they name must exist, and the recorded topic
must be the one the camera launch file's driver publishes.
"""

from __future__ import annotations

import os
from pathlib import Path
import re
import shlex
import subprocess
import sys

import pytest

from helixtrack_ros.core.detection_types import DetectionParams
from helixtrack_ros.pipeline.config import PipelineConfig

pytest.importorskip('rosbags')
pytest.importorskip('matplotlib')

from test_launch_files import LAUNCH_DIR, fake_launch, load, resolve, split  # noqa: E402,F401

ROOT = Path(__file__).resolve().parents[1]
HEADING = '## Your own recording'
RECORDING = 'flight'


def _section() -> str:
    text = (ROOT / 'README.md').read_text()
    assert HEADING in text
    return text.split(HEADING, 1)[1].split('\n## ', 1)[0]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf'```{lang}\n(.*?)```', _section(), flags=re.S)


def _commands() -> list[str]:
    """Every command of the bash blocks: continued lines and open quotes joined."""
    out = []
    for block in _blocks('bash'):
        pending = ''
        for line in block.splitlines():
            pending = f'{pending}\n{line}' if pending else line
            if pending.endswith('\\'):
                continue
            try:
                shlex.split(pending, comments=True)
            except ValueError:          # a quote still open: the command goes on
                continue
            out.append(pending)
            pending = ''
        assert not pending, f'unfinished command: {pending}'
    return out


def _words(command: str) -> list[str]:
    return shlex.split(command.replace('\\\n', ' '), comments=True)


def _ros(command: str) -> bool:
    return _words(command)[0] == 'ros2'


@pytest.fixture(scope='module')
def workdir(tmp_path_factory) -> Path:
    """A directory with ``flight`` (a 0.5 s simulated quadcopter) and a ``helixtrack``."""
    from helixtrack_ros.cli import main
    work = tmp_path_factory.mktemp('own_recording')
    assert main(['simulate', '--scenario', 'quadcopter_4m', '--duration', '0.5', '--seed', '3',
                 '--out', str(work / 'sim'), '--quiet']) == 0
    (work / 'sim' / 'events').rename(work / RECORDING)
    bin_dir = work / 'bin'
    bin_dir.mkdir()
    shim = bin_dir / 'helixtrack'
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m helixtrack_ros.cli "$@"\n')
    shim.chmod(0o755)
    return work


@pytest.fixture(scope='module')
def ran(workdir: Path) -> dict[str, str]:
    """Run the offline commands in order; their output by command."""
    env = dict(os.environ, PATH=f'{workdir / "bin"}{os.pathsep}{os.environ["PATH"]}')
    outputs = {}
    for command in (c for c in _commands() if not _ros(c)):
        proc = subprocess.run(['bash', '-c', command], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f'{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}'
        outputs[command] = proc.stdout
    return outputs


def test_the_section_has_offline_and_ros_commands():
    commands = _commands()
    kinds = {_words(c)[:2][-1] if _ros(c) else _words(c)[0] for c in commands}
    assert {'launch', 'run', 'bag', 'topic', 'helixtrack', 'awk'} <= kinds, kinds
    assert any(_words(c)[:2] == ['helixtrack', 'detect'] for c in commands)
    assert any(_words(c)[:2] == ['helixtrack', 'track'] for c in commands)


def test_offline_commands_run_and_write_what_the_section_names(ran, workdir):
    out = workdir / 'out'
    for name in ('rotors.yaml', 'detect.png', 'rpm.csv', 'rpm.png', 'overlay.png',
                 'results.mcap'):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
        assert name in _section(), name
    printed = '\n'.join(ran.values())
    assert 'rotor_0 TRACKING' in printed and 'rotor_0 mean shaft RPM' in printed
    header = (out / 'rpm.csv').read_text().splitlines()[0].split(',')
    # the awk lines read the rotor from column 3, the RPM from 4 and the state from the last
    assert header[2:4] == ['rotor', 'rpm'] and header[-2:] == ['health', 'state']


def test_every_tilde_remap_is_quoted():
    for command in filter(_ros, _commands()):
        assert not re.search(r'(?<![\'"])~', command), command
    assert any("'~/events:=" in c for c in _commands())


@pytest.mark.usefixtures('fake_launch')
def test_ros_commands_name_launch_arguments_files_and_topics_that_exist(ran, workdir):
    commands = [_words(c) for c in _commands() if _ros(c)]
    camera_args, (driver, _) = split(load(LAUNCH_DIR / 'camera_helixtrack.launch.py'))
    ctx = {k: resolve(a.default_value, {}) for k, a in camera_args.items()}
    driver_topic = resolve(driver.kw['remappings'][0][1], ctx)
    rotors = PipelineConfig.from_yaml(str(workdir / 'out' / 'rotors.yaml')).rotors
    for words in commands:
        verb = words[1]
        if verb == 'launch':
            assert words[2] == 'helixtrack_ros', words
            args, _ = split(load(LAUNCH_DIR / words[3]))
            for arg in words[4:]:
                name, value = arg.split(':=', 1)
                assert name in args, f'{words[3]} has no argument {name}'
                if name == 'params_file':
                    assert (workdir / value.replace('$PWD/', '')).is_file(), value
                if name == 'events_topic':
                    assert value == driver_topic
        elif verb == 'run':
            assert words[2:4] == ['helixtrack_ros', 'helixtrack_node']
            assert (workdir / words[words.index('--params-file') + 1]).is_file()
            assert words[words.index('-r') + 1] == f'~/events:={driver_topic}'
        elif words[1:3] == ['bag', 'record']:
            assert words[-1] == driver_topic and words[words.index('-o') + 1] == RECORDING
        elif words[1:3] == ['bag', 'play']:
            assert words[3] == RECORDING
        elif words[1:3] == ['topic', 'echo']:
            node, rotor, field = words[3].strip('/').split('/')
            assert node == 'helixtrack' and field == 'rpm'
            assert rotor in [r.name for r in rotors]
        else:
            pytest.fail(f'unchecked ROS command: {words}')


def test_the_hand_written_parameter_file_is_valid(tmp_path):
    (example,) = _blocks('yaml')
    path = tmp_path / 'rotors.yaml'
    path.write_text(example)
    unknown: list[str] = []
    config = PipelineConfig.from_yaml(str(path), unknown=unknown)
    assert not unknown
    assert [r.name for r in config.rotors] == ['rotor_0', 'rotor_1', 'tail']


def test_the_detection_ranges_are_the_detectors():
    d = DetectionParams()
    text = ' '.join(_section().split())
    assert f'{d.rpm_min:,.0f} to {d.rpm_max:,.0f} RPM' in text
    assert f'{d.blades_min} to {d.blades_max} blades' in text
    assert f'{d.radius_min_px:.0f} to {d.radius_max_px:.0f} px' in text
