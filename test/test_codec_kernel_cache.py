# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The stale-cache guard of the codec kernels covers every codec module with kernels."""

from pathlib import Path

from helixtrack_ros.codecs import counter_slots


def test_every_codec_kernel_module_is_guarded():
    """Kernels compile in constants and inlined helpers of other codec modules: numba's
    cache would keep old code after an edit of one of those unless it is dropped."""
    folder = Path(counter_slots.__file__).parent
    with_kernels = {p.stem for p in folder.glob('*.py')
                    if 'from helixtrack_ros.core.jit import' in p.read_text()}
    assert with_kernels and with_kernels <= set(counter_slots._KERNEL_MODULES)
    assert (folder / '__pycache__' / 'helixtrack_codecs.stamp').is_file()
