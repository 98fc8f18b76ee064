# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Install helixtrack_ros.

With colcon (ament_python) the executables go to ``lib/helixtrack_ros`` (setup.cfg),
where ``ros2 run`` and ``ros2 launch`` find them, and launch/ and config/ to
``share/helixtrack_ros``. A plain ``pip install`` gives the ``helixtrack`` and
``helixtrack_node`` commands on PATH, but no ROS package that ``ros2 launch`` finds.
"""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'helixtrack_ros'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    # the declaration tables of the settings classes (helixtrack_ros.core.declared)
    package_data={PACKAGE: ['core/*.json', 'sim/*.json']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/launch', glob('launch/*.launch.py')),
        ('share/' + PACKAGE + '/config', glob('config/*.yaml')),
    ],
    python_requires='>=3.10',
    install_requires=['setuptools', 'numpy', 'numba>=0.60', 'pyyaml', 'tqdm'],
    extras_require={
        'bags': ['rosbags>=0.10', 'matplotlib'],
        # helixtrack batch / sweep (bokeh: the Dask dashboard; summary.parquet is written
        # where pyarrow is installed)
        'fleet': ['dask[distributed]>=2024.1', 'matplotlib', 'bokeh>=3.1'],
        # HDF5 (Metavision, DSEC, M3ED) and AEDAT 4 (iniVation DV) recordings
        'formats': ['h5py>=3.8', 'aedat>=2.0'],
        # (dv-processing: iniVation's own writer makes the AEDAT 4 files the tests read)
        'test': ['pytest', 'hypothesis', 'ruff', 'rosbags>=0.10', 'matplotlib',
                 'dask[distributed]>=2024.1', 'h5py>=3.8', 'aedat>=2.0', 'dv-processing'],
    },
    zip_safe=True,
    maintainer='helixtrack_ros maintainers',
    maintainer_email='helixtrack@example.com',
    description='Event-camera propeller RPM, phase and pose tracking (HelixTrack) for ROS 2',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'helixtrack = helixtrack_ros.cli:console_main',
            'helixtrack_node = helixtrack_ros.node:main',
        ],
    },
)
