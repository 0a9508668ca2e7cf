"""coolbench: latency on NVIDIA GPUs that does not depend on the GPU's temperature,
and a safe in-process release of the GPU (docs/python.md).

The compiled module (_coolbench, pybind11) holds everything; this package
re-exports it under the name ``coolbench`` and adds ``python -m coolbench``,
which runs the coolbench command installed beside it.
"""
from . import _coolbench
from ._coolbench import *  # noqa: F401,F403  (the module's public names, listed in __all__)

__version__ = _coolbench.__version__
__doc__ = _coolbench.__doc__
__all__ = [name for name in dir(_coolbench) if not name.startswith("_")]

# Types and functions say they are coolbench's, as before the package existed
# (repr, pickling, help() and tracebacks show coolbench.Result, not the inner module).
for _name in __all__:
    _object = getattr(_coolbench, _name)
    if getattr(_object, "__module__", None) == _coolbench.__name__:
        try:
            _object.__module__ = __name__
        except (AttributeError, TypeError):
            pass
del _name, _object
