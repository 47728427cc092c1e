"""Pickle files whose arrays are mapped (solver.mapped_pickle): what a sweep's workers
hand each other on one machine reads back equal, its arrays views of the file (no copy),
aligned, writable without changing the file, never changed by a later write; past the
cap on mappings, or where mapping fails, read into memory; a file that is not one is
named."""

from __future__ import annotations

import dataclasses
import errno
import gc
import mmap

import numpy as np
import pytest

from solver import mapped_pickle
from solver.api import default_evaluators, feasible_share
from solver.loading import DEFAULT_INSTANCE, load_instance
from solver.prepare import prepare

MMAP = mmap.mmap  # the class, whatever a test patches


def mapped(array: np.ndarray) -> bool:
    """Whether `array`'s memory is a view of a mapped file."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, MMAP)


def test_data_reads_back_equal_with_its_arrays_mapped_aligned_and_writable(tmp_path):
    data = {"ints": np.arange(1000, dtype=np.int64), "odd": np.arange(7, dtype=np.int8),
            "grid": np.arange(12.0).reshape(3, 4), "transposed": np.arange(12).reshape(3, 4).T,
            "empty": np.zeros(0), "objects": np.array(["a", None], dtype=object),
            "nested": [("x", 1.5, {"y": np.ones(3, dtype=np.float32)})]}
    path = tmp_path / "data.pickle"
    mapped_pickle.write(path, data)
    back = mapped_pickle.read(path)
    path.unlink()  # the mapping outlives the file
    assert back.keys() == data.keys()
    for key in ("ints", "odd", "grid", "transposed", "empty", "objects"):
        assert back[key].dtype == data[key].dtype and back[key].shape == data[key].shape
        assert np.array_equal(back[key], data[key])
    assert back["nested"][0][:2] == ("x", 1.5)
    assert np.array_equal(back["nested"][0][2]["y"], np.ones(3, dtype=np.float32))
    for key in ("ints", "odd", "grid"):  # contiguous arrays: views of the file, no copy
        assert mapped(back[key]) and back[key].ctypes.data % mapped_pickle.ALIGNMENT == 0
    assert not mapped(back["objects"])  # pickled in the body
    back["ints"][0] = -1  # writable, copy-on-write: the file keeps what was written
    mapped_pickle.write(path, data)
    first, second = mapped_pickle.read(path), mapped_pickle.read(path)
    first["ints"][:] = 7
    assert second["ints"][0] == 0 and np.array_equal(mapped_pickle.read(path)["ints"],
                                                       data["ints"])


def test_feasible_sets_read_back_equal_and_mapped(tmp_path):
    """The perf model's feasible sets, the bulk of what workers hand each other."""
    inputs = prepare(load_instance(DEFAULT_INSTANCE))
    sets = feasible_share(inputs, default_evaluators(inputs), 0, 12)
    path = tmp_path / "feasible.pickle"
    mapped_pickle.write(path, sets)
    back = mapped_pickle.read(path)
    assert sets and back.keys() == sets.keys()
    for key, candidates in sets.items():
        for field in dataclasses.fields(candidates):
            assert same(getattr(candidates, field.name), getattr(back[key], field.name))
        assert mapped(back[key].kept) and all(mapped(v) for v in back[key].rows.values())


def same(a, b) -> bool:
    """Equal, arrays element by element, dicts and sequences item by item."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k])
                                                                     for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return a == b


@pytest.mark.parametrize("content", [b"", b"CPMAPPK1", b"not a mapped pickle at all",
                                     "truncated"])
def test_a_file_that_is_not_a_mapped_pickle_is_named(tmp_path, content):
    path = tmp_path / "bad.pickle"
    if content == "truncated":
        mapped_pickle.write(path, {"a": np.arange(100_000)})
        content = path.read_bytes()[:-1000]
    path.write_bytes(content)
    with pytest.raises(ValueError, match="bad.pickle"):
        mapped_pickle.read(path)


def test_a_later_write_leaves_what_readers_mapped_as_it_was(tmp_path):
    path = tmp_path / "share.pickle"
    mapped_pickle.write(path, {"a": np.arange(5)})
    before = mapped_pickle.read(path)
    mapped_pickle.write(path, {"a": np.arange(5) * 10})  # a task run again, say
    assert list(before["a"]) == [0, 1, 2, 3, 4] and mapped(before["a"])
    assert list(mapped_pickle.read(path)["a"]) == [0, 10, 20, 30, 40]
    assert [p.name for p in tmp_path.iterdir()] == ["share.pickle"]  # no temporary left


def test_past_the_cap_or_where_mapping_fails_a_file_is_read_into_memory(tmp_path,
                                                                        monkeypatch):
    path = tmp_path / "set.pickle"
    mapped_pickle.write(path, {"a": np.arange(1000)})
    gc.collect()
    live = mapped_pickle._live[0]
    monkeypatch.setattr(mapped_pickle, "MAX_MAPPED", live + 2)
    kept = [mapped_pickle.read(path) for _ in range(3)]
    assert [mapped(k["a"]) for k in kept] == [True, True, False]
    assert all(np.array_equal(k["a"], np.arange(1000)) for k in kept)
    kept[2]["a"][0] = -1  # a copy, writable
    assert mapped_pickle._live[0] == live + 2
    del kept
    gc.collect()
    assert mapped_pickle._live[0] == live  # released with their arrays

    def out_of_descriptors(*args, **kwargs):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(mapped_pickle.mmap, "mmap", out_of_descriptors)
    back = mapped_pickle.read(path)
    assert np.array_equal(back["a"], np.arange(1000)) and not mapped(back["a"])
