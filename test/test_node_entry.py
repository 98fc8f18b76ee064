# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's entry point stops cleanly whenever it is interrupted while starting."""

import os
import signal

import pytest

import helixtrack_ros.node as entry


def test_ctrl_c_while_the_modules_load_stops_the_node_with_one_line(monkeypatch, capsys):
    """Found by the configuration review: Ctrl-C in the first 1.5 s of a start gave a
    19-49 line traceback out of whichever import it hit."""
    pytest.importorskip('rclpy')
    real = entry._load

    def interrupted_load():
        os.kill(os.getpid(), signal.SIGINT)       # Ctrl-C in the middle of the imports
        return real()

    monkeypatch.setattr(entry, '_load', interrupted_load)
    before = signal.getsignal(signal.SIGINT)      # (ignored when run in the background)
    assert entry.main(['helixtrack_node']) == 0
    assert capsys.readouterr().err.strip() == 'helixtrack_node: stopped while starting'
    assert signal.getsignal(signal.SIGINT) is before


def test_without_ros_the_node_says_so_in_one_line(monkeypatch, capsys):
    def no_ros():
        raise ImportError("No module named 'rclpy'")

    monkeypatch.setattr(entry, '_load', no_ros)
    assert entry.main(['helixtrack_node']) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'ROS 2 for this Python is missing' in err
