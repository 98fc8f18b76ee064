# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Launch a Prophesee camera (``metavision_driver``) and ``helixtrack_node`` on it.

Usage::

    ros2 launch helixtrack_ros camera_helixtrack.launch.py \\
        params_file:=/path/to/rotors.yaml serial:=00050423 bias_file:=/path/to/biases.bias

The driver node is called ``camera_name`` (default ``event_camera``) and
publishes EVT3 packets on ``/<camera_name>/events``; the tracker subscribes
to that topic. Driver arguments passed through: ``serial``, ``bias_file``,
``frame_id``, ``event_message_time_threshold`` [s],
``event_message_size_threshold`` [bytes], ``send_queue_size``,
``erc_mode``, ``erc_rate`` [events/s], ``mipi_frame_period`` [us],
``use_multithreading``. Tracker arguments: ``params_file``, ``node_name``,
``log_level``.
"""

import os  # noqa: I001 (ruff takes launch/ for the first-party launch package)

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'helixtrack_ros'

#: Driver arguments: name -> (default, type, description).
DRIVER_ARGS = {
    'serial': ('', str, 'camera serial number (empty: the first camera found)'),
    'bias_file': ('', str, 'Metavision bias file (empty: sensor defaults)'),
    'frame_id': ('', str, 'frame_id of the event packets'),
    'event_message_time_threshold': ('0.001', float,
                                     'shortest time span of one event packet [s]'),
    'event_message_size_threshold': ('1000000', int,
                                     'largest size of one event packet [bytes]'),
    'send_queue_size': ('1000', int, 'outgoing packet queue of the driver'),
    'erc_mode': ('na', str, 'event rate control (Gen4 sensors): na, disabled, enabled'),
    'erc_rate': ('100000000', int, 'event rate control limit [events/s]'),
    'mipi_frame_period': ('-1', int,
                          'MIPI frame period [us] (-1: sensor default; 1008 gives ~1 ms '
                          'packets on sensors that support it)'),
    'use_multithreading': ('false', bool, 'decouple the SDK callback from publishing'),
}


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, the camera driver and the tracking node."""
    default_params = os.path.join(get_package_share_directory(PACKAGE), 'config',
                                  'helixtrack.yaml')
    camera = LaunchConfiguration('camera_name')
    events_topic = ['/', camera, '/events']
    args = [
        DeclareLaunchArgument('camera_name', default_value='event_camera',
                              description='name of the driver node; events on '
                                          '/<camera_name>/events'),
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='helixtrack parameter file (rotors, tracker)'),
        DeclareLaunchArgument('node_name', default_value='helixtrack',
                              description='name of the tracking node'),
        DeclareLaunchArgument('log_level', default_value='info',
                              description='log level of the tracking node'),
    ]
    driver_params = {'encoding': 'evt3'}
    for name, (default, value_type, text) in DRIVER_ARGS.items():
        args.append(DeclareLaunchArgument(name, default_value=default, description=text))
        driver_params[name] = ParameterValue(LaunchConfiguration(name), value_type=value_type)
    driver = Node(
        package='metavision_driver',
        executable='driver_node',
        name=camera,
        parameters=[driver_params],
        remappings=[('~/events', events_topic)],
        output='screen',
        emulate_tty=True,
    )
    tracker = Node(
        package=PACKAGE,
        executable='helixtrack_node',
        name=LaunchConfiguration('node_name'),
        parameters=[LaunchConfiguration('params_file')],
        remappings=[('~/events', events_topic)],
        ros_arguments=['--log-level', LaunchConfiguration('log_level')],
        output='screen',
        emulate_tty=True,
    )
    return LaunchDescription([*args, driver, tracker])
