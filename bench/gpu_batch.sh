#!/usr/bin/env bash
# The batched GPU run behind BENCHMARKS.md's device numbers (device machine, e.g. nvidia-h200-x2).
# Needs the Dask/UCX wheels of ../shared/tools/device-wheels (core ucx) in .whl/.
# Usage (repo root, on the GPU machine): bash bench/gpu_batch.sh OUTDIR [STEP...]
# Steps: topo compile node level2 nonvml job1 job2 jobshared jobbench cluster pytest gemm level1
# facts_bench device_bench (default: all; job2, jobshared and jobbench need 2 GPUs).
set -u
out=${1:?OUTDIR}; shift
steps=${*:-topo compile node level2 nonvml job1 job2 jobshared jobbench cluster pytest gemm level1 facts_bench device_bench}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
whl=${WHL:-.whl}  # WHL=.whlx for the core + xgboost set (UCX and xgboost do not fit in one carry)
if [ -d "$whl" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$whl"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
step() {  # step NAME TIMEOUT CMD...: one log per step, a hang costs only that step
  local name=$1 limit=$2; shift 2
  case " $steps " in *" $name "*) ;; *) return ;; esac
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.txt" 2>&1
  printf '%-14s rc=%-3s %4d s\n' "$name" "$?" "$((SECONDS - t0))" | tee -a "$out/steps.txt"
}
date -u +%FT%TZ >>"$out/steps.txt"
step topo 30 bash -c 'nvidia-smi; nvidia-smi topo -m; python3 -c "import torch,cupy;print(torch.__version__, cupy.__version__)"'
# bytecode as pip leaves an installed package (the machine may set PYTHONDONTWRITEBYTECODE,
# and a source tree or a --no-compile install would be compiled again on every start)
step compile 120 bash -c 'echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE-unset}";
  nv=$(python3 -c "import pynvml; print(pynvml.__file__)"); echo "pynvml: $nv";
  python3 -m compileall -q envcheck /tmp/site "$nv"; echo "rc=$?";
  python3 -X importtime -c "import pynvml" 2>&1 | tail -1'
n=$(nvidia-smi -L | wc -l)
step node 120 python3 -m envcheck verify node --expect-gpus "$n" --json "$out/node.json"
step level2 150 python3 -m envcheck verify node --level 2 --expect-gpus "$n" --json "$out/level2.json"
# NVML made unimportable: the GPUs must still be seen through /proc and the GPU checks fail
mkdir -p /tmp/nonvml && printf 'raise ImportError("pynvml hidden for this run")\n' >/tmp/nonvml/pynvml.py
step nonvml 120 env PYTHONPATH="/tmp/nonvml:${PYTHONPATH:-}" python3 -m envcheck verify node --json "$out/nonvml.json"
run_job() { python3 -m torch.distributed.run --standalone --nproc-per-node "$1" -m envcheck verify job --timeout 60 --json "$out/$2.json"; }
step job1 90 bash -c "$(declare -f run_job); out=$out; CUDA_VISIBLE_DEVICES=0 run_job 1 job1"
step job2 90 bash -c "$(declare -f run_job); out=$out; run_job 2 job2"
step jobshared 90 bash -c "$(declare -f run_job); out=$out; CUDA_VISIBLE_DEVICES=0 run_job 2 jobshared"
step jobbench 120 bash -c "python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m envcheck verify job --bench --timeout 60 --json $out/jobbench.json"
step cluster 300 python3 -m envcheck verify cluster --bench --json "$out/cluster.json" --junit "$out/cluster.xml"
step pytest 540 python3 -m pytest -m gpu tests/gpu -p no:cacheprovider -rA -q --durations=10
step gemm 240 python3 bench/gpu_gemm.py
step level1 180 python3 bench/node_level1.py --repeats 5
step facts_bench 120 python3 bench/facts.py --repeat 50 --cold 3
step device_bench 300 python3 bench/device_bench.py --repeats 4 --allreduce 256MiB,1GiB
cat "$out/steps.txt"
