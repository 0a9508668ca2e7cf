#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed `onnx` package to disk.

The PyPI wheels of onnx no longer carry the node tests' data files
(onnx/backend/test/data/node is absent from 1.23's wheel), only the Python
cases that produce them (onnx/backend/test/case/node). This script runs those
cases and writes each one in the layout of Debian's libonnx-testdata, which
coolbench's conformance runner reads:

    OUT/test_<name>/model.onnx
    OUT/test_<name>/test_data_set_<i>/input_<j>.pb, output_<j>.pb

onnx seeds numpy's generator before each case, so the same onnx version
writes the same data. A stamp file records the onnx version; when it matches,
nothing is rewritten (the conformance_pypi ctest fixture runs this each time).

Usage: python export_node_tests.py --out DIR
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path

import onnx
from onnx import numpy_helper


def serialize(value, value_info: onnx.ValueInfoProto) -> bytes:
    """One input or output as the bytes of its .pb file.

    Tensors become TensorProto; sequences, maps and optionals get onnx's own
    containers (coolbench skips those cases as an unsupported type, but the
    files are written so the set is complete)."""
    kind = value_info.type.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if kind == "map_type":
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    if kind == "optional_type":
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    if isinstance(value, onnx.TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


def write_case(case, out: Path) -> None:
    case_dir = out / case.name
    case_dir.mkdir(parents=True)
    (case_dir / "model.onnx").write_bytes(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = case_dir / f"test_data_set_{i}"
        set_dir.mkdir()
        for j, value in enumerate(inputs):
            (set_dir / f"input_{j}.pb").write_bytes(serialize(value, graph.input[j]))
        for j, value in enumerate(outputs):
            (set_dir / f"output_{j}.pb").write_bytes(serialize(value, graph.output[j]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder to fill with test_* folders")
    args = parser.parse_args()

    stamp = args.out / "onnx-version.txt"
    if stamp.is_file() and stamp.read_text().strip() == onnx.__version__:
        count = sum(1 for p in args.out.iterdir() if p.name.startswith("test_"))
        print(f"{args.out}: the node tests of onnx {onnx.__version__} are already there ({count})")
        return 0

    # Imported here: collecting the cases runs every case's reference code,
    # which takes some seconds and prints numpy's warnings for the inf/nan cases.
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases()
    if not cases:
        print(f"error: onnx {onnx.__version__} yielded no node test cases", file=sys.stderr)
        return 1

    # A partial folder from an interrupted run must not pass for a complete one.
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    for case in cases:
        write_case(case, args.out)
    stamp.write_text(onnx.__version__ + "\n")
    print(f"{args.out}: wrote {len(cases)} node tests of onnx {onnx.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
