"""TVM's ``device_api.cuda_reset``, served by coolbench's safe release (docs/tvm.md).

Importing this module registers the global function ``device_api.cuda_reset``
in TVM's function registry (TVM-FFI), so code written for the call TVM never
merged works unchanged::

    import coolbench.tvm
    report = tvm.get_global_func("device_api.cuda_reset")(0)

The function is ``coolbench.release(device, force=...)``: it returns the
release report as a dict and raises ``coolbench.ReleaseRefused`` when the
release is refused (a TVM array still alive on the GPU, another thread's work),
``coolbench.NotAvailable`` without a driver or GPU. Those exceptions cross TVM's
FFI as themselves, so TVM users catch them by type. Registering again replaces
the entry with the same function, so importing twice or calling ``register()``
again is harmless.

A library TVM compiled for CUDA cannot run again after the release from the
same loaded image: its host code caches each kernel's launcher in the
library's own globals on first use, and the launcher caches the CUfunction of
the context it first ran in, with no way to drop either. dlopen hands a second
``tvm.runtime.load_module`` of the same path the same image, so the kernels
launch with handles of the destroyed context (CUDA_ERROR_INVALID_HANDLE).
``coolbench.tvm.load_module(path)`` loads a library the way the next use after
a release needs: from a private copy once coolbench has released a GPU since
the path was last loaded (through ``device_api.cuda_reset``, ``coolbench.release``
or a ``measure(..., release="reset")`` between contexts), so the image, its
globals and its kernels are new.
"""
import os
import shutil
import tempfile

from . import _coolbench

GLOBAL_NAME = "device_api.cuda_reset"

try:
    import tvm_ffi
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(
        "coolbench.tvm needs TVM's FFI (the apache-tvm-ffi package, installed with apache-tvm): "
        "pip install apache-tvm==0.27.0.post1"
    ) from error


_loaded = {}  # real path of a library -> (release count, the file loaded) at its last load
_copies = None  # the folder of the private copies, removed at exit


def cuda_reset(device_id=0, force=False):
    """Release the CUDA context of ``device_id`` as coolbench.release does; the report as a dict."""
    return _coolbench.release(int(device_id), force=bool(force))


def _release_count():
    """The releases coolbench has done in this process, over every GPU."""
    return sum(_coolbench.device_state(d)["releases"] for d in range(_coolbench.gpu_count()))


def load_module(path):
    """``tvm.runtime.load_module(path)``, from a fresh copy of the library when coolbench has
    released a GPU since ``path`` was last loaded (the module docstring says why a reload of
    the same image cannot run after a release)."""
    global _copies
    import tvm

    real = os.path.realpath(os.fspath(path))
    releases = _release_count()
    seen, target = _loaded.get(real, (releases, real))
    if seen != releases:  # the image loaded before holds kernels of a released context
        if _copies is None:
            _copies = tempfile.TemporaryDirectory(prefix="coolbench-tvm-")
        stem, ext = os.path.splitext(os.path.basename(real))
        target = os.path.join(_copies.name, f"{stem}-after-release-{releases}{ext}")
        shutil.copyfile(real, target)
    _loaded[real] = (releases, target)
    return tvm.runtime.load_module(target)


# The exceptions the release raises. TVM-FFI carries an exception across the
# call by its class name and turns names it does not know into RuntimeError;
# registered, they come back to TVM's caller as coolbench's own classes.
_RELEASE_ERRORS = ("ReleaseRefused", "NotAvailable", "InvalidArgument", "Timeout")


def register():
    """Register ``device_api.cuda_reset`` in TVM's global registry (again: harmless); returns the name."""
    for name in _RELEASE_ERRORS:
        tvm_ffi.register_error(name, getattr(_coolbench, name))
    tvm_ffi.register_global_func(GLOBAL_NAME, cuda_reset, override=True)
    return GLOBAL_NAME


register()
