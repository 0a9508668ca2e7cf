#!/usr/bin/env bash
# Stages what a build needs on a machine that can build but cannot install
# packages (the lent GPU machine) into .device-deps/ (git-ignored); CMake falls
# back to that folder (COOLBENCH_DEPS_DIR). Run scripts/setup.sh first.
# - the header-only dependencies and GoogleTest's sources, copied from this
#   machine's Debian packages;
# - the engine's libraries (libonnx, protobuf, OpenBLAS and the Fortran
#   runtime OpenBLAS needs) as Debian's .debs in .device-deps/debs, carried
#   compressed (OpenBLAS alone unpacks to ~36 MB) and unpacked on the machine
#   by scripts/device-check.sh into .device-deps/prefix (dpkg -x, never into /).
#   Debian 12's libraries need glibc 2.36, which the machine's newer one serves.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device-deps
mkdir -p .device-deps/include .device-deps/debs
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/fmt .device-deps/include/
cp -r /usr/src/googletest .device-deps/googletest
engine_debs=(libonnx1 libonnx-dev libonnxifi libprotobuf32 libprotobuf-lite32 libprotobuf-dev
  libopenblas0-pthread libgfortran5 libquadmath0)
# apt-get download writes into the current folder; _apt may not write there.
(cd .device-deps/debs && apt-get -q -o APT::Sandbox::User=root download "${engine_debs[@]}")
du -sh .device-deps .device-deps/debs
