# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Stable rotor names by image position, and ground truth matched by position (#15.4)."""

from itertools import permutations
from types import SimpleNamespace

import numpy as np
import pytest

from helixtrack_ros.cli import main
from helixtrack_ros.cli.truth import GroundTruth, match_rotors
from helixtrack_ros.pipeline.startup import image_order


def _rotor(x, y, r=50.0):
    return SimpleNamespace(center_px=(x, y), radius_px=r, name=f'{x},{y}')


def test_image_order_reads_rows_top_to_bottom_each_left_to_right():
    # the right rotor of the top row sits 8 px higher than the left one: same row
    rig = [_rotor(100, 108), _rotor(300, 100), _rotor(90, 300), _rotor(310, 305)]
    want = ['100,108', '300,100', '90,300', '310,305']
    for order in permutations(rig):
        assert [r.name for r in image_order(list(order))] == want


def test_match_by_position_needs_centres_and_says_what_it_cannot_match():
    t = np.array([0, 1000])
    truth = GroundTruth({'a': (t, t * 0.0), 'b': (t, t * 0.0)},
                       {'a': (t, np.array([100.0, 100]), np.array([100.0, 100])),
                        'b': (t, np.array([400.0, 400]), np.array([100.0, 100]))})
    m = match_rotors({'rotor_0': (500, 103, 98, 50), 'rotor_1': (500, 396, 101, 50)}, truth)
    assert m.pairs == {'rotor_0': 'a', 'rotor_1': 'b'} and m.problem is None
    assert m.distance_px['rotor_0'] == pytest.approx(np.hypot(3, 2))
    m = match_rotors({'rotor_0': (500, 103, 98, 50), 'rotor_1': (500, 250, 300, 50)}, truth)
    assert m.pairs == {'rotor_0': 'a'} and 'rotor_1 (250, 300) px' in m.problem
    m = match_rotors({'rotor_0': (0, 100, 100, 50)}, truth._replace(xy=None))
    assert m.pairs == {} and 'no x_px,y_px columns' in m.problem
    assert match_rotors({'a': (0, 0, 0, 1)}, truth).pairs == {'a': 'a'}   # by name first


def test_track_names_detected_rotors_and_matches_truth_by_position(tmp_path, capsys):
    scene = tmp_path / 'quad'
    assert main(['simulate', '--scenario', 'quadcopter_4m', '--ego-level', '2', '--duration',
                 '0.35', '--seed', '11', '--out', str(scene)]) == 0
    capsys.readouterr()
    assert main(['detect', str(scene / 'events'), '--out', str(tmp_path / 'p.yaml')]) == 0
    detect_lines = [ln for ln in capsys.readouterr().out.splitlines() if 'rotor_' in ln]
    assert main(['track', str(scene / 'events'), '--out', str(tmp_path / 't'),
                 '--ground-truth', str(scene / 'ground_truth.csv'), '--skip', '0.15']) == 0
    text = capsys.readouterr().out
    assert '4 rotor(s) detected at start-up, named in image order' in text
    # detect and track give the same rotors the same names
    centres = [ln.split(', radius')[0] for ln in detect_lines]
    assert all(c in text for c in centres)
    mapping = text.split('ground truth matched by position:\n')[1].splitlines()[:4]
    assert [ln.split()[0] for ln in mapping] == ['rotor_0', 'rotor_1', 'rotor_2', 'rotor_3']
    assert len({ln.split()[2] for ln in mapping}) == 4   # four different true rotors
    assert 'MArE' in text


def test_track_says_in_one_line_when_truth_cannot_be_matched(tmp_path, capsys):
    scene = tmp_path / 'lone'
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.25', '--seed',
                 '3', '--out', str(scene)]) == 0
    gt = tmp_path / 'gt.csv'
    gt.write_text('t_us,rotor,rpm\n0,other,10000\n250000,other,10000\n')
    capsys.readouterr()
    assert main(['track', str(scene / 'events'), '--out', str(tmp_path / 't'),
                 '--ground-truth', str(gt)]) == 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and 'no true rotor named rotor_0' in err[0]
