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
