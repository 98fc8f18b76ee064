# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's own parameters (beside the pipeline's), as a table without ROS.

One definition for the node, which declares them (:mod:`helixtrack_ros.ros.parameters`),
and for the offline command, which reads the same parameter file and must know them
for what they are: ``track`` called them unknown ("typo?"; review).
"""

from helixtrack_ros.pipeline.config import ParamSpec

#: Values of the ``events_type`` parameter: the message type of ``~/events``.
EVENTS_TYPES = ('auto', 'event_packet', 'event_array')
#: Values of the ``executor`` parameter.
EXECUTORS = ('events', 'single_threaded')

#: The node's own numeric parameters (reconfigurable unless in NODE_READ_ONLY).
NODE_PARAMETERS: dict[str, ParamSpec] = {
    'debug_image_hz': ParamSpec(0.0, 'debug image rate, 0 = off', 'Hz', 0.0, 60.0),
    'debug_image_window_ms': ParamSpec(10.0, 'sensor time of events drawn in a debug image',
                                       'ms', 0.1, 1000.0),
    'diagnostics_period_s': ParamSpec(1.0, 'period of /diagnostics', 's', 0.05, 60.0),
    'rotor_topics_hz': ParamSpec(
        100.0, 'rate of ~/<rotor>/rpm and ~/<rotor>/homography per second of sensor time, '
        'and at once on a state change; 0 = with every packet (~/rotors and ~/health always '
        'go with every packet)', 'Hz', 0.0, 100000.0),
    'max_batch_packets': ParamSpec(
        20, 'when packets queue up (processing behind), up to this many are taken and '
        'tracked together: one kernel call per rotor', '', 1, 1000),
}
#: The node's own string parameters: name -> (allowed values, description).
NODE_CHOICES: dict[str, tuple[tuple[str, ...], str]] = {
    'debug_image_encoding': (('mono8', 'rgb8'), 'debug image encoding: mono8 or rgb8'),
    'events_type': (EVENTS_TYPES, 'message type of ~/events: '
                    'event_camera_msgs/EventPacket, event_array_msgs/EventArray (older '
                    'drivers), or auto: the type its publishers use'),
    'executor': (EXECUTORS, 'how callbacks are run: "events" (rclpy.experimental.'
                 'EventsExecutor, Kilted and newer; elsewhere single_threaded) or '
                 '"single_threaded"'),
}
NODE_READ_ONLY = ('diagnostics_period_s', 'executor', 'events_type')
#: Every name of the node's own parameters.
NODE_NAMES = frozenset((*NODE_PARAMETERS, *NODE_CHOICES))
