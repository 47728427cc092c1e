"""Pickle files whose arrays are mapped, not copied, by the processes that read them.

A sweep's worker processes on one machine hand each other large pickles through files
(solver.sweeps: the perf model's feasible sets, ~40 MB per share on the default
instance, most of it numpy arrays; the candidate designs' parts; the shared exact
evaluations, solver.shared_evaluations). Read as bytes and unpickled, every such file
cost its reader two fresh copies (the bytes, then the arrays copied out of them), and
every fresh page a page fault: on this VM, whose host takes freed guest memory back,
a worker's candidate build paid ~0.9 s of kernel time for them.

Here the arrays go out of band (pickle protocol 5, `buffer_callback`) into the file
after the pickle's body, each aligned to ALIGNMENT bytes, and a reader maps the file
copy-on-write (`mmap.ACCESS_COPY`) and gives the unpickler views of it: the arrays are
the file's page-cache pages themselves, shared by every reader, and a write to one
copies only the page it touches. A mapping lives as long as any array made from it
(one small array keeps the whole file's pages); the file may be removed once read, and
it is never changed in place (`write` renames a whole new file over it). In Python 3.11
a mapping also holds a file descriptor open, so a process maps at most MAX_MAPPED files
at once and reads any further one into memory (as it does a file it cannot map).

Layout: MAGIC, then the body's length and the number of buffers (two little-endian
uint64), then each buffer's offset and length (two uint64 each), the body, and the
buffers at their offsets.
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
import tempfile
import weakref
from pathlib import Path
from typing import Any

from solver.forked import gc_paused

MAGIC = b"CPMAPPK1"
ALIGNMENT = 64
"""Offset alignment of each out-of-band buffer [bytes] (a cache line, which numpy's
SIMD loops prefer)."""
MAX_MAPPED = 256
"""Most files a process keeps mapped at once (each holds a file descriptor: a worker of
the default sweep keeps ~20-30, the shares, part and feasible sets it took from others)."""
_COUNTS = struct.Struct("<QQ")
_live: list[int] = [0]
"""Files mapped by this process now."""


def _aligned(offset: int) -> int:
    return -(-offset // ALIGNMENT) * ALIGNMENT


def write(path: str | Path, data: Any) -> None:
    """Pickle `data` to `path` with its contiguous arrays out of band (read them back
    with `read`), through a temporary file beside it renamed over it (never half a file,
    and what a reader has mapped is never changed). Pickled with the garbage collector
    paused (solver.forked.gc_paused). OSError when the folder fails (nothing is left)."""
    buffers: list[pickle.PickleBuffer] = []
    with gc_paused():
        body = pickle.dumps(data, protocol=5, buffer_callback=buffers.append)
    raw = [buffer.raw() for buffer in buffers]
    offset = _aligned(len(MAGIC) + _COUNTS.size * (1 + len(raw)) + len(body))
    table = []
    for view in raw:
        table.append((offset, view.nbytes))
        offset = _aligned(offset + view.nbytes)
    fd, tmp = tempfile.mkstemp(dir=Path(path).parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC + _COUNTS.pack(len(body), len(raw))
                         + b"".join(_COUNTS.pack(*entry) for entry in table))
            handle.write(body)
            for (start, _), view in zip(table, raw, strict=True):
                handle.write(bytes(start - handle.tell()))
                handle.write(view)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: str | Path) -> Any:
    """The data that `write` pickled to `path`, its arrays views of the file mapped
    copy-on-write (or of a copy in memory, past MAX_MAPPED or where mapping fails).
    Unpickled with the garbage collector paused. ValueError when the file is empty,
    truncated or not in this format; OSError when it cannot be read."""
    with open(path, "rb") as handle:
        whole = _mapped(handle) or bytearray(handle.read())
    view = memoryview(whole)
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


def _mapped(handle: Any) -> mmap.mmap | None:
    """The file of `handle` mapped copy-on-write, counted in `_live` while it lives; None
    when MAX_MAPPED are live, or it cannot be mapped (empty, out of descriptors or
    mappings, a file system without mmap)."""
    if _live[0] >= MAX_MAPPED:
        return None
    try:
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    except (OSError, ValueError):
        return None
    _live[0] += 1
    weakref.finalize(mapping, _released)
    return mapping


def _released() -> None:
    _live[0] -= 1
