#!/usr/bin/env bash
# One device call's work (the device machine; repo root = this checkout's copy).
# Usage: bash bench/gpu_session.sh OUTDIR [PART...]   PARTs: pytest (default), level2
# Dask, dask-cuda and UCX (ucxx, distributed-ucxx, libucx for CUDA 13) come as one unpacked
# site folder, .devsite/site.tar.xz (made here from the wheels with `pip install --target`).
set -u
dest=${1:?OUTDIR}; shift
parts=${*:-pytest}
mkdir -p "$dest" /tmp/site
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
[ -f .devsite/site.tar.xz ] && tar xJf .devsite/site.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
python3 -c 'import zstandard' 2>/dev/null ||
  sed -i 's/^import zstandard$/zstandard = None  # not installed here/' tests/support/condapkg.py
step() {  # step NAME LIMIT CMD...: its output in OUTDIR/NAME.txt and on stdout
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$dest/$name.txt" 2>&1
  local rc=$?
  tail -n 40 "$dest/$name.txt"
  printf '== %-10s rc=%-3s %4d s\n' "$name" "$rc" "$((SECONDS - t0))"
}
date -u +%FT%TZ
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
python3 -c 'import dask, distributed, dask_cuda, ucxx, distributed_ucxx, torch;
print("dask", dask.__version__, "dask_cuda", dask_cuda.__version__, "ucxx", ucxx.__version__, "torch", torch.__version__)' 2>&1 | tail -2
for part in $parts; do
  case $part in
    pytest)
      step pytest 330 python3 -m pytest -m gpu tests/gpu -q -rA -p no:cacheprovider --timeout 240 ;;
    tree)
      step tree 300 python3 -m pytest -m gpu tests/gpu/test_cluster_tree_gpu.py -q -rA -s \
        -p no:cacheprovider --timeout 240 ;;
    level2)
      step level2 250 python3 bench/level2_gpus.py ;;
  esac
done
