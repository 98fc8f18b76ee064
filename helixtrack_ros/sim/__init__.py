# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Event-camera propeller simulator with exact ground truth (the project's testbed).

Quick use::

    from helixtrack_ros.sim import Simulator, make_scenario
    scene = make_scenario('quadcopter_2m', duration_s=0.5, ego_level=3, seed=1)
    for events in Simulator(scene, seed=0).chunks(10_000):
        ...
    gt = scene.ground_truth(t_us)      # rpm, shaft angle, H(t) per rotor

Model in brief
--------------
* Rotors: B blades between ``hub_radius`` and the tip (rotor plane in tip radii),
  chord tapering root -> peak (r = 0.4) -> tip, optional swept centre line; blade k
  at ``direction * theta_shaft(t) + 2 pi k / B``. ``theta_shaft`` is the closed-form
  integral of the RPM schedule (constant, ramps, 30-80 % 'spiral' sweep, sinusoids).
* Geometry: ``H(t) = M_cam(t) @ H0`` with ``H0`` the paper's q-homography; the camera
  egomotion (levels 0-7: drift ... racing-drone shake with vibration and jolts)
  moves rotors and a textured background, drone body and hubs alike.
* Blade events: a pixel fires when a blade edge crosses its centre; leading edge
  gives the polarity of ``contrast`` (dark blade: OFF), trailing edge the opposite;
  0-3 events per crossing (fewer toward the hub, fewer when the blade passes faster
  than the photoreceptor time constant), ~normal jitter, extra events of a crossing
  after the refractory time plus a random gap.
* Background: static edges (blobs, straight edges, drone arms, hub circles) fire
  where camera motion sweeps them over pixels; uniform background activity and a
  few hot pixels; a per-pixel refractory filter on the merged stream.
* Variants (``make_scenario(..., variant=...)``, :data:`VARIANTS`): blade width and
  taper, rounded tips, contrast, per-pixel threshold spread, ON / OFF gains and OFF
  latency, background-activity rate; applied after every draw of the scene.
* Accuracy: crossing times match a brute-force twin (test/reference/naive_sim.py)
  to ~1-2 us for a static camera; under egomotion the geometry is interpolated
  between knots (<= 0.4 px, <= 0.01 rad at the smallest hub), typically a few us.
  Events are deterministic for a seed, whatever the chunk size.
"""

from .camera import EGO_LEVELS, CameraMotion
from .scenarios import DEFAULT_EGO, SCENARIOS, make_scenario, tilt_perspective
from .scene import EdgeSet, RotorSpec, Scene, SensorSpec, q_from_homography, q_homography
from .schedules import RpmSchedule
from .simulator import Simulator
from .variants import VARIANTS, SimVariant

__all__ = ['DEFAULT_EGO', 'EGO_LEVELS', 'SCENARIOS', 'VARIANTS', 'CameraMotion', 'EdgeSet',
           'RotorSpec', 'RpmSchedule', 'Scene', 'SensorSpec', 'SimVariant', 'Simulator',
           'make_scenario', 'q_from_homography', 'q_homography', 'tilt_perspective']
