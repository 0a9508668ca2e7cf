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


# A callable in fresh processes (processes=N): coolbench.processes, through `coolbench exec`.
from . import processes as _processes  # noqa: E402
from .processes import ProcessesResult  # noqa: E402,F401

_measure_in_this_process = _coolbench.measure


def measure(workload, feeds=None, *, processes=None, **kwargs):
    if processes is None:
        return _measure_in_this_process(workload, feeds, **kwargs)
    if kwargs.get("devices") is not None:
        raise TypeError("processes= measures on one GPU; devices= measures several in this "
                        "process: give one of them (docs/python.md)")
    if feeds is not None or not isinstance(workload, str):
        raise TypeError("processes= takes a callable by name, 'package.module:function' or "
                        "'script.py:function', and no feeds (docs/python.md)")
    return _processes.measure_in_processes(workload, processes, **kwargs)


measure.__doc__ = (_measure_in_this_process.__doc__ or "") + """

processes=N: measure a callable named 'package.module:function' or
'script.py:function' in N fresh processes or more, under `coolbench exec`
(each context a fresh process); returns a ProcessesResult whose figure is the
mean of the processes' medians with the few-level CI across them
(docs/python.md, "In fresh processes")."""
__all__ += ["ProcessesResult"]
