# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Launch ``helixtrack_node`` on an existing event stream.

Usage::

    ros2 launch helixtrack_ros helixtrack.launch.py \\
        params_file:=/path/to/rotors.yaml events_topic:=/event_camera/events

Arguments: ``params_file`` (default: the installed
``share/helixtrack_ros/config/helixtrack.yaml``), ``events_topic`` (remapped
onto the node's ``~/events``), ``node_name``, ``namespace``, ``log_level``.
"""

import os  # noqa: I001 (ruff takes launch/ for the first-party launch package)

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = 'helixtrack_ros'


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and the node."""
    default_params = os.path.join(get_package_share_directory(PACKAGE), 'config',
                                  'helixtrack.yaml')
    return LaunchDescription([
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='ROS 2 parameter file with rotor_names, rotors.* '
                                          'and tracker.* (see config/helixtrack.yaml)'),
        DeclareLaunchArgument('events_topic', default_value='/event_camera/events',
                              description='event_camera_msgs/EventPacket topic to track'),
        DeclareLaunchArgument('node_name', default_value='helixtrack',
                              description='name of the tracking node'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of the tracking node'),
        DeclareLaunchArgument('log_level', default_value='info',
                              description='debug, info, warn, error or fatal'),
        Node(
            package=PACKAGE,
            executable='helixtrack_node',
            name=LaunchConfiguration('node_name'),
            namespace=LaunchConfiguration('namespace'),
            parameters=[LaunchConfiguration('params_file')],
            remappings=[('~/events', LaunchConfiguration('events_topic'))],
            ros_arguments=['--log-level', LaunchConfiguration('log_level')],
            output='screen',
            emulate_tty=True,
        ),
    ])
