#!/usr/bin/env bash
# The main job: set up, build, and measure with `coolbench run`. Without
# arguments that is the built-in GPT-2 small at batch 1, sequence 128: fp16 on
# GPU 0 when the CUDA runtime sees a GPU, else fp32 on the CPU backend (its
# fp16 kernels convert every element: GPT-2 small's width with 2 layers at
# 1x128 took 1.85 s in fp16 against 1.02 s in fp32 on a 2-core machine); the
# first line coolbench prints says which. Arguments go to coolbench run
# (--device cpu|N chooses).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/bin/coolbench run "$@"
