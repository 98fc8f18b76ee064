# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Drop numba's on-disk cache of the simulator kernels when a kernel module changed.

numba keys a cached function on its own source file only, but the crossing and
scene kernels compile in code of the random-stream, sensor and blade modules; a
stale cache would silently run old code after an edit of one of those. This is
the guard of the core kernels (``helixtrack_ros.core.fastmath``) for ``sim/``.
"""

import os

_KERNEL_MODULES = ('kernels', 'kernels_random', 'kernels_sensor', 'kernels_blade',
                   'kernels_crossings', 'kernels_scene')
_checked = False


def guard_kernel_cache() -> None:
    """Once per process: drop the cached kernels unless the stamp of the modules matches.

    Best effort: errors (e.g. a read-only install) are ignored.
    """
    global _checked
    if _checked:
        return
    _checked = True
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        stamp = ';'.join(f'{m}:{st.st_mtime_ns}:{st.st_size}' for m, st in
                         ((m, os.stat(os.path.join(here, m + '.py'))) for m in _KERNEL_MODULES))
        cache = os.path.join(here, '__pycache__')
        mark = os.path.join(cache, 'helixtrack_sim_kernels.stamp')
        if os.path.isfile(mark):
            with open(mark) as f:
                if f.read() == stamp:
                    return
        if os.path.isdir(cache):
            for name in os.listdir(cache):
                if name.endswith(('.nbi', '.nbc')) and name.split('.')[0] in _KERNEL_MODULES:
                    os.remove(os.path.join(cache, name))
        os.makedirs(cache, exist_ok=True)
        with open(mark, 'w') as f:
            f.write(stamp)
    except OSError:
        pass
