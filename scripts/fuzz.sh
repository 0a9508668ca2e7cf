#!/usr/bin/env bash
# Fuzzes the ONNX loader (tests/fuzz/onnx_loader_fuzz.cpp) with libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer for a fixed time and seed.
# Usage: scripts/fuzz.sh [SECONDS (default 60)] [BUILD_DIR (default build)]
# BUILD_DIR is where the conformance roots' generated data lives
# (conformance/pypi, conformance/reference); their models and Debian's node
# tests seed the corpus. Builds into build-fuzz/ with clang (only the engine
# and the target). Exits non-zero on any finding, which it leaves in
# build-fuzz/findings/ (replay one: build-fuzz/tests/fuzz/onnx_loader_fuzz FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${2:-build}"

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCOOLBENCH_FUZZ=ON -DCOOLBENCH_CUDA=OFF -DCOOLBENCH_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target onnx_loader_fuzz

# A fresh corpus each run, seeded with every conformance model, so a run
# depends only on the sources, the seed and the time (no corpus is committed).
seeds=build-fuzz/seeds corpus=build-fuzz/corpus findings=build-fuzz/findings
rm -rf "$seeds" "$corpus" "$findings"
mkdir -p "$seeds" "$corpus" "$findings"
for root in /usr/share/libonnx-testdata/data/node "$build/conformance/pypi" "$build/conformance/reference" \
  tests/data/models; do
  [[ -d "$root" ]] || continue
  for model in "$root"/test_*/model.onnx; do
    [[ -f "$model" ]] || continue
    case_dir="${model%/model.onnx}"
    cp "$model" "$seeds/${root##*/}-${case_dir##*/}.onnx"
  done
done
echo "fuzz: $(find "$seeds" -type f | wc -l) seed models; ${seconds} s"

# -timeout: one input running over 10 s is a finding (a hang); rss_limit_mb:
# so is using over 2 GB (the loader must refuse absurd sizes, not try them).
status=0
build-fuzz/tests/fuzz/onnx_loader_fuzz -max_total_time="$seconds" -seed=1 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" \
  "$corpus" "$seeds" >build-fuzz/fuzz.log 2>&1 || status=$?
grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|Done )" build-fuzz/fuzz.log || true
if ((status != 0)); then
  echo "fuzz: FINDING (exit $status); the log's end:"
  tail -n 60 build-fuzz/fuzz.log
  ls -l "$findings"
fi
exit "$status"
