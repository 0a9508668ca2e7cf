"""The original report's call, inside TVM (docs/tvm.md).

Runs the report's two-input Add (1x2x3x3 float32) compiled by TVM for CUDA,
drops TVM's arrays, calls ``tvm.get_global_func("device_api.cuda_reset")(0)``
(registered by ``import coolbench.tvm``), checks the process left NVML's list,
then loads the module again and runs it again for the same answer. Then, with a
TVM array still alive, the call is refused and TVM carries on.

    python examples/tvm_cuda_reset.py --library build/tvm-runtime/add_cuda.so

The library comes from scripts/stage-tvm-runtime.sh (compiled on a machine with
the full apache-tvm). This script needs only TVM's runtime: with
TVM_USE_RUNTIME_LIB=1 and the staged runtime-only set, ``from tvm import relax``
is unavailable, so it uses tvm.runtime.load_module and tvm.runtime.vm.
"""
import argparse
import gc
import os
import sys

import numpy as np


def load_tvm_runtime(runtime_dir):
    """The runtime-only TVM of the stage folder: its libraries loaded first, then the package."""
    if runtime_dir:
        import ctypes

        os.environ.setdefault("TVM_USE_RUNTIME_LIB", "1")
        sys.path.insert(0, runtime_dir)
        lib = os.path.join(runtime_dir, "tvm", "lib")
        # in dependency order: TVM's runtime needs libtvm_ffi.so, its CUDA part libcudart
        for path in (os.path.join(runtime_dir, "tvm_ffi", "lib", "libtvm_ffi.so"),
                     os.path.join(lib, "libcudart.so.13"), os.path.join(lib, "libtvm_runtime.so"),
                     os.path.join(lib, "libtvm_runtime_extra.so"), os.path.join(lib, "libtvm_runtime_cuda.so")):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    import tvm
    import tvm.runtime.vm  # noqa: F401  (the full package imports it through relax; the runtime alone does not)

    return tvm


def run_add(tvm, library, a, b):
    """Load the compiled Add, run it on GPU 0, return the answer as numpy (no TVM array kept).
    coolbench.tvm.load_module loads a fresh copy after a release: the loaded image's kernels
    hold handles of the context they first ran in (docs/tvm.md)."""
    import coolbench.tvm

    executable = coolbench.tvm.load_module(library)
    device = tvm.cuda(0)
    vm = tvm.runtime.vm.VirtualMachine(executable, device)
    out = vm["main"](tvm.runtime.tensor(a, device), tvm.runtime.tensor(b, device))
    return out.numpy()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", required=True, help="the Add compiled for CUDA (stage-tvm-runtime.sh)")
    parser.add_argument("--runtime-dir", help="the staged runtime-only TVM (omit to use an installed apache-tvm)")
    args = parser.parse_args(argv)

    tvm = load_tvm_runtime(args.runtime_dir)
    import coolbench
    import coolbench.tvm  # noqa: F401  (registers device_api.cuda_reset)

    rng = np.random.default_rng(20)
    a = rng.standard_normal((1, 2, 3, 3), dtype=np.float32)
    b = rng.standard_normal((1, 2, 3, 3), dtype=np.float32)

    first = run_add(tvm, args.library, a, b)
    np.testing.assert_array_equal(first, a + b)
    print("1. the Add ran on the GPU: right answer")

    gc.collect()  # TVM's arrays and the VM dropped
    # The Relax VM's pooled allocator keeps freed blocks on the GPU; they are TVM's
    # memory still held, which the release would rightly refuse. Hand them back first.
    tvm.get_global_func("vm.builtin.memory_manager.clear")()
    cuda_reset = tvm.get_global_func("device_api.cuda_reset")
    report = cuda_reset(0)
    print("2. device_api.cuda_reset(0):", report)
    if not report["released"] or report["process_listed_after"] is not False:
        raise SystemExit("FAIL: the release did not take the process off NVML's list")
    if coolbench.device_state(0)["context_active"]:
        raise SystemExit("FAIL: coolbench still reports a context after the release")
    print("   the process left NVML's list; the context is gone")
    second = run_add(tvm, args.library, a, b)
    np.testing.assert_array_equal(second, first)
    print("3. loaded again, ran again: the same answer")

    device = tvm.cuda(0)
    kept = tvm.runtime.tensor(a, device)  # a TVM array still alive on the GPU
    try:
        cuda_reset(0)
    except coolbench.ReleaseRefused as refused:
        print("4. refused with a TVM array alive:", refused)
    else:
        raise SystemExit("FAIL: the release went ahead with a live TVM array")
    np.testing.assert_array_equal(kept.numpy(), a)
    third = run_add(tvm, args.library, a, b)
    np.testing.assert_array_equal(third, first)
    print("5. TVM carried on: the array intact, the Add ran again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
