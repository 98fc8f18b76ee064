# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The numba compile options, defined once for every kernel in the package.

Every kernel is cached on disk (start-up loads machine code instead of
compiling) and releases the GIL (rotor kernels run on worker threads). The
variants differ in two choices that change results, so each kernel names the
one it was validated with:

- ``error_model='numpy'``: a division by zero gives inf/NaN instead of
  raising; used where the kernel checks the result itself.
- ``fastmath={'contract'}``: lets LLVM fuse multiply-adds (FMA), faster and
  at most one rounding different; used by the hot per-event maths.
- ``inline='always'``: a small helper inlined into its caller by numba, so a
  kernel can be split into named steps at no cost.
"""

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
