# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Outputs another run, or the user, owns are not written over (cli/common.py)."""

import os
from pathlib import Path
import subprocess
import sys

import pytest

from helixtrack_ros.cli import main
from helixtrack_ros.cli.common import CliError, holding_outputs, output_dir, outputs_not_input

ROOT = Path(__file__).resolve().parents[1]


def test_an_output_directory_another_run_holds_is_refused(tmp_path, capsys):
    """Two runs into one -o mixed both recordings' rows in one rpm.csv, a row spliced
    from both read as TRACKING, and one of them ended with exit 0 (red-team review)."""
    code = ('import sys, time; from pathlib import Path; '
            'from helixtrack_ros.cli.common import holding_outputs, output_dir; '
            'h = holding_outputs(); h.__enter__(); '
            f'output_dir(Path({str(tmp_path)!r})); print("held", flush=True); time.sleep(30)')
    other = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True,
                             cwd=str(ROOT))
    try:
        assert other.stdout.readline().strip() == 'held'
        with holding_outputs(), pytest.raises(CliError, match='being written by another'):
            output_dir(tmp_path)
        output_dir(tmp_path)                # (a library call outside a command holds nothing)
        assert main(['simulate', '--duration', '0.02', '-o', str(tmp_path), '-q']) == 2
        assert 'another helixtrack run' in capsys.readouterr().err
    finally:
        other.kill()
        other.wait()
    with holding_outputs():
        output_dir(tmp_path)                # free again once the other run ended
    assert not list(tmp_path.iterdir())     # (no lock file left behind)


def test_an_input_hard_linked_to_an_output_is_refused(tmp_path):
    """A hard link of the input at OUT/rpm.csv emptied the recording before it was read
    (red-team review): the same file by any name is refused."""
    rec = tmp_path / 'events.csv'
    rec.write_text('t,x,y,p\n')
    out = tmp_path / 'out'
    out.mkdir()
    os.link(rec, out / 'rpm.csv')
    with pytest.raises(CliError, match='would overwrite the input'):
        outputs_not_input([out / 'rpm.csv'], rec)


def test_simulate_does_not_replace_a_recording_it_did_not_write(tmp_path, capsys):
    """simulate -o DIR deleted a user's recording in DIR/events, their notes with it, and
    replaced DIR/params.yaml (red-team review); a user's own ground_truth.csv beside them
    is no mark of a simulation (review)."""
    (tmp_path / 'events').mkdir()
    notes = tmp_path / 'events' / 'NOTES.txt'
    notes.write_text('mine')
    (tmp_path / 'ground_truth.csv').write_text('t_us,rotor,rpm\n')
    assert main(['simulate', '--duration', '0.02', '-o', str(tmp_path), '-q']) == 2
    assert 'is no scene helixtrack simulated' in capsys.readouterr().err
    assert notes.read_text() == 'mine'
    scene = tmp_path / 'scene'
    for _ in range(2):                       # a simulated scene is replaced, as before
        assert main(['simulate', '--duration', '0.02', '-o', str(scene), '-q']) == 0
