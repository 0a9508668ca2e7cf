#!/usr/bin/env bash
# Makes .venv-export/: PyTorch, torchvision, transformers, onnx, onnxruntime and
# onnxscript (the dynamo exporter's), pinned in tools/requirements-export.txt,
# for tools/export_models.py, which writes the test models in tests/data/models.
# Only needed to make those models again: the tests read the committed files,
# and neither scripts/setup.sh nor CI installs PyTorch (about 4 GB with the
# CUDA libraries PyPI's torch wheel depends on; PyPI has no CPU-only wheel).
# Like setup.sh, pip runs only when the pinned set changed since the last install.
#   scripts/setup-export.sh && .venv-export/bin/python tools/export_models.py tests/data/models
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-export"
requirements="$root/tools/requirements-export.txt"
installed="$venv/requirements-export.installed"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup-export: creating $venv"
  /usr/bin/python3 -m venv "$venv"
fi
if ! cmp -s "$requirements" "$installed"; then
  echo "setup-export: installing tools/requirements-export.txt into .venv-export (large: PyTorch)"
  rm -f "$installed"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$requirements"
  cp "$requirements" "$installed"
fi
