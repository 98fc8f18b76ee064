# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A simulator stand-in that replays event chunks already made (tests share one scene)."""


class Replay:
    """Gives ``chunks()`` like :class:`helixtrack_ros.sim.Simulator`, from a list."""

    def __init__(self, chunks):
        self._chunks = chunks

    def chunks(self, chunk_us=1000):
        return iter(self._chunks)
