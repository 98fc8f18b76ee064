# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack_node --help`` prints how to start it and its parameters, and exits."""

import subprocess
import sys

import node_fixtures as F  # noqa: N812

F.require_ros()


def test_help_prints_usage_and_every_parameter_and_starts_no_node():
    """Before: --help started the node (it listened on ~/events until killed)."""
    from helixtrack_ros.pipeline.config import ROTOR_FIELDS, parameter_table
    from helixtrack_ros.ros.parameters import NODE_CHOICES, NODE_PARAMETERS

    out = subprocess.run([sys.executable, '-m', 'helixtrack_ros.node', '--help'],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith('usage: helixtrack_node') and "'~/events:=" in text
    names = [*ROTOR_FIELDS, *NODE_PARAMETERS, *NODE_CHOICES, 'preset',
             *(k for k in parameter_table() if not k.startswith('tracker.'))]
    missing = [n for n in names if n not in text]
    assert not missing, missing
    assert 'tracking' not in out.stderr    # no node came up


def test_a_params_file_with_nothing_for_the_node_is_said(tmp_path):
    """Found by the configuration review: a file of another node's parameters (or an empty
    one) made the node detect its rotors without a word why."""
    import pytest
    pytest.importorskip('rclpy')
    from helixtrack_ros.ros.main import params_files_without_node
    files = {'other.yaml': 'camera_driver:\n  ros__parameters: {serial: abc}\n',
             'empty.yaml': '# nothing\n',
             'all.yaml': '/**:\n  ros__parameters: {rotor_names: []}\n',
             'named.yaml': 'helixtrack:\n  ros__parameters: {rotor_names: []}\n',
             'ns.yaml': '/drone/*:\n  ros__parameters: {rotor_names: []}\n'}
    for name, text in files.items():
        (tmp_path / name).write_text(text)

    def said(name, fqn='/helixtrack'):
        return params_files_without_node(
            ['helixtrack_node', '--ros-args', '--params-file', str(tmp_path / name)], fqn)

    (line,) = said('other.yaml')
    assert 'has no section for this node (/helixtrack' in line and 'camera_driver' in line
    assert 'holds no sections' in said('empty.yaml')[0]
    assert said('all.yaml') == [] and said('named.yaml') == []
    assert said('ns.yaml', '/drone/helixtrack') == [] and len(said('ns.yaml')) == 1
