#!/usr/bin/env bash
# Issue 30's device runs (the device machine; repo root = this checkout's copy).
# Usage: bash bench/gpu_issue30.sh PART OUTDIR (OUTDIR gets one PART.tgz of every log and
# report; the device tool brings back few files)
#   PART host:   NVLink counters against nvidia-smi, the fault matrix and cluster timing
#                (bench/gpu_faults.py), the GEMM against bare torch.matmul (multi-GPU kind)
#   PART pytest: python3 -m pytest -m gpu tests/gpu (any kind)
#   PART timing: verify cluster against the bare process alone
#   PART gemm:   the GEMM bench alone
# Dask comes as wheels in ../.whl or .whl (../shared/tools/device-wheels core).
set -u
part=${1:?PART}; dest=${2:?OUTDIR}
out=/tmp/i30-$part
mkdir -p "$out" "$dest"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
for whl in .whl ../.whl; do
  if [ -d "$whl" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site "$whl"/*.whl || exit 1
    break
  fi
done
export PYTHONPATH=/tmp/site:$PWD
step() {  # step NAME LIMIT CMD...: its output in OUTDIR/NAME.txt and on stdout
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee "$out/$name.txt"
  printf '== %-10s rc=%-3s %4d s\n' "$name" "${PIPESTATUS[0]}" "$((SECONDS - t0))"
}
date -u +%FT%TZ
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
case $part in
  host)
    step nvlink 40 bash -c 'nvidia-smi nvlink -e -i 0 | head -40; python3 bench/nvlink_counters.py'
    step faults 420 python3 bench/gpu_faults.py "$out/faults" --timing-repeats 2
    step gemm 110 python3 bench/gpu_gemm.py --seconds 2 --repeats 2
    step nvlink2 20 bash -c 'nvidia-smi nvlink -e -i 0 | head -40'
    ;;
  pytest)
    # tests/conftest imports tests/support/condapkg, which imports zstandard (the device image
    # lacks it; no GPU test uses it): this copy of the tree imports it lazily
    python3 -c 'import zstandard' 2>/dev/null ||
      sed -i 's/^import zstandard$/zstandard = None  # not installed here/' tests/support/condapkg.py
    step pytest 560 python3 -m pytest -m gpu tests/gpu -q -rA -p no:cacheprovider --timeout 300
    ;;
  timing)
    # BASELINE_TGZ: an envcheck tree (git archive REV envcheck | gzip) timed beside this one
    base=""
    if [ -n "${BASELINE_TGZ:-}" ]; then
      base=/tmp/i30-baseline; mkdir -p "$base"; tar xzf "$BASELINE_TGZ" -C "$base"
    fi
    step timing 560 python3 bench/gpu_faults.py "$out/timing" --only timing \
      --timing-repeats "${REPEATS:-2}" --baseline "$base"
    ;;
  gemm)
    step gemm 200 python3 bench/gpu_gemm.py --seconds 2 --repeats 3
    ;;
esac
tar czf "$dest/$part.tgz" -C /tmp "i30-$part"
