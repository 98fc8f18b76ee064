# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""How a decoding kernel writes one event: the one store shared by every decoder.

Inlined by numba into each decoder's word loop; the index is cast to
unsigned so that the store needs no negative-index wraparound.
"""

import numpy as np

from helixtrack_ros.core.jit import kernel_inline


@kernel_inline
def _put_event(out_t, out_x, out_y, out_p, k, t, x, y, p):
    """Write the event (t, x, y, p) at index k of the output arrays."""
    i = np.uint64(k)
    out_t[i] = t
    out_x[i] = x
    out_y[i] = y
    out_p[i] = p
