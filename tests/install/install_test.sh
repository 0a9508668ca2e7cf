#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then use what was installed as an
# outside project would: the files and the SONAME, the exported symbols (the C
# ABI only, versioned), a CMake project with find_package(coolbench CONFIG)
# (a C program on coolbench::c_api, a C++ one on coolbench::coolbench), and a
# C program compiled with pkg-config's flags. Each program runs.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR VERSION ABI_VERSION LIBDIR
set -euo pipefail
build=$1 source=$2 work=$3 version=$4 abi=$5 libdir=$6
prefix="$work/prefix"
fail() { echo "FAILED: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for file in bin/coolbench "$libdir/libcoolbench.so" "$libdir/libcoolbench.so.$abi" "$libdir/libcoolbench.so.$version" \
  include/coolbench/c_api.h include/coolbench/core.hpp "$libdir/cmake/coolbench/coolbenchConfig.cmake" \
  "$libdir/cmake/coolbench/coolbenchConfigVersion.cmake" "$libdir/pkgconfig/coolbench.pc"; do
  [[ -e "$prefix/$file" ]] || fail "$file was not installed"
done
echo "installed into $prefix: $(find "$prefix" -type f | wc -l) files"

library="$prefix/$libdir/libcoolbench.so.$version"
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ "$soname" == "libcoolbench.so.$abi" ]] || fail "SONAME is '$soname', expected libcoolbench.so.$abi"
# Defined dynamic symbols: the version node itself, and coolbench_* functions in it.
symbols=$(nm -D --defined-only "$library" | awk '{print $3}')
stray=$(grep -v -e "^COOLBENCH_$abi\$" -e "^coolbench_[a-z_]*@@COOLBENCH_$abi\$" <<<"$symbols" || true)
[[ -z "$stray" ]] || fail "libcoolbench.so exports more than the versioned C ABI: $(head -5 <<<"$stray" | tr '\n' ' ')"
count=$(grep -c "@@COOLBENCH_$abi" <<<"$symbols")
((count >= 6)) || fail "only $count versioned coolbench_* symbols"
echo "SONAME $soname; $count symbols, all coolbench_*@@COOLBENCH_$abi"

command_version=$("$prefix/bin/coolbench" --version)
[[ "$command_version" == *"$version"* ]] || fail "coolbench --version says '$command_version', expected $version"

# find_package(coolbench CONFIG), from a project of its own.
cmake -S "$source/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer-configure.log" || { cat "$work/consumer-configure.log"; fail "consumer configure"; }
cmake --build "$work/consumer" >"$work/consumer-build.log" || { cat "$work/consumer-build.log"; fail "consumer build"; }
"$work/consumer/release_c" "$version"
"$work/consumer/layers_cxx" "$version"
readelf -V "$work/consumer/release_c" | grep -q "Name: COOLBENCH_$abi" ||
  fail "release_c does not record the symbol version COOLBENCH_$abi"
readelf -d "$work/consumer/release_c" | grep -q "NEEDED.*\[libcoolbench.so.$abi\]" ||
  fail "release_c does not need libcoolbench.so.$abi"

# pkg-config, with the prefix worked out from the .pc file's own place.
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pc_version=$(pkg-config --modversion coolbench)
[[ "$pc_version" == "$version" ]] || fail "pkg-config --modversion coolbench is '$pc_version', expected $version"
read -r -a flags <<<"$(pkg-config --cflags --libs coolbench)"
"${CC:-cc}" -std=c99 -Wall -Wextra -Werror "$source/tests/install/consumer/release_c.c" "${flags[@]}" -o "$work/release_c_pkgconfig"
LD_LIBRARY_PATH="$prefix/$libdir" "$work/release_c_pkgconfig" "$version"
echo "find_package and pkg-config consumers built and ran against $version"
