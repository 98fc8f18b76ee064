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


def _register(store: Any) -> Any:
    for name, text in _DEFINITIONS.items():
        store.register(get_types_from_msg(text, name))
    return store


@lru_cache(maxsize=1)
def typestore() -> Any:
    """The ROS 2 typestore (Kilted types + the event messages), shared."""
    return _register(get_typestore(Stores.ROS2_KILTED))


@lru_cache(maxsize=1)
def ros1_typestore() -> Any:
    """The ROS 1 typestore (Noetic types + the event messages), shared."""
    return _register(get_typestore(Stores.ROS1_NOETIC))
