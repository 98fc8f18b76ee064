# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The launch files build a correct description, and all they name is installed.

``launch`` and ``launch_ros`` are not on PyPI, so minimal stand-ins with the
same constructor signatures (Humble to Kilted) are injected into
``sys.modules``; unknown keyword arguments fail as they would for real. The
resolved ``helixtrack_node`` command line is then run for real.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
from pathlib import Path
import sys
import types
from typing import Any

import node_fixtures as F  # noqa: N812
import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_DIR = ROOT / 'launch'
SHARE = '/opt/ros/test/share'


# ---------------------------------------------------------------------- stand-ins
class LaunchConfiguration:
    def __init__(self, variable_name: str, *, default: Any = None) -> None:
        self.variable_name = variable_name
        self.default = default

    def perform(self, context: dict[str, str]) -> str:
        return context[self.variable_name]


class DeclareLaunchArgument:
    def __init__(self, name: str, *, default_value: Any = None, description: str | None = None,
                 choices: Any = None, **kwargs: Any) -> None:
        self.name, self.default_value, self.description = name, default_value, description


class LaunchDescription:
    def __init__(self, initial_entities: Any = None, *, deprecated_reason: Any = None) -> None:
        self.entities = list(initial_entities or [])


class ParameterValue:
    def __init__(self, value: Any, *, value_type: Any = None) -> None:
        self.value, self.value_type = value, value_type


class Node:
    """``launch_ros.actions.Node``: the keyword arguments it accepts (Humble..Kilted)."""

    def __init__(self, *, executable: Any, package: Any = None, name: Any = None,
                 namespace: Any = None, exec_name: Any = None, parameters: Any = None,
                 remappings: Any = None, ros_arguments: Any = None, arguments: Any = None,
                 output: Any = None, emulate_tty: bool = False, respawn: Any = False,
                 respawn_delay: Any = None, additional_env: Any = None, prefix: Any = None,
                 sigterm_timeout: Any = None, sigkill_timeout: Any = None,
                 cwd: Any = None, env: Any = None, on_exit: Any = None) -> None:
        self.kw = {k: v for k, v in locals().items() if k not in ('self', '__class__')}


def resolve(value: Any, context: dict[str, str]) -> Any:
    """Perform one substitution value like launch does (a list of them concatenates)."""
    if isinstance(value, LaunchConfiguration):
        return value.perform(context)
    if isinstance(value, ParameterValue):
        text = resolve(value.value, context)
        if value.value_type is bool:
            return {'true': True, 'false': False}[text.lower()]
        return value.value_type(text) if value.value_type else text
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, LaunchConfiguration))
                                                for v in value):
        return ''.join(resolve(v, context) for v in value)
    return value


@pytest.fixture
def fake_launch(monkeypatch):
    """Inject launch, launch_ros and ament_index_python stand-ins."""
    mods = {
        'launch': {'LaunchDescription': LaunchDescription},
        'launch.actions': {'DeclareLaunchArgument': DeclareLaunchArgument},
        'launch.substitutions': {'LaunchConfiguration': LaunchConfiguration},
        'launch_ros': {},
        'launch_ros.actions': {'Node': Node},
        'launch_ros.parameter_descriptions': {'ParameterValue': ParameterValue},
        'ament_index_python': {},
        'ament_index_python.packages': {
            'get_package_share_directory': lambda pkg: f'{SHARE}/{pkg}'},
    }
    for name, attrs in mods.items():
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, mod)


def load(path: Path) -> LaunchDescription:
    spec = importlib.util.spec_from_file_location(f'_launch_{path.stem.replace(".", "_")}',
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def split(ld: LaunchDescription) -> tuple[dict[str, DeclareLaunchArgument], list[Node]]:
    args = {e.name: e for e in ld.entities if isinstance(e, DeclareLaunchArgument)}
    nodes = [e for e in ld.entities if isinstance(e, Node)]
    assert len(args) + len(nodes) == len(ld.entities)
    return args, nodes


def configs_used(value: Any) -> set[str]:
    """Names of every LaunchConfiguration inside a (nested) value."""
    if isinstance(value, LaunchConfiguration):
        return {value.variable_name}
    if isinstance(value, ParameterValue):
        return configs_used(value.value)
    if isinstance(value, dict):
        return set().union(*(configs_used(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(configs_used(v) for v in value)) if value else set()
    return set()


@pytest.fixture(scope='module')
def installed() -> dict[str, Any]:
    """What ``setup.py`` installs: data files by install path, console scripts."""
    # setup.py needs setuptools, which brings distutils on Python >= 3.12
    importlib.import_module('setuptools')
    from distutils.core import run_setup
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(None):
            dist = run_setup('setup.py', stop_after='init')
    finally:
        os.chdir(cwd)
    files = {}
    for target, sources in dist.data_files:
        for src in sources:
            files[f'{target}/{Path(src).name}'] = ROOT / src
    scripts = dict(s.replace(' ', '').split('=', 1)
                   for s in dist.entry_points['console_scripts'])
    return {'files': files, 'scripts': scripts}


def installed_path(path: str, installed: dict[str, Any]) -> Path:
    """Map an install path under the share stand-in to its source file."""
    assert path.startswith(SHARE + '/'), path
    rel = 'share/' + path[len(SHARE) + 1:]
    assert rel in installed['files'], f'{rel} is not installed by setup.py data_files'
    return installed['files'][rel]


def check_node_executable(node: Node, installed: dict[str, Any]) -> None:
    assert node.kw['package'] == 'helixtrack_ros'
    target = installed['scripts'][node.kw['executable']]
    module, func = target.split(':')
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin
    assert f'def {func}(' in Path(spec.origin).read_text()


# ---------------------------------------------------------------------- tests
def test_install_layout(installed):
    # ros2 launch / ros2 run look for executables in lib/<package>
    cfg = (ROOT / 'setup.cfg').read_text()
    assert 'install_scripts=$base/lib/helixtrack_ros' in cfg.replace(' ', '')
    for launch in LAUNCH_DIR.glob('*.launch.py'):
        assert f'share/helixtrack_ros/launch/{launch.name}' in installed['files']
    assert 'share/ament_index/resource_index/packages/helixtrack_ros' in installed['files']


def test_helixtrack_launch(fake_launch, installed):
    args, nodes = split(load(LAUNCH_DIR / 'helixtrack.launch.py'))
    assert {'params_file', 'events_topic', 'node_name', 'log_level'} <= set(args)
    assert args['events_topic'].default_value == '/event_camera/events'
    assert args['node_name'].default_value == 'helixtrack'
    (node,) = nodes
    check_node_executable(node, installed)
    assert configs_used(node.kw) <= set(args)
    ctx = {k: resolve(a.default_value, {}) for k, a in args.items()}
    params = [resolve(p, ctx) for p in node.kw['parameters']]
    assert params == [f'{SHARE}/helixtrack_ros/config/helixtrack.yaml']
    assert installed_path(params[0], installed).is_file()
    remaps = [(resolve(a, ctx), resolve(b, ctx)) for a, b in node.kw['remappings']]
    assert remaps == [('~/events', '/event_camera/events')]
    assert resolve(node.kw['name'], ctx) == 'helixtrack'


def test_camera_launch(fake_launch, installed):
    args, nodes = split(load(LAUNCH_DIR / 'camera_helixtrack.launch.py'))
    for name in ('serial', 'bias_file', 'camera_name', 'frame_id',
                 'event_message_time_threshold', 'params_file', 'node_name', 'log_level'):
        assert name in args, name
    ctx = {k: resolve(a.default_value, {}) for k, a in args.items()}
    driver = next(n for n in nodes if n.kw['package'] == 'metavision_driver')
    tracker = next(n for n in nodes if n.kw['package'] == 'helixtrack_ros')
    assert len(nodes) == 2
    check_node_executable(tracker, installed)
    assert driver.kw['executable'] == 'driver_node'
    assert resolve(driver.kw['name'], ctx) == 'event_camera'
    for node in nodes:
        assert configs_used(node.kw) <= set(args)
    (dparams,) = driver.kw['parameters']
    values = {k: resolve(v, ctx) for k, v in dparams.items()}
    assert values['encoding'] == 'evt3'
    assert values['serial'] == '' and values['bias_file'] == ''
    assert values['event_message_time_threshold'] == pytest.approx(1e-3)
    # a numeric-looking serial stays a string
    assert resolve(dparams['serial'], dict(ctx, serial='00050423')) == '00050423'
    # both nodes meet on /event_camera/events
    (d_remap,) = driver.kw['remappings']
    (t_remap,) = tracker.kw['remappings']
    assert resolve(d_remap[0], ctx) == resolve(t_remap[0], ctx) == '~/events'
    assert resolve(d_remap[1], ctx) == resolve(t_remap[1], ctx) == '/event_camera/events'
    assert resolve(t_remap[1], dict(ctx, camera_name='cam1')) == '/cam1/events'
    params = [resolve(p, ctx) for p in tracker.kw['parameters']]
    assert installed_path(params[0], installed).is_file()


def test_node_signature_covers_our_use():
    # every keyword the stand-in Node accepts is a real launch_ros Node argument name
    names = set(inspect.signature(Node.__init__).parameters) - {'self'}
    assert {'package', 'executable', 'name', 'namespace', 'parameters', 'remappings',
            'arguments', 'ros_arguments', 'output', 'emulate_tty'} <= names


@pytest.mark.parametrize('name', ['helixtrack.launch.py', 'camera_helixtrack.launch.py'])
def test_log_level_goes_in_ros_arguments_not_a_second_ros_args_block(fake_launch, name):
    _, nodes = split(load(LAUNCH_DIR / name))
    tracker = next(n for n in nodes if n.kw['package'] == 'helixtrack_ros')
    assert tracker.kw['arguments'] is None
    assert tracker.kw['ros_arguments'][0] == '--log-level'
    assert configs_used(tracker.kw['ros_arguments']) == {'log_level'}


def test_resolved_command_line_runs(fake_launch, installed, tmp_path):
    """Run the node with the arguments launch_ros would give it (stand-in pipeline)."""
    F.require_ros()
    args, (node,) = split(load(LAUNCH_DIR / 'helixtrack.launch.py'))
    params = F.write_params_file(tmp_path / 'p.yaml',
                                 dict(F.TWO_ROTORS, diagnostics_period_s=0.1))
    ctx = {k: resolve(a.default_value, {}) for k, a in args.items()}
    ctx.update(params_file=str(params), events_topic='/cam/ev', node_name='ht')
    ros_args = ['-r', f'__node:={resolve(node.kw["name"], ctx)}']
    ns = resolve(node.kw['namespace'], ctx)
    if ns:
        ros_args += ['-r', f'__ns:=/{ns.strip("/")}']
    for p in node.kw['parameters']:
        p = resolve(p, ctx)
        ros_args += ['--params-file', p]
    for a, b in node.kw['remappings']:
        ros_args += ['-r', f'{resolve(a, ctx)}:={resolve(b, ctx)}']
    # launch_ros puts ros_arguments into a --ros-args block of their own
    extra = [resolve(a, ctx) for a in node.kw['ros_arguments']]
    proc = F.NodeProcess(ros_args + extra, standin=True, log_dir=tmp_path)
    probe = F.Probe('launch_probe')
    try:
        pub = probe.events_publisher('/cam/ev')
        probe.wait_matched(pub)
        F.wait_until(lambda: any(n == 'ht' for n, _ in
                                 probe.node.get_node_names_and_namespaces()), 10, 'node ht')
    finally:
        probe.close()
        rc = proc.stop()
    assert rc == 0, proc.output()
