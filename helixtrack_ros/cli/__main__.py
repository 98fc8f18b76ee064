# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``python -m helixtrack_ros.cli``: the ``helixtrack`` command."""

import sys

from helixtrack_ros.cli import main

sys.exit(main())
