# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""ROS 2 parameter files shared by the node and the CLI."""

import pytest

from helixtrack_ros.io.params_file import (
    flatten,
    load_ros_params,
    rotor_params_tree,
    unflatten,
    write_ros_params,
)


def test_round_trip_through_a_ros_parameter_file(tmp_path):
    rotors = [{'name': 'a', 'center_px': [10, 20], 'radius_px': 30, 'rpm': 4000,
               'blades': 3, 'direction': -1, 'perspective': [0.01, -0.02]}]
    tree = rotor_params_tree(rotors)
    tree['tracker'] = {'q_jerk': 123.0}
    path = tmp_path / 'p.yaml'
    write_ros_params(path, tree, header='test file')
    flat = load_ros_params(path)
    assert flat['rotor_names'] == ['a']
    assert flat['rotors.a.center_px'] == [10.0, 20.0]
    assert flat['rotors.a.blades'] == 3 and flat['rotors.a.direction'] == -1
    assert flat['rotors.a.perspective'] == [0.01, -0.02]
    assert flat['tracker.q_jerk'] == 123.0
    assert path.read_text().startswith('# test file\n/**:')
    assert unflatten(flatten(tree)) == tree


def test_node_specific_section_overrides_wildcard(tmp_path):
    path = tmp_path / 'p.yaml'
    path.write_text('/**:\n  ros__parameters:\n    x: 1\n    y: 1\n'
                    'helixtrack:\n  ros__parameters:\n    y: 2\n')
    assert load_ros_params(path) == {'x': 1, 'y': 2}


def test_bad_files_give_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match='not found'):
        load_ros_params(tmp_path / 'missing.yaml')
    bad = tmp_path / 'bad.yaml'
    bad.write_text('just: [a, list\n')
    with pytest.raises(ValueError, match='not valid YAML'):
        load_ros_params(bad)
    other = tmp_path / 'other.yaml'
    other.write_text('foo:\n  bar: 1\n')
    with pytest.raises(ValueError, match='ros__parameters'):
        load_ros_params(other)


def test_a_key_given_twice_is_refused_with_its_name_and_line(tmp_path, capsys):
    """Before: PyYAML kept the last of two keys without a word (blades: 2 then blades: 7
    tracked 7 blades; a second rotors: block replaced the first)."""
    from helixtrack_ros.cli import main
    path = tmp_path / 'p.yaml'
    path.write_text('/**:\n  ros__parameters:\n    rotor_names: [a]\n    rotors:\n'
                    '      a: {center_px: [100.0, 100.0], radius_px: 40.0, rpm: 3000.0}\n'
                    '    rotors:\n      a: {center_px: [90.0, 90.0], radius_px: 40.0, '
                    'rpm: 3000.0, blades: 2, blades: 7}\n')
    with pytest.raises(ValueError, match=r"line 6, column 5: duplicate key 'rotors'"):
        load_ros_params(path)
    path.write_text(path.read_text().replace('    rotors:\n      a: {center_px: [90.0', '    x'
                                             ': {center_px: [90.0'))
    with pytest.raises(ValueError, match=r"line 6, column .*duplicate key 'blades'"):
        load_ros_params(path)
    assert main(['track', str(tmp_path / 'none'), '--params', str(path), '-o',
                 str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err
    assert "duplicate key 'blades'" in err and len(err.strip().splitlines()) == 1, err


def test_a_directory_or_a_binary_file_as_parameter_file_is_said_so(tmp_path):
    """Before: a directory was "parameter file not found", a binary file "'utf-8' codec
    can't decode byte ..." (helper review, 2026-11-27)."""
    with pytest.raises(ValueError, match=f'^{tmp_path} is a directory, not a parameter file$'):
        load_ros_params(tmp_path)
    binary = tmp_path / 'b.yaml'
    binary.write_bytes(b'/**:\n  ros__parameters:\n' + bytes(range(128, 256)))
    with pytest.raises(ValueError, match=r'b.yaml: not a text YAML file \(byte 0x80 at offset '
                                         r'24 is not UTF-8 text\)$'):
        load_ros_params(binary)


def test_cli_names_unknown_parameters_with_the_closest_known_one(tmp_path, capsys):
    """Before: the CLI ignored key typos silently (the node warned, without a hint)."""
    from helixtrack_ros.cli.track import load_config
    from helixtrack_ros.io.params_file import rotor_params_tree, write_ros_params

    tree = rotor_params_tree([{'name': 'a', 'center_px': [100.0, 100.0], 'radius_px': 40.0,
                               'rpm': 3000.0, 'blades': 2}])
    tree['rotors']['a']['radus_px'] = 41.0
    tree['tracker'] = {'kapa': 10.0}
    tree['max_strid'] = 2
    path = tmp_path / 'p.yaml'
    write_ros_params(path, tree)
    config = load_config(str(path))
    err = capsys.readouterr().err
    assert config.rotors[0].radius_px == 40.0
    for typo, known in (('rotors.a.radus_px', 'rotors.a.radius_px'),
                        ('tracker.kapa', 'tracker.kappa'), ('max_strid', 'max_stride')):
        assert f'{typo} (did you mean {known}?)' in err, err
    assert len(err.strip().splitlines()) == 1


def test_the_nodes_own_parameters_are_no_typo_offline(tmp_path, capsys):
    """One parameter file configures the node and the offline command; track called the
    node's own parameters unknown, "typo?" (red-team review)."""
    from helixtrack_ros.cli.track import load_config
    from helixtrack_ros.io.params_file import rotor_params_tree, write_ros_params
    from helixtrack_ros.node_parameters import NODE_CHOICES, NODE_PARAMETERS

    tree = rotor_params_tree([{'name': 'a', 'center_px': [100.0, 100.0], 'radius_px': 40.0,
                               'rpm': 3000.0, 'blades': 2}])
    tree.update({k: spec.default for k, spec in NODE_PARAMETERS.items()})
    tree.update({k: allowed[0] for k, (allowed, _) in NODE_CHOICES.items()})
    path = tmp_path / 'p.yaml'
    write_ros_params(path, tree)
    load_config(str(path))
    assert capsys.readouterr().err == ''


def test_a_number_yaml_read_as_text_gets_a_hint():
    """PyYAML (YAML 1.1) reads 1e12 as text; before, the message said only "bad value"."""
    import yaml

    from helixtrack_ros.pipeline.config import coerce_rotor_field
    value = yaml.safe_load('radius_px: 1e12')['radius_px']
    assert value == '1e12'
    with pytest.raises(ValueError, match=r"bad value: '1e12' \(text to YAML: write 1.0e\+12\)"):
        coerce_rotor_field('rotors.a.radius_px', value)
    assert yaml.safe_load('radius_px: 1.0e+12')['radius_px'] == 1e12
    for text in ('big', 'inf', '-Infinity', 'nan'):   # (inf: review, 2026-11-27)
        with pytest.raises(ValueError, match=rf"rotors.a.radius_px has a bad value: '{text}'$"):
            coerce_rotor_field('rotors.a.radius_px', text)


def test_every_check_of_a_family_switched_off_is_said(tmp_path, capsys):
    """Each health switch alone is safe; every phase-lock or pose check off at once
    published a scene with no rotor as TRACKING, without a word (red-team review)."""
    from helixtrack_ros.cli.track import load_config
    from helixtrack_ros.io.params_file import rotor_params_tree, write_ros_params

    tree = rotor_params_tree([{'name': 'a', 'center_px': [100.0, 100.0], 'radius_px': 40.0,
                               'rpm': 3000.0, 'blades': 2}])
    path = tmp_path / 'p.yaml'
    tree['tracker'] = {'health_coherence_min': 0.0, 'health_coherence_seed': -1.0}
    write_ros_params(path, tree)
    load_config(str(path))
    assert capsys.readouterr().err == ''           # one of the family still on
    tree['tracker'].update(health_coherence_rel=0.0, health_spill_max=1.0,
                           health_spill_rel=1.0, health_spill_seed=1.0)
    write_ros_params(path, tree)
    load_config(str(path))
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert 'the phase lock' in err and 'the pose on the blade tips' in err
    assert 'validated' not in err
