# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Drop numba's on-disk cache of the simulator kernels when a kernel module changed.

numba keys a cached function on its own source file only, but the crossing and
scene kernels compile in code of the random-stream, sensor and blade modules; a
stale cache would silently run old code after an edit of one of those. This is
the guard of the core kernels (``helixtrack_ros.core.fastmath``) for ``sim/``.
"""

import os

from helixtrack_ros.core.jit import drop_stale_cache

_KERNEL_MODULES = ('kernels', 'kernels_random', 'kernels_sensor', 'kernels_blade',
                   'kernels_crossings', 'kernels_scene')
_checked = False


def guard_kernel_cache() -> None:
    """Once per process: drop the cached kernels unless the stamp of the modules matches."""
    global _checked
    if _checked:
        return
    _checked = True
    drop_stale_cache(os.path.dirname(os.path.abspath(__file__)), _KERNEL_MODULES,
                     'helixtrack_sim_kernels.stamp')
