#!/usr/bin/env bash
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# Check docker_horovod's GPU detection on a real NVIDIA host (no Docker or network needed):
# records what the driver reports, then runs tests/gpu/detect.yml against this host (the count, and
# docker_horovod_gpu_ids - the site's horovod_gpu_ids - with the first index and one past the last).
#   tests/gpu/run.sh [OUTPUT_DIR]      (default: ./gpu-check)
# Needs python3 with ansible-core; where it lacks it, WHEELS=dir installs ansible-core's wheels
# from dir into a private directory first. The count CUDA reports comes from PyTorch when it is
# importable, else from nvidia-smi's own query (a different interface than `nvidia-smi -L`).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$PWD/gpu-check}
mkdir -p "$out"

if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu-check-site "$WHEELS"/*.whl
  export PYTHONPATH=/tmp/gpu-check-site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/gpu-check-site/bin:$PATH
fi

nvidia-smi -L > "$out/nvidia-smi-L.txt"
{
  echo "# date: $(date -u +%FT%TZ)"
  echo "# nvidia-smi -L"; cat "$out/nvidia-smi-L.txt"
  echo "# nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "# lspci -n -d 10de:"; lspci -n -d 10de: 2>&1 || true
} | tee "$out/gpu-facts.txt"

expected=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null \
  || nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "# CUDA device count: $expected" | tee -a "$out/gpu-facts.txt"

collections=$(mktemp -d)
mkdir -p "$collections/ansible_collections/multinode"
ln -s "$repo" "$collections/ansible_collections/multinode/horovod"
ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=0 \
  python3 -m ansible playbook -i localhost, -c local -e "gpu_check_expected=$expected" \
  -e "ansible_python_interpreter=$(command -v python3)" \
  "$repo/tests/gpu/detect.yml" 2>&1 | tee "$out/detect.log"
