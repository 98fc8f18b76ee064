# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""package.xml declares what the code imports, nothing it does not, and agrees with setup.py.

rosdep installs what package.xml names: a ROS package the node or a launch
file imports but package.xml misses fails only on a robot, at run time.
Imports are read with ``ast`` (function-level ones included), so these tests
need no ROS.
"""

from __future__ import annotations

import ast
from pathlib import Path
import re
import sys
import xml.etree.ElementTree as ET

ROOT = Path(__file__).resolve().parents[1]

#: Python libraries imported under helixtrack_ros -> their rosdep key.
PYTHON_KEYS = {'numpy': 'python3-numpy', 'yaml': 'python3-yaml', 'numba': 'python3-numba',
               'matplotlib': 'python3-matplotlib', 'tqdm': 'python3-tqdm',
               'rosbags': 'python3-rosbags-pip'}
#: Imported but deliberately not declared: why.
OPTIONAL = {
    'event_array_msgs': 'older drivers only; imported when a publisher uses EventArray',
    'lz4': 'a dependency of rosbags (compressed MCAP chunks)',
    'backports': 'backports.zstd, a dependency of rosbags before Python 3.14',
    'compression': 'compression.zstd, standard library from Python 3.14',
    'distributed': 'helixtrack batch / sweep only (pip extra fleet), not on a robot',
    'bokeh': 'the Dask dashboard, when installed (pip extra fleet)',
    'pyarrow': 'summary.parquet of helixtrack batch, when installed',
    'h5py': 'HDF5 recordings offline only (pip extra formats), said when missing',
    'aedat': 'AEDAT 4 recordings offline only (pip extra formats), said when missing',
    'hdf5plugin': 'Blosc / LZ4 / Zstandard HDF5 filters, used when installed',
}
#: Declared though no module imports it: why.
NOT_IMPORTED = {'metavision_driver': 'the camera driver camera_helixtrack.launch.py starts'}


def _package() -> ET.Element:
    return ET.parse(ROOT / 'package.xml').getroot()


def _deps(kind: str) -> dict[str, ET.Element]:
    return {e.text.strip(): e for e in _package().iter(kind)}


def _top_imports(paths: list[Path]) -> set[str]:
    """Top-level names of every absolute import in these files."""
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name.split('.')[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split('.')[0])
    return names - set(sys.stdlib_module_names) - {'helixtrack_ros'}


def _setup_text() -> str:
    return (ROOT / 'setup.py').read_text()


def _ros_sources() -> list[Path]:
    return sorted((ROOT / 'helixtrack_ros' / 'ros').glob('*.py')) + sorted(
        (ROOT / 'launch').glob('*.launch.py'))


def test_format_3_with_the_name_version_and_license_of_setup_py():
    pkg = _package()
    setup = _setup_text()
    assert pkg.get('format') == '3'
    assert pkg.findtext('name') == 'helixtrack_ros' and "PACKAGE = 'helixtrack_ros'" in setup
    assert f"version='{pkg.findtext('version')}'" in setup
    assert pkg.findtext('license') == 'Apache-2.0' and "license='Apache-2.0'" in setup
    assert pkg.find('export/build_type').text == 'ament_python'


def test_every_ros_package_the_node_and_launch_files_import_is_declared():
    declared = set(_deps('exec_depend')) | set(_deps('depend'))
    missing = sorted(_top_imports(_ros_sources()) - declared - set(PYTHON_KEYS) - set(OPTIONAL))
    assert not missing, f'imported under helixtrack_ros/ros or launch/, not in package.xml: ' \
                        f'{missing}'


def test_every_library_the_package_imports_is_declared_or_known_optional():
    declared = set(_deps('exec_depend')) | set(_deps('depend'))
    imported = _top_imports(sorted((ROOT / 'helixtrack_ros').rglob('*.py')))
    unknown = sorted(n for n in imported - set(OPTIONAL)
                     if PYTHON_KEYS.get(n, n) not in declared)
    assert not unknown, f'imported but not declared in package.xml: {unknown}'


def test_nothing_is_declared_that_no_module_or_launch_file_uses():
    imported = _top_imports(sorted((ROOT / 'helixtrack_ros').rglob('*.py')) + _ros_sources())
    used = imported | {PYTHON_KEYS[n] for n in imported & set(PYTHON_KEYS)}
    unused = sorted(set(_deps('exec_depend')) - used - set(NOT_IMPORTED))
    assert not unused, f'declared in package.xml but never imported: {unused}'
    launch_text = (ROOT / 'launch' / 'camera_helixtrack.launch.py').read_text()
    assert "package='metavision_driver'" in launch_text


def test_test_dependencies_are_what_the_tests_import():
    tests = _top_imports(sorted((ROOT / 'test').glob('*.py')))
    assert {'pytest', 'hypothesis'} <= tests
    assert set(_deps('test_depend')) == {'python3-pytest', 'python3-hypothesis'}


def test_minimum_numba_is_the_same_in_package_xml_setup_py_and_readme():
    numba = _deps('exec_depend')['python3-numba'].get('version_gte')
    assert numba
    assert f"'numba>={numba}'" in _setup_text()
    assert f'numba>={numba}' in (ROOT / 'scripts' / 'requirements-ros.txt').read_text()
    assert re.search(rf'numba[^\n]*{re.escape(numba)}', (ROOT / 'README.md').read_text())
