# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Event-camera propeller simulator with exact ground truth (the project's testbed).

Quick use::

    from helixtrack_ros.sim import Simulator, make_scenario
    scene = make_scenario('quadcopter_2m', duration_s=0.5, ego_level=3, seed=1)
    for events in Simulator(scene, seed=0).chunks(10_000):
        ...
    gt = scene.ground_truth(t_us)      # rpm, shaft angle, H(t) per rotor
"""

from .camera import EGO_LEVELS, CameraMotion
from .scenarios import SCENARIOS, make_scenario
from .scene import EdgeSet, RotorSpec, Scene, SensorSpec, q_from_homography, q_homography
from .schedules import RpmSchedule
from .simulator import Simulator

__all__ = ['EGO_LEVELS', 'SCENARIOS', 'CameraMotion', 'EdgeSet', 'RotorSpec', 'RpmSchedule',
           'Scene', 'SensorSpec', 'Simulator', 'make_scenario', 'q_from_homography',
           'q_homography']
