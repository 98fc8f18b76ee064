# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Many tracking jobs at once on Dask: ``helixtrack batch`` and ``helixtrack sweep``.

- :mod:`.task`: one job (a recording, a configuration, where to write) and
  what a worker sends back (:class:`~.task.Outcome`), made by the ``track``
  command's own functions;
- :mod:`.engine`: the Dask client, on an embedded local cluster or an
  existing scheduler, with kernels warmed once per worker, retries and
  progress;
- :mod:`.summary`: per-rotor figures of one run and the batch summary files;
- :mod:`.batch`: every recording with one configuration;
- :mod:`.sweep`: every configuration of a parameter grid on every recording
  with ground truth, cached per cell, ranked.

Dask is imported only by :mod:`.engine` (the ``fleet`` extra), so the rest
of the package works without it.
"""
