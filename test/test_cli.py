# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The helixtrack command end to end: simulate -> bag -> events / track."""

import csv

import numpy as np
import pytest

from helixtrack_ros.cli import main
from helixtrack_ros.io.bags import iter_messages, list_topics


@pytest.fixture(scope='module')
def scene_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp('scene')
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.4',
                 '--seed', '3', '--out', str(out)]) == 0
    return out


def test_simulate_writes_a_driver_like_bag(scene_dir):
    topics = list_topics(scene_dir / 'events')
    assert topics == {'/event_camera/events': 'event_camera_msgs/msg/EventPacket'}
    gt = list(csv.DictReader((scene_dir / 'ground_truth.csv').open()))
    assert gt[0].keys() == {'t_us', 'rotor', 'rpm', 'x_px', 'y_px', 'radius_px'}
    assert abs(float(gt[0]['radius_px']) - 100) < 1
    assert abs(float(gt[0]['rpm']) - 10_000) < 1
    assert 'rotor_names' in (scene_dir / 'params.yaml').read_text()


def test_events_command_decodes_every_event(scene_dir, tmp_path):
    out = tmp_path / 'ev.npz'
    assert main(['events', str(scene_dir / 'events'), '--out', str(out)]) == 0
    d = np.load(out)
    assert d['t_us'].dtype == np.int64 and len(d['t_us']) > 100_000
    assert np.all(np.diff(d['t_us']) >= 0)
    assert set(np.unique(d['p'])) <= {0, 1}
    assert d['t_us'][-1] <= 400_000


def test_track_writes_csv_bag_plot_and_meets_accuracy(scene_dir, tmp_path, capsys):
    out = tmp_path / 'track'
    assert main(['track', str(scene_dir / 'events'), '--params',
                 str(scene_dir / 'params.yaml'), '--out', str(out),
                 '--ground-truth', str(scene_dir / 'ground_truth.csv')]) == 0
    text = capsys.readouterr().out
    assert 'MArE' in text and 'real-time factor' in text
    rows = list(csv.DictReader((out / 'rpm.csv').open()))
    assert {'t_us', 'rotor', 'rpm', 'rpm_std', 'phase_rad', 'omega_rad_s', 'h00',
            'h22'} <= set(rows[0])
    late = [float(r['rpm']) for r in rows if int(r['t_us']) > 200_000]
    assert late and abs(np.mean(late) - 10_000) / 10_000 < 0.005
    assert (out / 'rpm.png').stat().st_size > 10_000
    topics = {t for t, _, _ in iter_messages(out / 'results.mcap')}
    assert {'/helixtrack/rotors', '/helixtrack/rotor/rpm', '/helixtrack/rotor/rpm_std',
            '/helixtrack/rotor/homography',
            '/diagnostics'} <= topics


def test_clear_errors_and_nonzero_exit(scene_dir, tmp_path, capsys):
    assert main(['track', str(tmp_path / 'nope'), '--params', str(scene_dir / 'params.yaml'),
                 '--out', str(tmp_path / 'o')]) == 2
    assert 'not found' in capsys.readouterr().err.lower()
    assert main(['track', str(scene_dir / 'events'), '--params', str(scene_dir / 'params.yaml'),
                 '--topic', '/missing', '--out', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err
    assert '/event_camera/events' in err  # the message lists what the bag has
    assert main(['simulate', '--scenario', 'nonsense', '--out', str(tmp_path / 's')]) == 2
    assert 'unknown scenario' in capsys.readouterr().err


def test_detect_writes_a_parameter_file_that_track_accepts(tmp_path, capsys):
    scene = tmp_path / 'quad'
    assert main(['simulate', '--scenario', 'quadcopter_4m', '--ego-level', '2', '--duration',
                 '0.35', '--seed', '11', '--out', str(scene)]) == 0
    params = tmp_path / 'detected.yaml'
    assert main(['detect', str(scene / 'events'), '--out', str(params)]) == 0
    assert '4 rotor(s) found' in capsys.readouterr().out
    from helixtrack_ros.io.params_file import load_ros_params
    flat = load_ros_params(params)
    truth = load_ros_params(scene / 'params.yaml')
    assert len(flat['rotor_names']) == 4
    # every detected rotor sits on a true one (centre within 10 % of the radius)
    for name in flat['rotor_names']:
        c = np.array(flat[f'rotors.{name}.center_px'])
        d = min(np.hypot(*(c - np.array(truth[f'rotors.{t}.center_px'])))
                / truth[f'rotors.{t}.radius_px'] for t in truth['rotor_names'])
        assert d < 0.1
    out = tmp_path / 'track'
    assert main(['track', str(scene / 'events'), '--params', str(params), '--out',
                 str(out)]) == 0
