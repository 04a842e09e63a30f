#!/usr/bin/env bash
# The GPU machine preamble (shared/DEVICE.md): unpack the shipped Vulkan loader, point the
# loader at NVIDIA's ICD, put CUDA's libraries on the path. Source it: `. bench/gpu-env.sh`.
if ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
