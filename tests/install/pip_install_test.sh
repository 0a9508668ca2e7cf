#!/usr/bin/env bash
# The Python package as a user gets it: `pip wheel` the checkout (scikit-build-
# core over the project's CMake build, engine and CUDA off to keep it short),
# install the wheel into a fresh venv of the same Python with no index (no
# network, no compiler involved), and from outside the checkout import it and
# run `python -m coolbench --help` and `coolbench --version`. The package's,
# the command's and the C ABI's versions must all be VERSION.
# Usage: pip_install_test.sh PYTHON SOURCE_DIR WORK_DIR VERSION LIBCOOLBENCH
# PYTHON has the pinned build requirements (scripts/setup.sh's .venv).
set -euo pipefail
python=$1 source=$2 work=$3 version=$4 libcoolbench=$5
fail() { echo "FAILED: $*" >&2; exit 1; }

if ! "$python" -c "import scikit_build_core, pybind11" 2>/dev/null; then
  echo "SKIPPED: $python has no scikit-build-core or pybind11 (scripts/setup.sh installs them into .venv)"
  exit 0
fi

# The wheel; the build folder is kept between runs (only what changed is rebuilt).
rm -rf "$work/dist" "$work/venv"
mkdir -p "$work"
start=$SECONDS
"$python" -m pip wheel --quiet --no-build-isolation --no-deps --disable-pip-version-check -w "$work/dist" \
  --config-settings=build-dir="$work/build" --config-settings=cmake.define.COOLBENCH_ENGINE=OFF --config-settings=cmake.define.COOLBENCH_CUDA=OFF \
  "$source" >"$work/wheel.log" 2>&1 || { tail -40 "$work/wheel.log"; fail "pip wheel"; }
wheels=("$work"/dist/coolbench-"$version"-*.whl)
[[ -f "${wheels[0]}" ]] || fail "no coolbench-$version wheel in $work/dist: $(ls "$work/dist")"
wheel=${wheels[0]}
echo "built $(basename "$wheel") in $((SECONDS - start)) s"
contents=$("$python" -m zipfile -l "$wheel")
for member in "coolbench/__init__.py" "coolbench/__main__.py" "coolbench/_coolbench" "coolbench/bin/coolbench" \
  "entry_points.txt"; do
  grep -q "$member" <<<"$contents" || fail "the wheel has no $member"
done

# A fresh venv of the same interpreter, and the wheel from the file alone.
base=$("$python" -c "import sys; print(getattr(sys, '_base_executable', sys.executable))")
"$base" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-index --no-deps --disable-pip-version-check "$wheel"

cd "$work"  # not the checkout: the installed package must be what is imported
venv="$work/venv"
module_version=$("$venv/bin/python" -c "
import coolbench, sys
assert coolbench.__file__.startswith(sys.prefix), coolbench.__file__
assert coolbench.Result.__module__ == 'coolbench', coolbench.Result.__module__
assert issubclass(coolbench.InvalidArgument, coolbench.Error)
print(coolbench.__version__)")
[[ "$module_version" == "$version" ]] || fail "coolbench.__version__ is '$module_version', expected $version"
help=$("$venv/bin/python" -m coolbench --help) || fail "python -m coolbench --help exited with $?"
grep -q "wait-cool" <<<"$help" || fail "python -m coolbench --help does not list the commands: $help"
command_version=$("$venv/bin/coolbench" --version)
[[ "$command_version" == *"$version"* ]] || fail "coolbench --version says '$command_version', expected $version"
metadata_version=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('coolbench'))")
[[ "$metadata_version" == "$version" ]] || fail "the package's metadata says $metadata_version, expected $version"
c_abi_version=$("$venv/bin/python" -c "
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.coolbench_version.restype = ctypes.c_char_p
print(lib.coolbench_version().decode())" "$libcoolbench")
[[ "$c_abi_version" == "$version" ]] || fail "libcoolbench's coolbench_version() is $c_abi_version, expected $version"
echo "coolbench $version: module, python -m coolbench, the coolbench command, metadata and C ABI agree"
