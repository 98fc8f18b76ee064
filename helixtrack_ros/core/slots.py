# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Slot tables: the layout of a flat state or parameter vector, declared once.

The numba kernels keep a tracker's state and parameters in small flat numpy
vectors and address them by module-level integer constants (numba freezes a
global int into the machine code: no lookup at run time). A :class:`Slots`
table hands out those indices in declaration order, so no index is written
by hand, and remembers how each slot is filled, so the packer of a vector
(parameters -> vector, or a fresh state) is the same declaration::

    _TP = Slots('tracker parameters')
    TP_KAPPA = _TP.slot('kappa')                          # TrackerParams.kappa
    TP_INV2SR2 = _TP.slot(lambda p, *_: 0.5 / p.sigma_ring ** 2)
    TP_LEN = _TP.close()
    tp = _TP.pack(params, rotor)                          # float64 vector of TP_LEN
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: how a slot is filled: a field name of the packer's first argument, a function of
#: all its arguments, a constant, or None (zero / left to the kernels)
Fill = str | Callable[..., Any] | float | int | None


class Slots:
    """The slots of one flat vector: indices given out in order, with their fills.

    Parameters
    ----------
    name : str
        What the vector holds (for error messages).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._fills: list[tuple[int, int, Fill]] = []
        self._names: tuple[str, ...] = ()
        self._length = 0
        self._closed = False

    def slot(self, fill: Fill = None, width: int = 1, name: str | tuple[str, ...] = '') -> int:
        """Declare the next ``width`` slots; returns the index of the first.

        ``fill`` (see :data:`Fill`) sets every one of them in :meth:`pack`;
        ``name`` names them (one name per slot) for :attr:`names`.
        """
        if self._closed:
            raise RuntimeError(f'{self.name}: slot declared after close()')
        if width < 1:
            raise ValueError(f'{self.name}: width must be >= 1')
        names = (name,) if isinstance(name, str) else tuple(name)
        if names != ('',) and len(names) != width:
            raise ValueError(f'{self.name}: one name per slot')
        start = self._length
        self._length += int(width)
        self._names += names if names != ('',) else ('',) * int(width)
        if fill is not None:
            self._fills.append((start, int(width), fill))
        return start

    def close(self) -> int:
        """End the declaration; returns the vector's length."""
        self._closed = True
        return self._length

    @property
    def names(self) -> tuple[str, ...]:
        """The name of every slot declared so far ('' where none was given)."""
        return self._names

    @property
    def length(self) -> int:
        """Slots declared so far (the vector's length once closed)."""
        return self._length

    def pack(self, *args: Any, dtype: type = np.float64) -> np.ndarray:
        """A new vector with every declared fill applied to ``args``; other slots 0."""
        if not self._closed:
            raise RuntimeError(f'{self.name}: pack() before close()')
        out = np.zeros(self._length, dtype=dtype)
        for start, width, fill in self._fills:
            if isinstance(fill, str):
                value = getattr(args[0], fill)
            elif callable(fill):
                value = fill(*args)
            else:
                value = fill
            out[start:start + width] = value
        return out
