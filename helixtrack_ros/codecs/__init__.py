# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Event encodings (EVT 3.0, 2.0, 2.1, libcaer, libcaer_cmp, mono), registry, time mapping.

Use :func:`make_decoder` with an EventPacket's ``encoding``, ``width`` and
``height``; keep one decoder per stream (decoders carry state across packets).
"""

from helixtrack_ros.codecs.evt2 import Evt2Decoder
from helixtrack_ros.codecs.evt3 import Evt3Decoder
from helixtrack_ros.codecs.evt21 import Evt21Decoder
from helixtrack_ros.codecs.libcaer import LibcaerCmpDecoder, LibcaerDecoder
from helixtrack_ros.codecs.mono import MonoDecoder
from helixtrack_ros.codecs.types import COUNTER_NAMES, DecodedPacket, UnsupportedEncodingError

_DECODERS = {
    'evt3': Evt3Decoder,
    'evt2': Evt2Decoder,
    'evt21': Evt21Decoder,
    'libcaer': LibcaerDecoder,
    'libcaer_cmp': LibcaerCmpDecoder,
    'mono': MonoDecoder,
}

#: Type of every decoder :func:`make_decoder` returns.
AnyDecoder = (Evt3Decoder | Evt2Decoder | Evt21Decoder | LibcaerDecoder | LibcaerCmpDecoder
              | MonoDecoder)

#: Encodings that :func:`make_decoder` accepts.
SUPPORTED_ENCODINGS: tuple[str, ...] = tuple(_DECODERS)


def make_decoder(encoding: str, width: int, height: int) -> AnyDecoder:
    """Return a new stateful decoder for one event stream.

    Parameters
    ----------
    encoding : str
        The EventPacket ``encoding`` field, e.g. ``'evt3'`` (case-insensitive).
    width, height : int
        Sensor size in pixels (EventPacket ``width``/``height``).

    Returns
    -------
    AnyDecoder
        An object with ``decode(payload, is_bigendian=False, time_base=0,
        out=None)``, ``counters``, ``reset()``, ``resync()``, ``snapshot()``
        and ``restore()``.

    Raises
    ------
    UnsupportedEncodingError
        If the encoding is not one of :data:`SUPPORTED_ENCODINGS`.
    ValueError
        If the geometry is invalid.
    """
    key = str(encoding).strip().lower()
    if key not in _DECODERS:
        raise UnsupportedEncodingError(
            f'unsupported event encoding {encoding!r}; supported: '
            f'{", ".join(SUPPORTED_ENCODINGS)}')
    return _DECODERS[key](width, height)


__all__ = ['COUNTER_NAMES', 'AnyDecoder', 'DecodedPacket', 'Evt2Decoder', 'Evt3Decoder',
           'LibcaerCmpDecoder', 'LibcaerDecoder', 'MonoDecoder', 'SUPPORTED_ENCODINGS',
           'UnsupportedEncodingError', 'make_decoder']
