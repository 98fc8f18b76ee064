# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What every recording reader yields: one packet of encoded events.

The bag readers (EventPacket, EventArray; ROS 2 and ROS 1) and the
Metavision ``.raw`` reader all give :class:`EventPacketRecord`, so the
offline commands treat every kind of recording alike.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EventPacketRecord:
    """One packet of encoded events, as an EventPacket message holds it.

    Attributes
    ----------
    stamp_ns : int
        Header stamp [ns of ROS time].
    seq : int
        Packet sequence number.
    width, height : int
        Sensor size in pixels.
    encoding : str
        Payload encoding, e.g. ``'evt3'``.
    is_bigendian : bool
        Byte order of the payload words.
    time_base : int
        The message's time base (0 for EVT 3.0; ns for ``mono``).
    events : numpy.ndarray
        The payload bytes (uint8).
    log_time_ns : int
        Time at which the bag recorded the message [ns] (the stamp for a ``.raw`` file).
    """

    stamp_ns: int
    seq: int
    width: int
    height: int
    encoding: str
    is_bigendian: bool
    time_base: int
    events: np.ndarray
    log_time_ns: int
