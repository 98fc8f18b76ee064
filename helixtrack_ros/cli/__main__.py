# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``python -m helixtrack_ros.cli``: the ``helixtrack`` command."""


from helixtrack_ros.cli import console_main

console_main()
