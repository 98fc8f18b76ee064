# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Python code run in a process of its own, for what the test run's process has already
done (a kernel loaded by an earlier test, memory left on the heap)."""

import subprocess
import sys


def assert_runs_fresh(code: str, timeout_s: float = 300.0) -> str:
    """Run ``code`` in a new interpreter; its stdout, or an AssertionError with its
    stderr's end when it fails."""
    run = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=timeout_s)
    assert run.returncode == 0, run.stderr[-500:]
    return run.stdout
