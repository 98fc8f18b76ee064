# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Architecture rules: a ROS-free core, licence headers, installed files."""

import ast
from pathlib import Path
import sys

ROOT = Path(__file__).resolve().parents[1]
ROS_MODULES = {'rclpy', 'launch', 'launch_ros', 'std_msgs', 'sensor_msgs', 'geometry_msgs',
               'diagnostic_msgs', 'event_camera_msgs', 'builtin_interfaces', 'rosbags'}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split('.')[0])
    return names


def test_core_never_imports_ros():
    offenders = {}
    for path in (ROOT / 'helixtrack_ros' / 'core').rglob('*.py'):
        bad = _imports(path) & ROS_MODULES
        if bad:
            offenders[path.name] = sorted(bad)
    assert not offenders, f'core/ must stay ROS-free: {offenders}'


def test_core_imports_only_numpy_numba_and_stdlib():
    allowed = {'numpy', 'numba', 'helixtrack_ros', '__future__'} | set(sys.stdlib_module_names)
    for path in (ROOT / 'helixtrack_ros' / 'core').rglob('*.py'):
        extra = _imports(path) - allowed
        assert not extra, f'{path.name} imports {sorted(extra)}'


def test_pipeline_and_cli_do_not_import_rclpy():
    pkg = ROOT / 'helixtrack_ros'
    paths = [*(pkg / 'cli').glob('*.py'), *(pkg / 'pipeline').glob('*.py')]
    for path in paths:
        assert not _imports(path) & ROS_MODULES, path.name


def test_drawing_and_latency_modules_are_ros_free():
    for name in ('debug_image.py', 'latency.py'):
        bad = _imports(ROOT / 'helixtrack_ros' / name) & ROS_MODULES
        assert not bad, f'{name} imports {sorted(bad)}'


def test_every_source_file_has_the_licence_header():
    missing = []
    for pattern in ('helixtrack_ros/**/*.py', 'test/**/*.py', 'launch/*.py', 'scripts/*',
                    'benchmarks/*.py', '.ci/run'):
        for path in ROOT.glob(pattern):
            if path.is_file() and path.suffix in ('.py', '.sh', ''):
                head = path.read_text(errors='replace')[:400]
                if 'SPDX-License-Identifier: Apache-2.0' not in head:
                    missing.append(str(path.relative_to(ROOT)))
    assert not missing, f'licence header missing in {missing}'


def test_setup_installs_launch_and_config():
    setup = (ROOT / 'setup.py').read_text()
    assert "glob('launch/*.launch.py')" in setup and "glob('config/*.yaml')" in setup
    assert (ROOT / 'config' / 'helixtrack.yaml').is_file()
    assert (ROOT / 'resource' / 'helixtrack_ros').is_file()
    for line in ('helixtrack = helixtrack_ros.cli:console_main',
                 'helixtrack_node = helixtrack_ros.node:main'):
        assert line in setup


def test_jit_options_are_defined_only_in_core_jit():
    """Every kernel takes its numba options from core/jit.py, never its own."""
    offenders = []
    for path in (ROOT / 'helixtrack_ros').rglob('*.py'):
        if path.name == 'jit.py':
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Name) and node.id == 'njit':
                offenders.append(f'{path.name}:{node.lineno}')
    assert not offenders, f'numba options written outside core/jit.py: {offenders}'


def test_the_packet_threads_short_kernels_keep_the_gil_and_the_others_release_it():
    """The kernels the packet thread calls per packet keep the GIL: releasing it handed it
    to the busy detector thread, and taking it back cost 10-20 us per call for 1.6 us of
    work (benchmarks/RESULTS.md, twenty-second session). The rotor kernel of the worker
    threads and the detector's kernels release it, so that they run beside that thread."""
    from helixtrack_ros.codecs import evt2, evt3, libcaer, mono
    from helixtrack_ros.core import detection_ellipse, routing, tracker_stack
    held = [evt3._evt3_decode, evt2._evt2_decode, libcaer._libcaer_decode,
            libcaer._libcaer_cmp_decode, mono._mono_decode, routing._search_region,
            tracker_stack._process_stack]
    released = [routing._process_packets, detection_ellipse._fit_disc]
    assert [k.py_func.__name__ for k in held if k.targetoptions.get('nogil')] == []
    assert [k.py_func.__name__ for k in released if not k.targetoptions.get('nogil')] == []


def test_cli_modules_and_functions_stay_small():
    """The helixtrack command is a package of small modules (< 600 lines, functions < 80)."""
    too_long = []
    for path in (ROOT / 'helixtrack_ros' / 'cli').glob('*.py'):
        text = path.read_text()
        if len(text.splitlines()) >= 600:
            too_long.append(path.name)
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 >= 80:
                    too_long.append(f'{path.name}:{node.name}')
    assert not too_long, f'split these: {too_long}'
