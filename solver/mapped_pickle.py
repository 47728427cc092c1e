"""Pickle files whose arrays are mapped, not copied, by the processes that read them.

A sweep's worker processes on one machine hand each other large pickles through files
(solver.sweeps: the perf model's feasible sets, ~40 MB per share on the default
instance, most of it numpy arrays; the candidate designs' parts). Read as bytes and
unpickled, every such file cost its reader two fresh copies (the bytes, then the arrays
copied out of them), and every fresh page a page fault: on a virtual machine whose host
takes freed guest memory back (this VM: ~10 us per 4 KiB page when both cores fault at
once), the exchange of the feasible sets took ~0.3 s of kernel time per worker.

Here the arrays go out of band (pickle protocol 5, `buffer_callback`) into the file
after the pickle's body, each aligned to ALIGNMENT bytes, and a reader maps the file
copy-on-write (`mmap.ACCESS_COPY`) and gives the unpickler views of it: the arrays are
the file's page-cache pages themselves, shared by every reader, and stay writable (a
write copies only the page it touches). The mapping lives as long as any array made
from it; the file may be removed once read.

Layout: MAGIC, then the body's length and the number of buffers (two little-endian
uint64), then each buffer's offset and length (two uint64 each), the body, and the
buffers at their offsets.
"""

from __future__ import annotations

import mmap
import pickle
import struct
from pathlib import Path
from typing import Any

from solver.forked import gc_paused

MAGIC = b"CPMAPPK1"
ALIGNMENT = 64
"""Offset alignment of each out-of-band buffer [bytes] (a cache line, which numpy's
SIMD loops prefer)."""
_COUNTS = struct.Struct("<QQ")


def _aligned(offset: int) -> int:
    return -(-offset // ALIGNMENT) * ALIGNMENT


def write(path: str | Path, data: Any) -> None:
    """Pickle `data` to `path` with its contiguous arrays out of band (read them back
    with `read`). Pickled with the garbage collector paused (solver.forked.gc_paused)."""
    buffers: list[pickle.PickleBuffer] = []
    with gc_paused():
        body = pickle.dumps(data, protocol=5, buffer_callback=buffers.append)
    raw = [buffer.raw() for buffer in buffers]
    offset = _aligned(len(MAGIC) + _COUNTS.size * (1 + len(raw)) + len(body))
    table = []
    for view in raw:
        table.append((offset, view.nbytes))
        offset = _aligned(offset + view.nbytes)
    with open(path, "wb") as handle:
        handle.write(MAGIC + _COUNTS.pack(len(body), len(raw))
                     + b"".join(_COUNTS.pack(*entry) for entry in table))
        handle.write(body)
        for (start, _), view in zip(table, raw, strict=True):
            handle.write(bytes(start - handle.tell()))
            handle.write(view)


def read(path: str | Path) -> Any:
    """The data that `write` pickled to `path`, its arrays views of the file mapped
    copy-on-write. Unpickled with the garbage collector paused. ValueError when the
    file is not such a pickle (empty, truncated, another format)."""
    with open(path, "rb") as handle:
        try:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        except ValueError:  # an empty file cannot be mapped
            raise ValueError(f"{path}: not a mapped pickle (empty)") from None
    view = memoryview(mapped)
    head = len(MAGIC) + _COUNTS.size
    if len(view) < head or view[:len(MAGIC)] != MAGIC:
        raise ValueError(f"{path}: not a mapped pickle")
    body_length, count = _COUNTS.unpack(view[len(MAGIC):head])
    body_start = head + _COUNTS.size * count
    if body_start + body_length > len(view):
        raise ValueError(f"{path}: a truncated mapped pickle")
    table = [_COUNTS.unpack(view[head + _COUNTS.size * i:head + _COUNTS.size * (i + 1)])
             for i in range(count)]
    if any(start < body_start + body_length or start + length > len(view)
           for start, length in table):
        raise ValueError(f"{path}: a truncated mapped pickle")
    with gc_paused():
        return pickle.loads(view[body_start:body_start + body_length],
                            buffers=[view[start:start + length] for start, length in table])
