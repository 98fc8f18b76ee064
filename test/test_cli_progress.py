# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Progress of the offline commands (issue #15.2): tqdm, only on a terminal, --quiet."""

import io

from helixtrack_ros.cli import main
from helixtrack_ros.cli.progress import Progress, progress_enabled


class _Terminal(io.StringIO):
    """A StringIO that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_bar_shows_sensor_seconds_rate_and_eta():
    out = io.StringIO()
    bar = Progress(10, 'tracking', enabled=True, file=out)
    for i in range(1, 11):
        bar.update(i, i * 0.1, i * 1_000_000)
    bar.close()
    text = out.getvalue()
    assert 'tracking' in text and '10/10' in text
    assert '1.00 s sensor' in text and 'M events/s' in text
    assert '<' in text   # tqdm's elapsed<remaining


def test_bar_without_total_still_reports_sensor_time():
    out = io.StringIO()
    bar = Progress(None, 'decoding', enabled=True, file=out)
    bar.update(5, 0.5, 10)
    bar.close()
    assert 'decoding: 5 packets' in out.getvalue() and '0.50 s sensor' in out.getvalue()


def test_only_a_terminal_gets_progress_and_quiet_silences_it():
    assert progress_enabled(False, _Terminal())
    assert not progress_enabled(True, _Terminal())
    assert not progress_enabled(False, io.StringIO())
    out = io.StringIO()
    bar = Progress(3, 'x', enabled=False, file=out)
    bar.update(3, 1.0, 5)
    bar.close()
    assert out.getvalue() == ''


def test_commands_draw_nothing_on_a_pipe_and_accept_quiet(tmp_path, capsys):
    scene = tmp_path / 'scene'
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.12', '--seed', '2',
                 '--out', str(scene)]) == 0
    assert capsys.readouterr().err == ''   # stderr is not a terminal under pytest
    assert main(['events', str(scene / 'events'), '--out', str(tmp_path / 'e.npz'), '-q']) == 0
    assert main(['detect', str(scene / 'events'), '--out', str(tmp_path / 'p.yaml'),
                 '--quiet']) == 0
    assert capsys.readouterr().err == ''
