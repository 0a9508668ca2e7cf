#!/usr/bin/env python3
"""Reference tests for coolbench's own models, computed by onnxruntime.

For every model coolbench writes (`coolbench model ... -o FILE`), and for any
extra model files given with --model, this script

  1. checks the model with onnx.checker.check_model(full_check=True),
  2. draws seeded random inputs (normal floats, never all zeros; integer
     inputs that index a Gather, such as GPT-2's input_ids, drawn in range),
  3. runs onnxruntime's CPU provider on them,

and writes each case in the layout of ONNX's backend node tests, which the
conformance runner reads as its "reference" root:

    OUT/test_<name>/model.onnx
    OUT/test_<name>/test_data_set_0/input_<i>.pb, output_<i>.pb

Any failure (a model coolbench cannot write, a checker error, onnxruntime
refusing the model) exits 1, so the ctest fixture that runs this fails.

Usage: python make_reference_tests.py --coolbench build/bin/coolbench --out DIR
                                      [--model FILE.onnx ...] [--seed N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import traceback
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper


@dataclass
class model_spec:
    name: str                 # the case folder is test_<name>
    arguments: list[str]      # coolbench's arguments, without -o FILE
    needs: list[str] = field(default_factory=list)  # words the subcommand's --help must show


# The models coolbench builds. GPT-2 at small sizes keeps the cases fast while
# exercising every op of the real export (odd vocab and sequence lengths, more
# than one layer and head, so a transposed or misplaced weight shows).
BUILT_IN_MODELS = [
    model_spec("add", ["model", "add"]),
    model_spec("gpt2_l2_h64_v211_s16",
               ["model", "gpt2", "--layers", "2", "--hidden", "64", "--heads", "4",
                "--vocab", "211", "--seq", "16"]),
    model_spec("gpt2_l1_h32_v97_b2_s5",
               ["model", "gpt2", "--layers", "1", "--hidden", "32", "--heads", "2",
                "--vocab", "97", "--seq", "5", "--batch", "2"]),
    model_spec("gpt2_l3_h48_v50_s1",
               ["model", "gpt2", "--layers", "3", "--hidden", "48", "--heads", "3",
                "--vocab", "50", "--seq", "1"]),
    model_spec("gpt2_l2_h64_v211_s16_fp16",
               ["model", "gpt2", "--layers", "2", "--hidden", "64", "--heads", "4",
                "--vocab", "211", "--seq", "16", "--dtype", "fp16"],
               needs=["--dtype", "fp16"]),
]

# A symbolic dimension with no size recorded in the model's metadata
# (coolbench.<symbol>) gets this size.
DEFAULT_SYMBOL_SIZE = 2


class not_available(Exception):
    """The coolbench binary has no such model yet (e.g. before `model gpt2` lands)."""


def run_coolbench(coolbench: Path, arguments: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(coolbench), *arguments], capture_output=True, text=True,
                          check=False, timeout=300)


def write_model(coolbench: Path, spec: model_spec, path: Path) -> None:
    result = run_coolbench(coolbench, [*spec.arguments, "-o", str(path)])
    if result.returncode == 0:
        return
    text = result.stdout + result.stderr
    subcommand = spec.arguments[1]
    # CLI11's answer to a subcommand this binary does not have: the model is
    # still to come, not broken.
    if result.returncode == 2 and "not expected" in text and subcommand in text.split("expected", 1)[1]:
        raise not_available(f"this coolbench has no `model {subcommand}` yet")
    raise RuntimeError(f"`coolbench {' '.join(spec.arguments)} -o {path}` exited "
                       f"{result.returncode}:\n{text.strip()}")


def has_options(coolbench: Path, spec: model_spec) -> bool:
    if not spec.needs:
        return True
    help_text = run_coolbench(coolbench, [*spec.arguments[:2], "--help"]).stdout
    return all(word in help_text for word in spec.needs)


def symbol_sizes(model: onnx.ModelProto) -> dict[str, int]:
    sizes = {}
    for prop in model.metadata_props:
        if prop.key.startswith("coolbench.") and prop.value.isdigit():
            sizes[prop.key.removeprefix("coolbench.")] = int(prop.value)
    return sizes


def index_bound(model: onnx.ModelProto, input_name: str) -> int | None:
    """The exclusive upper bound of an integer input that a Gather uses as its
    indices: the size of the gathered initializer along the Gather's axis."""
    initializers = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == input_name:
            data = initializers.get(node.input[0])
            if data is None:
                continue
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            return int(data.dims[axis % len(data.dims)])
    return None


def make_inputs(model: onnx.ModelProto, rng: np.random.Generator) -> list[np.ndarray]:
    sizes = symbol_sizes(model)
    initializer_names = {t.name for t in model.graph.initializer}
    inputs = []
    for value in model.graph.input:
        if value.name in initializer_names:
            continue
        tensor_type = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else sizes.get(d.dim_param, DEFAULT_SYMBOL_SIZE)
                 for d in tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        if np.issubdtype(dtype, np.floating):
            array = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            array = rng.integers(0, 2, shape).astype(np.bool_)
        elif np.issubdtype(dtype, np.integer):
            bound = index_bound(model, value.name) or 16
            array = rng.integers(0, bound, shape).astype(dtype)
        else:
            raise RuntimeError(f"input '{value.name}' has a dtype this script cannot draw: {dtype}")
        inputs.append(array)
    return inputs


def write_case(name: str, model_path: Path, case_dir: Path, seed: int) -> None:
    # full_check also runs onnx's shape inference in strict mode.
    onnx.checker.check_model(str(model_path), full_check=True)
    model = onnx.load(str(model_path))
    # One generator per case, seeded by the run's seed and the case's name, so
    # adding a model does not change the others' data.
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    inputs = make_inputs(model, rng)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # the same sums in the same order on every machine
    session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    feed = {meta.name: array for meta, array in zip(session.get_inputs(), inputs)}
    outputs = session.run(None, feed)
    set_dir = case_dir / "test_data_set_0"
    set_dir.mkdir()
    for i, (meta, array) in enumerate(zip(session.get_inputs(), inputs)):
        (set_dir / f"input_{i}.pb").write_bytes(numpy_helper.from_array(array, meta.name).SerializeToString())
    for i, (meta, array) in enumerate(zip(session.get_outputs(), outputs)):
        (set_dir / f"output_{i}.pb").write_bytes(numpy_helper.from_array(array, meta.name).SerializeToString())
    shapes = ", ".join(f"{m.name} {list(a.shape)} {a.dtype}" for m, a in zip(session.get_inputs(), inputs))
    print(f"  test_{name}: checker ok; inputs {shapes}; {len(outputs)} output(s) from onnxruntime")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coolbench", type=Path, help="the coolbench binary (its `model` command)")
    parser.add_argument("--out", type=Path, required=True, help="folder to fill with test_* folders")
    parser.add_argument("--model", type=Path, action="append", default=[],
                        help="another .onnx file to include (repeatable)")
    parser.add_argument("--seed", type=int, default=2024, help="of the random inputs")
    args = parser.parse_args()
    if args.coolbench is None and not args.model:
        parser.error("give --coolbench, --model or both")

    # Stale cases of a model that is gone must not linger.
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    print(f"reference tests by onnxruntime {onnxruntime.__version__} (onnx {onnx.__version__}) in {args.out}")

    jobs = []  # (name, how to get the model file into place)
    if args.coolbench is not None:
        for spec in BUILT_IN_MODELS:
            jobs.append((spec.name, spec))
    for path in args.model:
        # A node test's file is always model.onnx; its folder names it.
        jobs.append((path.parent.name.removeprefix("test_") if path.stem == "model" else path.stem, path))

    failures, absent = [], []
    written = 0
    for name, source in jobs:
        case_dir = args.out / f"test_{name}"
        case_dir.mkdir()
        model_path = case_dir / "model.onnx"
        try:
            if isinstance(source, model_spec):
                if not has_options(args.coolbench, source):
                    raise not_available(f"`coolbench {' '.join(source.arguments[:2])}` has no "
                                        f"{' '.join(source.needs)}")
                write_model(args.coolbench, source, model_path)
            else:
                shutil.copyfile(source, model_path)
            write_case(name, model_path, case_dir, args.seed)
            written += 1
        except not_available as e:
            shutil.rmtree(case_dir)
            absent.append(f"{name}: {e}")
        except Exception:  # noqa: BLE001 - every failure is reported, then the script fails
            failures.append(f"test_{name}:\n{traceback.format_exc()}")

    for line in absent:
        print(f"  not yet: {line}")
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    print(f"{written} reference case(s) written, {len(absent)} not available yet, {len(failures)} failed")
    return 1 if failures or written == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
