#!/bin/sh
# Prints the folder holding NVIDIA's nvml.h that guest/libnvml is built
# against: CUDA_HOME's include folder where the toolkit has it, else that of
# the PyPI package nvidia-nvml-dev (scripts/deps/pip-nvml.txt, installed by
# scripts/install-deps.sh). Prints nothing, and exits 1, when neither has it.
#   nvml-include.sh [CUDA_HOME]
cuda=${1:-${CUDA_HOME:-/usr/local/cuda}}
if [ -f "$cuda/include/nvml.h" ]; then
	echo "$cuda/include"
	exit 0
fi
${PYTHON:-python3} - <<'PY' 2>/dev/null
import importlib.util, os, sys
spec = importlib.util.find_spec("nvidia")
for p in (spec.submodule_search_locations if spec else []):
    for sub in ("cu13/include", "include"):
        d = os.path.join(p, sub)
        if os.path.isfile(os.path.join(d, "nvml.h")):
            print(d)
            sys.exit(0)
sys.exit(1)
PY
