# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's parameters keep their type, and a command line is never dropped unsaid.

Real rclpy throughout: the node in-process with its own ``--ros-args`` (rcl
parses them), and once as ``helixtrack_node`` over loopback DDS (the command
line, ``ros2 param set``'s SetParameters service). Before (live-node review):
a ``-p`` of another type than the ``--params-file``'s value of the same
parameter was dropped by rcl without a word; an integer set at run time on a
double parameter turned it into an integer parameter.
"""

from __future__ import annotations

import math

import node_fixtures as F  # noqa: N812
import pytest

F.require_ros()

import rclpy  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from helixtrack_ros.ros import node as hn  # noqa: E402

DOUBLE, INTEGER = Parameter.Type.DOUBLE, Parameter.Type.INTEGER


def _params_file(tmp_path, **extra):
    tree = dict(F.TWO_ROTORS, max_batch_packets=20, **extra)   # tracker.q_jerk: 300 (an int)
    return F.write_params_file(tmp_path / 'params.yaml', tree)


def _node(context, ros_args: list[str]):
    return hn.HelixtrackNode(context=context, cli_args=['--ros-args', *ros_args],
                             **F.STANDIN_KWARGS)


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith('[WARN]')]


# ---------------------------------------------------------------------- command line
@pytest.mark.parametrize('order', ['p_after_file', 'p_before_file'])
def test_a_double_p_over_an_integer_in_the_params_file_is_used(context, tmp_path, capfd,
                                                               order):
    """rcl keeps a parameter's integer when a double comes for it (its value struct
    holds both; rclpy reads the integer first): -p tracker.q_jerk:=250.5 ran with the
    file's 300. A double parameter takes the double."""
    path = _params_file(tmp_path)
    p_args = ['-p', 'tracker.q_jerk:=250.5', '-p', 'rotors.rear_right.rpm:=4600.5']
    args = ['--params-file', str(path), *p_args]
    if order == 'p_before_file':
        # the file comes last: its values are the ones given last, so they are used
        args = [*p_args, '--params-file', str(path)]
    node = _node(context, args)
    try:
        q = node.get_parameter('tracker.q_jerk')
        rpm = node.get_parameter('rotors.rear_right.rpm')
        if order == 'p_after_file':
            assert (q.value, q.type_) == (250.5, DOUBLE)
            assert node._pipe.params['tracker.q_jerk'] == 250.5
            assert rpm.value == 4600.5 and node._pipe.params['rotors.rear_right.rpm'] == 4600.5
        else:
            assert (q.value, q.type_) == (300.0, DOUBLE)       # a double parameter
            assert rpm.value == 4500 and node._pipe.params['rotors.rear_right.rpm'] == 4500.0
    finally:
        node.destroy_node()
    assert not _warnings(capfd.readouterr().err)


def test_an_integer_p_over_a_double_in_the_params_file_keeps_the_parameter_a_double(
        context, tmp_path):
    """rcl takes this one (the integer is read first), but as an integer: the double
    parameter turned into an integer one from the start."""
    path = _params_file(tmp_path, tracker={'q_jerk': 300.0}, debug_image_window_ms=10.0)
    node = _node(context, ['--params-file', str(path), '-p', 'tracker.q_jerk:=250',
                           '-p', 'debug_image_window_ms:=20'])
    try:
        for name, value in (('tracker.q_jerk', 250.0), ('debug_image_window_ms', 20.0)):
            p = node.get_parameter(name)
            assert (p.value, p.type_) == (value, DOUBLE), name
            assert node.describe_parameter(name).floating_point_range, name
    finally:
        node.destroy_node()


def test_a_p_override_that_cannot_be_used_is_said_in_one_line(context, tmp_path, capfd):
    """A -p the parameter cannot take (a double for an integer, an integer for a
    true/false) was dropped for the file's value without a word."""
    path = _params_file(tmp_path, realtime_stride=True)
    node = _node(context, ['--params-file', str(path), '-p', 'max_batch_packets:=30.5',
                           '-p', 'realtime_stride:=0'])
    try:
        assert node.get_parameter('max_batch_packets').value == 20
        assert node.get_parameter('realtime_stride').value is True
    finally:
        node.destroy_node()
    warnings = _warnings(capfd.readouterr().err)
    assert len(warnings) == 2, warnings
    (batch,) = [w for w in warnings if 'parameter max_batch_packets:' in w]
    (stride,) = [w for w in warnings if 'parameter realtime_stride:' in w]
    for line, given, kept in ((batch, 'max_batch_packets:=30.5', '20'),
                              (stride, 'realtime_stride:=0', 'true')):
        assert given in line and str(path) in line and f'using {kept}' in line, line
    assert 'must be an integer' in batch and 'must be true or false' in stride


# ---------------------------------------------------------------------- rcl's reading
def _rcl_overrides(context, ros_args: list[str]) -> dict:
    """What rcl and rclpy make of these arguments (a bare node of their own)."""
    node = rclpy.create_node('n', context=context, use_global_arguments=False,
                             cli_args=['--ros-args', *ros_args],
                             start_parameter_services=False, enable_rosout=False)
    try:
        return {k: p.value for k, p in node._parameter_overrides.items()}
    finally:
        node.destroy_node()


_TEXTS = ['1', '-7', '+3', '0x1F', '017', '08', '1.5', '1e3', '-2.5E-3', '.5', '5.', 'inf',
          '-Infinity', 'nan', '.inf', '-.Inf', '.NaN', 'true', 'yes', 'On', 'n', 'OFF', 'abc',
          "'12'", '"true"', '1_000', '99999999999999999999', '1e999', '0x1p3', '[1, 2]',
          '[1.5, 2.5]', "['a', 'b']", '[true, false]', 'a b']


def test_values_are_read_as_rcl_reads_them(context):
    from helixtrack_ros.ros.overrides import _param_rule, same
    for t in _TEXTS:
        (want,) = _rcl_overrides(context, ['-p', f'x:={t}']).values()
        got = _param_rule(f'x:={t}')[2]
        assert same(got, want), (t, got, want)


_FILE = ['400', '400.0', 'paper', 'true', '[1.0, 2.0]', '[1, 2]']
_GIVEN = ['250', '250.5', 'abc', 'false', '[3, 4]', '[3.5, 4.5]']


def test_the_values_rcl_drops_are_found(context, tmp_path):
    """Every pair of types, file then -p: what rclpy gives is what the reading of the
    command line says, and a dropped value is found exactly when rcl dropped one."""
    from helixtrack_ros.ros.overrides import _param_rule, dropped_values, same
    path = tmp_path / 'p.yaml'
    for file_text in _FILE:
        path.write_text(f'/**:\n  ros__parameters:\n    x: {file_text}\n')
        for given in _GIVEN:
            args = ['--params-file', str(path), '-p', f'x:={given}']
            got = _rcl_overrides(context, args)['x']
            dropped = dropped_values([['--ros-args', *args]], '/n', {'x': got})
            was_dropped = not same(got, _param_rule(f'x:={given}')[2])
            assert ('x' in dropped) == was_dropped, (file_text, given, got)
            if was_dropped:
                assert dropped['x'].given.source == f'-p x:={given}'
                assert same(dropped['x'].used.value, got)
                assert dropped['x'].used.source == str(path)


# ---------------------------------------------------------------------- set at run time
def test_an_integer_set_on_a_double_parameter_keeps_it_a_double(context, tmp_path):
    """Before: set_parameters([tracker.q_jerk = 250]) made tracker.q_jerk an integer
    parameter (rclpy's dynamic typing) and its descriptor said so; a refused value of
    another type left the descriptor with that type."""
    node = _node(context, ['--params-file', str(_params_file(tmp_path))])
    try:
        def state(name):
            p = node.get_parameter(name)
            return p.value, p.type_, Parameter.Type(node.describe_parameter(name).type)

        (ok,) = node.set_parameters([Parameter('tracker.q_jerk', value=250)])
        assert ok.successful, ok.reason
        assert state('tracker.q_jerk') == (250.0, DOUBLE, DOUBLE)
        assert node._pipe.tracker['q_jerk'] == 250.0
        assert isinstance(node._pipe.tracker['q_jerk'], float)
        for value, words in (('high', 'must be a number'), (True, 'must be a number'),
                             ([1.0], 'must be a number'), (2 ** 60 + 1, 'no exact double')):
            (bad,) = node.set_parameters([Parameter('tracker.q_jerk', value=value)])
            assert not bad.successful and 'tracker.q_jerk' in bad.reason, value
            assert words in bad.reason, (value, bad.reason)
            assert state('tracker.q_jerk') == (250.0, DOUBLE, DOUBLE), value
        # the ranges stay: an integer out of range is refused as the double would be
        (bad,) = node.set_parameters([Parameter('tracker.kappa', value=5000)])
        assert not bad.successful and 'kappa' in bad.reason and '1000' in bad.reason
        assert state('tracker.kappa') == (22.0, DOUBLE, DOUBLE)
        # an integer parameter stays one: a double is refused, even a whole one
        for value in (2.0, 2.5):
            (bad,) = node.set_parameters([Parameter('tracker.min_events', value=value)])
            assert not bad.successful and 'must be an integer' in bad.reason
            assert state('tracker.min_events') == (2000, INTEGER, INTEGER)
        (ok,) = node.set_parameters([Parameter('debug_image_hz', value=5)])
        assert ok.successful and state('debug_image_hz') == (5.0, DOUBLE, DOUBLE)
        assert node._debug.timer is not None
    finally:
        node.destroy_node()


# ---------------------------------------------------------------------- over DDS
def test_the_command_line_and_ros2_param_set_over_dds(tmp_path):
    """``helixtrack_node --ros-args --params-file F -p ...`` and SetParameters service
    calls, as ``ros2 run`` and ``ros2 param set`` make them."""
    from rcl_interfaces.srv import GetParameters

    path = _params_file(tmp_path)
    fqn = '/ptrust/helixtrack'
    proc = F.NodeProcess(['--params-file', str(path), '-r', '__ns:=/ptrust',
                          '-p', 'tracker.q_jerk:=250.5', '-p', 'max_batch_packets:=30.5'],
                         standin=True, log_dir=tmp_path)
    probe = F.Probe('ptrust_probe')
    try:
        def raw(name):
            req = GetParameters.Request()
            req.names = [name]
            v = probe._call(GetParameters, f'{fqn}/get_parameters', req, timeout=60).values[0]
            return Parameter.Type(v.type), (v.double_value if v.type == 3 else v.integer_value)

        assert raw('tracker.q_jerk') == (DOUBLE, 250.5)
        assert raw('max_batch_packets') == (INTEGER, 20)
        (ok,) = probe.set_parameters(fqn, {'tracker.q_jerk': 400})
        assert ok.successful, ok.reason
        assert raw('tracker.q_jerk') == (DOUBLE, 400.0)
        (bad,) = probe.set_parameters(fqn, {'tracker.q_jerk': 'fast'})
        assert not bad.successful and "tracker.q_jerk: must be a number, not 'fast'" in bad.reason
        assert raw('tracker.q_jerk') == (DOUBLE, 400.0)
        (desc,) = probe.describe_parameters(fqn, ['tracker.q_jerk'])
        assert Parameter.Type(desc.type) == DOUBLE
        assert desc.floating_point_range and desc.floating_point_range[0].from_value == 0.0
        assert not math.isnan(raw('tracker.q_jerk')[1]) and proc.alive()
    finally:
        log = F.close_and_check(probe, proc)
    warnings = [w for w in _warnings(log) if 'no event packets' not in w]
    assert len(warnings) == 1 and 'max_batch_packets:=30.5' in warnings[0], warnings
    assert 'using 20' in warnings[0]


def test_switching_every_phase_lock_check_off_at_run_time_is_warned(context, tmp_path):
    """As at the start: the same values set at run time were taken with an INFO line only
    (red-team round 5)."""
    from types import SimpleNamespace

    from helixtrack_ros.core.params import TrackerParams
    node = _node(context, ['--params-file', str(_params_file(tmp_path))])
    warned = []
    try:
        node._log = SimpleNamespace(info=lambda *a, **k: None, warning=warned.append)
        off = {'health_coherence_min': 0.0, 'health_coherence_rel': 0.0,
               'health_coherence_seed': 0.0}
        # (the stand-in pipeline declares a few parameters: its configuration after the set
        # is what the warning reads)
        node._pipe.config = SimpleNamespace(tracker=TrackerParams(**off))
        (ok,) = node.set_parameters([Parameter('tracker.q_jerk', value=250.0)])
        assert ok.successful, ok.reason
        assert len(warned) == 1 and warned[0].startswith('every check of')
        node._pipe.config = SimpleNamespace(tracker=TrackerParams())
        (ok,) = node.set_parameters([Parameter('tracker.q_jerk', value=300.0)])
        assert ok.successful and len(warned) == 1
    finally:
        node.destroy_node()
