# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The numba compile options, defined once for every kernel in the package.

Every kernel is cached on disk (start-up loads machine code instead of
compiling) and releases the GIL (rotor kernels run on worker threads), except
:data:`packet_kernel`'s. The variants differ in two choices that change
results, so each kernel names the one it was validated with:

- ``error_model='numpy'``: a division by zero gives inf/NaN instead of
  raising; used where the kernel checks the result itself.
- ``fastmath={'contract'}``: lets LLVM fuse multiply-adds (FMA), faster and
  at most one rounding different; used by the hot per-event maths.
- ``inline='always'``: a small helper inlined into its caller by numba, so a
  kernel can be split into named steps at no cost.
"""

import os

from numba import njit

_BASE = {'cache': True, 'nogil': True}

kernel = njit(**_BASE)
"""A cached, GIL-free kernel with Python's error model."""
kernel_inline = njit(inline='always', **_BASE)
numpy_errors = njit(error_model='numpy', **_BASE)
"""A kernel whose divisions by zero give inf/NaN instead of raising."""
numpy_errors_inline = njit(error_model='numpy', inline='always', **_BASE)
fma = njit(fastmath={'contract'}, **_BASE)
"""A kernel whose multiply-adds may be fused (hot per-event maths)."""
fma_inline = njit(fastmath={'contract'}, inline='always', **_BASE)
packet_kernel = njit(**{**_BASE, 'nogil': False})
"""A cached kernel that keeps the GIL: a short call per packet (or per small batch) on the
thread that takes the packets. Releasing the GIL there hands it to a busy background
thread (the detector's, while rotors are lost), and taking it back cost 10-20 us per
call against 1.6 us for the work (benchmarks/RESULTS.md, twenty-second session)."""


def drop_stale_cache(directory: str, modules: tuple[str, ...], mark_name: str) -> None:
    """Drop numba's on-disk cache of ``modules`` (in ``directory``) when any of them changed.

    numba keys a cached function on its own source file only, but a kernel
    that calls (or inlines) kernels of other modules compiles their code in;
    a stale cache would silently run old code after an edit of one of those.
    The sizes and times of the modules are kept in ``__pycache__/mark_name``.
    Best effort: errors (e.g. a read-only install) are ignored.
    """
    try:
        stamp = ';'.join(f'{m}:{st.st_mtime_ns}:{st.st_size}' for m, st in
                         ((m, os.stat(os.path.join(directory, m + '.py'))) for m in modules))
        cache = os.path.join(directory, '__pycache__')
        mark = os.path.join(cache, mark_name)
        if os.path.isfile(mark):
            with open(mark) as f:
                if f.read() == stamp:
                    return
        if os.path.isdir(cache):
            for name in os.listdir(cache):
                if name.endswith(('.nbi', '.nbc')) and name.split('.')[0] in modules:
                    os.remove(os.path.join(cache, name))
        os.makedirs(cache, exist_ok=True)
        with open(mark, 'w') as f:
            f.write(stamp)
    except OSError:
        pass
