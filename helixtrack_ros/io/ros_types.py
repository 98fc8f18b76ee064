# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The event message types and the ``rosbags`` typestores that know them.

Two message types carry encoded event packets with the same fields in a
different order: ``event_camera_msgs/msg/EventPacket`` (what the
metavision driver publishes now) and its predecessor
``event_array_msgs/msg/EventArray`` (older drivers and recordings). Both
are registered here from their public message definitions, so bags that do
not store a definition read as well, in a ROS 2 typestore (CDR) and a ROS 1
one (whose ``std_msgs/Header`` has a ``seq``).

Writing results and reading event packets need only a dozen standard types:
:func:`message_typestore` holds those alone (building the whole Kilted store
imports every ROS 2 distribution's type tables, about 0.3 s per command);
:func:`typestore` is the whole one, for bags of any standard type.
"""

from functools import lru_cache
from typing import Any

from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from helixtrack_ros.io.event_packet_cdr import EVENT_PACKET_MSG

#: ROS type name of the event packet message.
EVENT_PACKET_TYPE = 'event_camera_msgs/msg/EventPacket'
#: ROS type name of the older event array message (event_array_msgs).
EVENT_ARRAY_TYPE = 'event_array_msgs/msg/EventArray'
#: The message types whose ``events`` bytes the decoders read.
EVENT_TYPES = (EVENT_PACKET_TYPE, EVENT_ARRAY_TYPE)
#: EventArray types that list each event as a struct (read only: :mod:`.event_structs`).
STRUCT_EVENT_TYPES = ('dvs_msgs/msg/EventArray', 'prophesee_event_msgs/msg/EventArray')
#: Every message type an event topic of a recording may have.
READABLE_EVENT_TYPES = EVENT_TYPES + STRUCT_EVENT_TYPES
#: Default topic of the metavision driver.
DEFAULT_EVENT_TOPIC = '/event_camera/events'

#: The field list of event_array_msgs/msg/EventArray (ros-event-camera, Apache-2.0):
#: the EventPacket fields, in the older order.
EVENT_ARRAY_MSG = """std_msgs/Header header
uint32 height
uint32 width
string encoding
bool is_bigendian
uint64 time_base
uint8[] events
uint64 seq
"""

#: The fields of dvs_msgs/Event and prophesee_event_msgs/Event (the same in both).
STRUCT_EVENT_MSG = """uint16 x
uint16 y
time ts
bool polarity
"""

_DEFINITIONS = {EVENT_PACKET_TYPE: EVENT_PACKET_MSG, EVENT_ARRAY_TYPE: EVENT_ARRAY_MSG}
for _array in STRUCT_EVENT_TYPES:
    _pkg = _array.split('/', 1)[0]
    _DEFINITIONS[f'{_pkg}/msg/Event'] = STRUCT_EVENT_MSG
    _DEFINITIONS[_array] = ('std_msgs/Header header\nuint32 height\nuint32 width\n'
                            f'{_pkg}/Event[] events\n')


#: The standard ROS 2 (Kilted) types the event and result bags use, by their public
#: definitions (a test holds each equal to rosbags' Kilted store: text and type hash).
STANDARD_MSGS = {
    'builtin_interfaces/msg/Time': 'int32 sec\nuint32 nanosec\n',
    'std_msgs/msg/Header': 'builtin_interfaces/Time stamp\nstring frame_id\n',
    'std_msgs/msg/Float64': 'float64 data\n',
    'std_msgs/msg/MultiArrayDimension': 'string label\nuint32 size\nuint32 stride\n',
    'std_msgs/msg/MultiArrayLayout': 'std_msgs/MultiArrayDimension[] dim\nuint32 data_offset\n',
    'std_msgs/msg/Float64MultiArray': 'std_msgs/MultiArrayLayout layout\nfloat64[] data\n',
    'sensor_msgs/msg/JointState': ('std_msgs/Header header\nstring[] name\nfloat64[] position\n'
                                   'float64[] velocity\nfloat64[] effort\n'),
    'diagnostic_msgs/msg/KeyValue': 'string key\nstring value\n',
    'diagnostic_msgs/msg/DiagnosticStatus': ('byte OK=0\nbyte WARN=1\nbyte ERROR=2\nbyte STALE=3\n'
                                             'byte level\nstring name\nstring message\n'
                                             'string hardware_id\n'
                                             'diagnostic_msgs/KeyValue[] values\n'),
    'diagnostic_msgs/msg/DiagnosticArray': ('std_msgs/Header header\n'
                                            'diagnostic_msgs/DiagnosticStatus[] status\n'),
}


def _register(store: Any) -> Any:
    for name, text in _DEFINITIONS.items():
        store.register(get_types_from_msg(text, name))
    return store


@lru_cache(maxsize=1)
def typestore() -> Any:
    """The ROS 2 typestore (Kilted types + the event messages), shared."""
    return _register(get_typestore(Stores.ROS2_KILTED))


@lru_cache(maxsize=1)
def message_typestore() -> Any:
    """A ROS 2 typestore of :data:`STANDARD_MSGS` and the event messages only, shared:
    what the event and result bags read and write, built in milliseconds."""
    store = get_typestore(Stores.EMPTY)
    for name, text in STANDARD_MSGS.items():
        store.register(get_types_from_msg(text, name))
    return _register(store)


@lru_cache(maxsize=1)
def ros1_typestore() -> Any:
    """The ROS 1 typestore (Noetic types + the event messages), shared."""
    return _register(get_typestore(Stores.ROS1_NOETIC))
