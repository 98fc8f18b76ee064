# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Scenes written by ``helixtrack simulate`` for the command-line tests (module fixtures)."""

from pathlib import Path

import pytest

from helixtrack_ros.cli import main


def simulated(tmp_path_factory: pytest.TempPathFactory, scenario: str, duration_s: float,
              seed: int, name: str = 'scene') -> Path:
    """Simulate ``scenario`` for ``duration_s`` [s] into a new temporary folder; its path."""
    out = tmp_path_factory.mktemp(name)
    assert main(['simulate', '--scenario', scenario, '--duration', str(duration_s),
                 '--seed', str(seed), '--out', str(out)]) == 0
    return out


def rotor_rows(recording: Path, scene: Path, out: Path) -> list[dict[str, str]]:
    """``track`` of ``recording`` with the scene's rotors: its rpm.csv rows without the
    stamps (which differ between formats of the same events)."""
    import csv
    assert main(['track', str(recording), '--params', str(scene / 'params.yaml'), '-q',
                 '--out', str(out)]) == 0
    return [{k: v for k, v in r.items() if k != 'stamp_ns'}
            for r in csv.DictReader((out / 'rpm.csv').open())]
