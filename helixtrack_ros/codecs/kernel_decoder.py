# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The part every kernel-backed stream decoder (EVT 2.0, libcaer) shares.

A subclass names its numba kernel, the size of its words and how many events
one word can hold; this class keeps the stream state and the cumulative
counters, reuses the output buffers between packets (fresh memory per packet
costs page faults), decodes long payloads in chunks, and returns exactly
sized copies or views into the caller's :class:`EventBuffer`.

Every kernel has one signature::

    kernel(words, new_packet, odd_bytes, time_base_us, width, height, state,
           counters, out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id) -> (k, kt)

``new_packet`` is 1 on the first chunk of a packet (0 on the others) and
``time_base_us`` is the packet's ``time_base`` in whole microseconds (encodings
that carry their own time ignore it).
"""

import numpy as np

from helixtrack_ros.codecs.types import (
    COUNTER_NAMES,
    DecodedPacket,
    check_geometry,
    payload_as_uint8,
)
from helixtrack_ros.core.events import EventArrays, EventBuffer

# shared trigger outputs of packets without triggers (read-only, zero length)
_NO_TRIG_T = np.empty(0, np.int64)
_NO_TRIG_U8 = np.empty(0, np.uint8)
_NO_TRIG_T.flags.writeable = False
_NO_TRIG_U8.flags.writeable = False


class KernelDecoder:
    """Stateful decoder of one stream, driven by a subclass's numba kernel.

    Subclasses set ``encoding``, ``MAX_SIZE``, ``EVENTS_PER_WORD``,
    ``TRIGGERS`` (whether the encoding has trigger events), ``USES_TIME_BASE``
    (whether event times are relative to the packet's ``time_base``),
    ``_KERNEL_FLAGS`` (arguments after the output arrays, e.g. a word width,
    for a kernel shared by encodings), and implement :meth:`_kernel`,
    :meth:`_new_state`, :meth:`_words` and :meth:`resync`.

    Not thread-safe (it reuses its output buffers): one decoder per stream
    and thread. The kernels release the GIL.

    Parameters
    ----------
    width, height : int
        Sensor size in pixels; events outside are dropped and counted.

    Examples
    --------
    >>> dec = Evt3Decoder(1280, 720)
    >>> pkt = dec.decode(msg.events)            # doctest: +SKIP
    >>> pkt.events.t_us, dec.counters['events']  # doctest: +SKIP
    """

    encoding = ''
    MAX_SIZE = 2048
    EVENTS_PER_WORD = 1
    TRIGGERS = False
    USES_TIME_BASE = False
    _KERNEL_FLAGS: tuple = ()
    _CHUNK_WORDS = 1 << 18  # longer payloads are decoded in chunks (bounds the scratch)

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = check_geometry(width, height, self.MAX_SIZE)
        self._state = self._new_state()
        self._counters = np.zeros(len(COUNTER_NAMES), np.int64)
        self._scratch: tuple = ()
        self._capacity = -1  # words the scratch buffers can take

    # ------------------------------------------------------------ subclass hooks
    @staticmethod
    def _kernel(*args):  # pragma: no cover - replaced by every subclass
        raise NotImplementedError

    def _new_state(self) -> np.ndarray:
        raise NotImplementedError

    def _words(self, buf: np.ndarray, is_bigendian: bool) -> np.ndarray:
        """The whole words of a uint8 payload, native order, aligned."""
        raise NotImplementedError

    def resync(self) -> None:
        """Packets of this stream were lost (see the subclass)."""
        raise NotImplementedError

    # ------------------------------------------------------------ common API
    def reset(self) -> None:
        """Forget the stream state and zero the counters (start of a new stream)."""
        self._state = self._new_state()
        self._counters[:] = 0

    def snapshot(self) -> np.ndarray:
        """Return a copy of the stream state."""
        return self._state.copy()

    def restore(self, snapshot: np.ndarray) -> None:
        """Return to a state taken by :meth:`snapshot` (counters are kept).

        Used to drop a corrupt packet whose words would otherwise poison the
        time of every later packet.
        """
        self._state[:] = snapshot

    def counts(self) -> np.ndarray:
        """A copy of the cumulative counters, in the order of ``COUNTER_NAMES``."""
        return self._counters.copy()

    def counts_since(self, before: np.ndarray) -> list[int]:
        """The counters' growth since :meth:`counts` gave ``before``, as Python ints."""
        return (self._counters - before).tolist()

    @property
    def counters(self) -> dict[str, int]:
        """Cumulative counters since construction or :meth:`reset`."""
        return {name: int(v)
                for name, v in zip(COUNTER_NAMES, self._counters, strict=True)}

    def decode(self, payload: 'bytes | np.ndarray', is_bigendian: bool = False,
               time_base: int = 0, out: EventBuffer | None = None) -> DecodedPacket:
        """Decode the payload of one EventPacket.

        Parameters
        ----------
        payload : bytes or numpy.ndarray
            The packet's ``events`` bytes (uint8 array or bytes-like).
        is_bigendian : bool
            True if the words are big-endian.
        time_base : int
            The packet's ``time_base`` [ns]; ignored by encodings that carry
            their own time.
        out : EventBuffer, optional
            Where to put the events (they are then views into it); default:
            arrays of their own.

        Returns
        -------
        DecodedPacket
            Events and trigger events of this packet.

        Raises
        ------
        TypeError
            If the payload is not bytes-like or a uint8 array.
        ValueError
            If a used ``time_base`` is outside 0..2**63-1.
        """
        tb_us = checked_time_base(time_base) // 1000 if self.USES_TIME_BASE else 0
        buf = payload_as_uint8(payload)
        words = self._words(buf, bool(is_bigendian))
        n = words.shape[0]
        odd = buf.shape[0] - words.itemsize * n
        if n <= self._CHUNK_WORDS:  # the usual case: one kernel call
            return self._decode_words(words, 1, odd, tb_us, out)
        c = self._CHUNK_WORDS
        parts = [self._decode_words(words[s:s + c], int(s == 0), odd * (s == 0), tb_us, None)
                 for s in range(0, n, c)]
        return DecodedPacket(EventArrays.concatenate([q.events for q in parts]),
                             *(np.concatenate([getattr(q, f) for q in parts])
                               for f in ('trig_t_us', 'trig_value', 'trig_id')))

    def _ensure_scratch(self, n_words: int) -> tuple:
        # reused output buffers; pages that are never written cost nothing
        if n_words > self._capacity:
            cap = max(n_words, min(2 * self._capacity, self._CHUNK_WORDS), 4096)
            m = self.EVENTS_PER_WORD * cap
            nt = cap if self.TRIGGERS else 0
            self._scratch = (np.empty(m, np.int64), np.empty(m, np.uint16),
                             np.empty(m, np.uint16), np.empty(m, np.uint8),
                             np.empty(nt, np.int64), np.empty(nt, np.uint8),
                             np.empty(nt, np.uint8))
            self._capacity = cap
        return self._scratch

    def _decode_words(self, words: np.ndarray, new_packet: int, odd: int, tb_us: int,
                      out: EventBuffer | None) -> DecodedPacket:
        scratch = self._ensure_scratch(words.shape[0])
        m = self.EVENTS_PER_WORD * words.shape[0]
        room = out.free_arrays(m) if out is not None else None
        args = (words, new_packet, odd, tb_us, self.width, self.height, self._state,
                self._counters)
        if room is not None:  # straight into the caller's buffer
            k, kt = self._kernel(*args, *room, *scratch[4:], *self._KERNEL_FLAGS)
            ev = out.commit(k)
        else:
            k, kt = self._kernel(*args, *scratch, *self._KERNEL_FLAGS)
            t, x, y, p = scratch[:4]
            ev = (out.put(t[:k], x[:k], y[:k], p[:k]) if out is not None
                  else EventArrays(t[:k].copy(), x[:k].copy(), y[:k].copy(), p[:k].copy()))
        if kt == 0:
            return DecodedPacket(ev, _NO_TRIG_T, _NO_TRIG_U8, _NO_TRIG_U8)
        tt, tv, tid = scratch[4:]
        return DecodedPacket(ev, tt[:kt].copy(), tv[:kt].copy(), tid[:kt].copy())


def checked_time_base(time_base: int) -> int:
    """A packet's ``time_base`` [ns] as an int; ValueError outside 0..2**63-1."""
    time_base = int(time_base)
    if not 0 <= time_base < 1 << 63:
        raise ValueError(f'time_base must be in 0..2**63-1 ns, got {time_base}')
    return time_base


def native_words(buf: np.ndarray, dtype: str, is_bigendian: bool) -> np.ndarray:
    """Return the whole ``dtype`` words (e.g. ``'u4'``) of a uint8 payload, native order.

    A view when the payload is aligned and in native order, else a copy.
    """
    size = np.dtype(dtype).itemsize
    n = (buf.shape[0] // size) * size
    words = buf[:n].view(('>' if is_bigendian else '<') + dtype)
    if not words.dtype.isnative or not words.flags.aligned:
        words = words.astype(np.dtype(dtype).newbyteorder('='))
    return words
