#!/usr/bin/env bash
# Session 57, call 1 (an H100 came): does Vulkan come up on the GPU machine
# now? The device tool's notes say headless Vulkan ran on these machines with the loader
# carried in .gl/ (apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0
# libgles2) and NVIDIA's ICD named; session 25 found "Could not get 'vkCreateInstance'" and no
# /dev/nvidia-modeset. bench/gpu-env.sh unpacks .gl/ and names the ICD. Carry gpuab/ (a
# cortiq.gz built with --features gpu,cuda) and .gl.
# Output (out/wgpu.txt): no libvulkan on the host, /dev/nvidia0, nvidiactl, nvidia-uvm(-tools),
# nvidia-caps, no /dev/dri, modules nvidia and nvidia_uvm (no nvidia_modeset, as in session
# 25), and yet wgpu came up: "0: NVIDIA H100 80GB HBM3 (Discrete, Vulkan)", matrix units
# (16 x 16 x 16 f16 cooperative matrices), subgroups.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
echo "libvulkan before: $(ldconfig -p | grep -c libvulkan)"; ls /dev/nvidia* /dev/dri 2>&1 | tr "\n" " "; echo
grep -E "^nvidia" /proc/modules | cut -d' ' -f1 | tr "\n" " "; echo
. bench/device-start.sh
VK_LOADER_DEBUG=error,warn CMF_GPU=wgpu timeout 120 ./cortiq gpu > $OUT/wgpu.txt 2>&1; echo "cortiq gpu (wgpu) rc $?"
grep -v "^$" $OUT/wgpu.txt | head -30 | cut -c1-240
echo "end at $((SECONDS-start)) s"
