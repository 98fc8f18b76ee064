# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The numba warm-up: every step runs and says so; setup.sh and the README use it."""

from __future__ import annotations

from pathlib import Path

from helixtrack_ros import warmup

ROOT = Path(__file__).resolve().parents[1]
COMMAND = 'python3 -m helixtrack_ros.warmup'


def test_warm_runs_every_step_and_says_one_line_each():
    lines: list[str] = []
    seconds = warmup.warm(lines.append)
    assert list(seconds) == [name for name, _ in warmup.STEPS]
    assert all(s >= 0.0 for s in seconds.values())
    assert [line.split(': ', 1)[1].rsplit(' ready', 1)[0] for line in lines] == list(seconds)


def test_setup_script_warms_the_cache_and_the_readme_says_how():
    setup = (ROOT / 'scripts' / 'setup.sh').read_text()
    assert '"$PY" -m helixtrack_ros.warmup' in setup
    readme = (ROOT / 'README.md').read_text()
    assert COMMAND in readme
