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
"""
from . import _coolbench

GLOBAL_NAME = "device_api.cuda_reset"

try:
    import tvm_ffi
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(
        "coolbench.tvm needs TVM's FFI (the apache-tvm-ffi package, installed with apache-tvm): "
        "pip install apache-tvm==0.27.0.post1"
    ) from error


def cuda_reset(device_id=0, force=False):
    """Release the CUDA context of ``device_id`` as coolbench.release does; the report as a dict."""
    return _coolbench.release(int(device_id), force=bool(force))


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
