"""The original report's scenario: compile an ONNX model, run it on CUDA,
hand the GPU back from inside the process, and run it again with the same
answer (docs/engine.md, "Example: run, release, run again").

    coolbench model add -o add.onnx
    PYTHONPATH=build/python python3 examples/add_release.py add.onnx
"""
import sys

import numpy as np

import coolbench


def main(path):
    device = "cuda:0" if coolbench.gpu_count() > 0 else None
    if device is None:
        print("no NVIDIA GPU visible: this example needs one (coolbench.gpu_count() == 0)")
        return 3
    session = coolbench.Session(path, device=device)
    rng = np.random.default_rng(0)
    feeds = {
        v.name: rng.standard_normal([d if isinstance(d, int) else 4 for d in v.shape]).astype(
            np.float32)
        for v in session.inputs
    }
    (before,) = session.run(None, feeds)
    print(f"ran {path} on {session.device}: output {before.shape} {before.dtype}")

    # Every device resource coolbench holds is freed and the primary context
    # reset: the GPU can idle while this process goes on.
    report = coolbench.release(0)
    print(f"released GPU 0: context reset {report['context_reset']}, "
          f"{report['bytes_freed']} bytes freed in {report['seconds'] * 1e3:.1f} ms")

    (after,) = session.run(None, feeds)  # the session re-acquires the GPU by itself
    same = np.array_equal(before, after)
    print("the same answer again" if same else "DIFFERENT answers after the release")
    return 0 if same else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
