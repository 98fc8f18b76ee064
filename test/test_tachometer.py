# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Tachometer pulses in the trigger input as ground truth: the RPM between edges, bounces
and missed pulses, the simulator's pulses, and ``events --tachometer`` end to end."""

import csv

import numpy as np
import pytest

from helixtrack_ros.cli import main
from helixtrack_ros.sim import make_scenario
from helixtrack_ros.tachometer import (
    TachometerSpec,
    parse_tachometer,
    revolution_times,
    rpm_from_pulses,
)


def _train(edges_us: np.ndarray, channel: int = 0) -> tuple:
    """Rising edges at ``edges_us`` with falling ones 100 us later, on ``channel``."""
    t = np.sort(np.r_[edges_us, edges_us + 100]).astype(np.int64)
    value = np.isin(t, edges_us).astype(np.uint8)
    return t, value, np.full(len(t), channel, np.uint8)


def test_a_constant_speed_is_read_exactly_at_the_middle_of_each_turn():
    edges = np.arange(10) * 6000 + 1234          # 10,000 RPM, one pulse per turn
    got = rpm_from_pulses(*_train(edges), TachometerSpec(0, 'r'))
    assert np.allclose(got.rpm, 10_000.0) and len(got.rpm) == 9
    assert np.array_equal(got.t_us, edges[:-1] + 3000)
    two = rpm_from_pulses(*_train(edges), TachometerSpec(0, 'r', pulses_per_rev=2))
    assert np.allclose(two.rpm, 5_000.0)


def test_other_channels_and_falling_edges_are_not_pulses():
    a, b = _train(np.arange(6) * 6000, 0), _train(np.arange(6) * 4000 + 17, 3)
    t, v, k = (np.concatenate([x, y]) for x, y in zip(a, b, strict=True))
    assert np.allclose(rpm_from_pulses(t, v, k, TachometerSpec(0, 'r')).rpm, 10_000.0)
    assert np.allclose(rpm_from_pulses(t, v, k, TachometerSpec(3, 'r')).rpm, 15_000.0)


def test_bounces_are_dropped_and_a_missed_pulse_gives_no_halved_speed():
    edges = np.arange(20) * 6000
    bounced = np.sort(np.r_[edges, edges[5] + 40])           # a bounce 40 us after an edge
    got = rpm_from_pulses(*_train(bounced), TachometerSpec(0, 'r'))
    assert got.bounces == 1 and np.allclose(got.rpm, 10_000.0) and len(got.rpm) == 19
    missed = np.delete(edges, 10)                            # one pulse not seen
    got = rpm_from_pulses(*_train(missed), TachometerSpec(0, 'r'))
    assert got.outliers == 1 and np.allclose(got.rpm, 10_000.0) and len(got.rpm) == 17


def test_too_few_pulses_give_no_speed():
    got = rpm_from_pulses(*_train(np.array([500])), TachometerSpec(0, 'r'))
    assert len(got.rpm) == 0 and got.edges == 1


def test_revolution_times_of_a_ramp_match_the_analytic_crossings():
    """omega = a t: the angle a t^2 / 2 passes turn k at sqrt(4 pi k / a)."""
    t = np.arange(0, 200_001, 10, dtype=np.int64)
    a = 2e-8                                                    # rad / us^2
    got = revolution_times(a * t.astype(float) ** 2 / 2, t)
    want = np.sqrt(4 * np.pi * np.arange(1, len(got) + 1) / a)
    assert len(got) == int(a * 200_000.0 ** 2 / 2 / (2 * np.pi))
    assert np.max(np.abs(got - want)) <= 1.0


@pytest.mark.parametrize('text, spec', [('0=rotor_0', TachometerSpec(0, 'rotor_0', 1)),
                                        (' 3 = front_left : 2 ', TachometerSpec(3, 'front_left',
                                                                                 2))])
def test_the_spec_is_channel_rotor_and_pulses(text, spec):
    assert parse_tachometer(text) == spec


@pytest.mark.parametrize('text', ['rotor_0', '0=', 'x=rotor', '0=rotor:0', '999=rotor',
                                  '0=rotor:2:3'])
def test_a_bad_spec_is_one_clear_error(text):
    with pytest.raises(ValueError, match='--tachometer'):
        parse_tachometer(text)


# ------------------------------------------------------------------------------ end to end
@pytest.fixture(scope='module')
def bench(tmp_path_factory):
    """A 0.4 s quadcopter with each rotor's tachometer in the trigger input."""
    out = tmp_path_factory.mktemp('tach')
    assert main(['simulate', '--scenario', 'quadcopter_4m', '--duration', '0.4', '--seed',
                 '21', '--tachometer', '-q', '--out', str(out)]) == 0
    return out


def _truth(path):
    per = {}
    for r in csv.DictReader(path.open()):
        per.setdefault(r['rotor'], []).append((int(r['t_us']), float(r['rpm'])))
    return {k: np.array(v).T for k, v in per.items()}


def test_the_tachometer_truth_matches_the_simulated_truth(bench, tmp_path, capsys):
    assert main(['events', str(bench / 'events'), '--out', str(tmp_path / 'ev.npz'), '-q',
                 '--tachometer', '0=front_left', '--tachometer', '3=rear_right:1']) == 0
    said = capsys.readouterr().out
    assert 'tachometer channel 0 -> front_left' in said and '0 bounces' in said
    got, exact = _truth(tmp_path / 'ev.ground_truth.csv'), _truth(bench / 'ground_truth.csv')
    assert sorted(got) == ['front_left', 'rear_right']
    for name, (t, rpm) in got.items():
        ref = np.interp(t, *exact[name])
        # (the mean over a turn at its middle, edges on whole microseconds)
        assert len(t) > 20 and np.max(np.abs(rpm / ref - 1)) < 5e-4, name


def test_track_scores_against_the_tachometer_truth(bench, tmp_path, capsys):
    assert main(['events', str(bench / 'events'), '--out', str(tmp_path / 'chunks'), '-q',
                 '--tachometer', '1=front_right']) == 0
    assert (tmp_path / 'chunks' / 'ground_truth.csv').is_file()
    assert main(['track', str(bench / 'events'), '--params', str(bench / 'params.yaml'), '-q',
                 '--ground-truth', str(tmp_path / 'chunks' / 'ground_truth.csv'),
                 '--skip', '0.1', '--out', str(tmp_path / 'o')]) == 0
    out = capsys.readouterr()
    row = [ln.split() for ln in out.out.splitlines() if ln.strip().startswith('front_right')]
    assert row and float(row[0][2]) < 0.3          # MArE [%]
    assert 'no true rotor named front_left' in out.err


def test_a_channel_without_pulses_writes_no_truth_and_says_so(bench, tmp_path, capsys):
    assert main(['events', str(bench / 'events'), '--out', str(tmp_path / 'ev.npz'), '-q',
                 '--tachometer', '9=front_left']) == 1
    assert 'no ground truth written' in capsys.readouterr().err
    assert (tmp_path / 'ev.npz').is_file() and not (tmp_path / 'ev.ground_truth.csv').exists()


def test_a_channel_given_twice_is_a_usage_error(bench, tmp_path, capsys):
    assert main(['events', str(bench / 'events'), '--out', str(tmp_path / 'ev.npz'),
                 '--tachometer', '0=a', '--tachometer', '0=b']) == 2
    assert 'channel 0 given twice' in capsys.readouterr().err


def test_the_simulated_pulses_made_a_block_at_a_time_are_those_of_the_whole_grid():
    """simulate --tachometer makes them a second at a time (the whole 10 us grid of an hour
    took 2.9 GB a rotor): the same edges as one grid over the scene, handed out in order."""
    from helixtrack_ros.cli.simulate import TachometerPulses
    scene = make_scenario('quadcopter_4m', duration_s=2.5, seed=5)
    grid = np.arange(0, scene.duration_us + 1, 10, dtype=np.int64)
    want = sorted((int(t), i) for i, r in enumerate(scene.rotors)
                  for t in revolution_times(r.shaft_angle(grid), grid))
    pulses, got, last = TachometerPulses(scene), [], -1
    for t in [*range(700, scene.duration_us, 997), None]:
        part = pulses.until(t)
        assert np.all(np.diff(part['trig_t_us']) >= 0) and (
            not len(part['trig_t_us']) or part['trig_t_us'][0] >= last)
        if len(part['trig_t_us']):
            last = int(part['trig_t_us'][-1])
        rising = part['trig_value'] == 1
        got += list(zip(part['trig_t_us'][rising].tolist(),
                        part['trig_id'][rising].tolist()))
    assert sorted(got) == want and len(want) > 300
