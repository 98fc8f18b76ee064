# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The formats events can be written in, without importing what writes them.

The command line lists them in its parser; importing :mod:`.recordings` for that
loaded numpy before the command's own Ctrl-C handling was in place (an interrupt in
the first 0.3 s printed a traceback; review).
"""

#: a rosbag2 of EVT3 EventPackets, or a Metavision RAW file of EVT 3.0, 2.0 or 2.1
SINK_FORMATS = ('rosbag2', 'raw-evt3', 'raw-evt2', 'raw-evt21')
