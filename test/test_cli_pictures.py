# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Offline pictures (#15.3): detect.png and overlay.png show every rotor, labels apart."""

from itertools import combinations

import numpy as np
import pytest

from helixtrack_ros.cli import main, track_bag
from helixtrack_ros.cli.detect import detect_in_bag, draw_detections
from helixtrack_ros.cli.pictures import Frame, Mark, draw_frames, mark_text
from helixtrack_ros.debug_image import detection_homography


def _no_overlap(labels):
    boxes = [lab.box for panel in labels for lab in panel]
    for a, b in combinations(boxes, 2):
        assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def _mark(name, x, y, r):
    d = type('D', (), {'radius_px': r, 'psi_rad': 0.0, 'center_px': (x, y),
                       'perspective': (0.0, 0.0)})()
    return Mark(name, detection_homography(d), 3, -1, 4321.0)


def test_crowded_rotors_get_every_label_and_none_overlaps(tmp_path):
    # seven rotors, two of them on top of each other and one at the image edge
    marks = [_mark(f'r{i}', x, y, 30) for i, (x, y) in enumerate(
        [(100, 100), (150, 100), (200, 110), (100, 160), (100, 160), (160, 170), (5, 5)])]
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 320, 5000), rng.integers(0, 240, 5000)
    frames = [Frame(t, x, y, rng.integers(0, 2, 5000), marks) for t in (0.1, 0.2)]
    labels = draw_frames(tmp_path / 'crowd.png', 320, 240, frames, 'crowd')
    assert (tmp_path / 'crowd.png').stat().st_size > 5_000
    assert [[lab.text for lab in panel] for panel in labels] == [
        [mark_text(m) for m in marks]] * 2
    assert '3 blades, dir -1' in labels[0][0].text and '4321 RPM' in labels[0][0].text
    _no_overlap(labels)


@pytest.fixture(scope='module')
def quad(tmp_path_factory):
    out = tmp_path_factory.mktemp('quad')
    assert main(['simulate', '--scenario', 'quadcopter_4m', '--ego-level', '2', '--duration',
                 '0.3', '--seed', '11', '--out', str(out)]) == 0
    return out


def test_detect_writes_detect_png_with_every_rotor(quad, tmp_path, capsys):
    assert main(['detect', str(quad / 'events'), '--out', str(tmp_path / 'p.yaml')]) == 0
    assert f'picture: {tmp_path / "detect.png"}' in capsys.readouterr().out
    assert (tmp_path / 'detect.png').stat().st_size > 20_000
    found = detect_in_bag(str(quad / 'events'))
    names = [f'rotor_{i}' for i in range(len(found.rotors))]
    labels = draw_detections(tmp_path / 'again.png', found, names, found.rotors)
    assert len(labels) == 3
    for panel in labels:
        assert [lab.text.split('\n')[0] for lab in panel] == names
    _no_overlap(labels)


def test_track_writes_overlay_png_with_every_tracked_rotor(quad, tmp_path):
    info = track_bag(str(quad / 'events'), None, tmp_path / 't', quiet=True)
    assert (tmp_path / 't' / 'overlay.png').stat().st_size > 20_000
    labels = info['overlay_labels']
    assert len(labels) == 3
    for panel in labels:
        assert sorted(lab.text.split('\n')[0] for lab in panel) == [
            'rotor_0', 'rotor_1', 'rotor_2', 'rotor_3']
        assert all('RPM ?' not in lab.text and '2 blades' in lab.text for lab in panel)
    _no_overlap(labels)


@pytest.mark.parametrize('window_s', [0.05, 0.2])
def test_detect_analyses_the_whole_window_asked_for(quad, window_s):
    """--window is the span the detector uses: before, anything past 0.1 s was ignored."""
    found = detect_in_bag(str(quad / 'events'), window_s=window_s)
    assert len(found.rotors) == 4
    t0 = int(found.window.t_us[0])
    for rotor in found.rotors:       # the state refers to the end of the analysed span
        assert abs(rotor.t_us - t0 - window_s * 1e6) < 2_000, (rotor.t_us - t0, window_s)
