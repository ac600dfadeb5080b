#!/usr/bin/env bash
# Regenerate the shipped RAPIDS recipes from the release record (`envcheck recipe new`).
# tests/unit/test_recipe_new.py fails when a shipped recipe differs from what its own header's
# command produces; rerun this after changing the record or `recipe new`.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m envcheck recipe new --rapids 22.08 --cuda 11.5 --os el7 --python 3.9 \
  --with xgboost,ucx,torch,dask-sql,xarray-spatial,skorch \
  --exclude cuml,cugraph --channels rapidsai,nvidia,conda-forge \
  --pip dask-pytorch-ddp==0.2.2 --name rapids-22.08-el7 \
  --description "Python 3.9, RAPIDS 22.08 (dask-cuda, dask-cudf, cuspatial, cuxfilter, cusignal, cucim), xgboost with Dask support, dask-sql, xarray-spatial, skorch, UCX + ucx-py, PyTorch with CUDA 11 and dask-pytorch-ddp, for RHEL 7 / CentOS 7 GPU servers (A100x8 on RHEL 7.5, RTX3090x4 on CentOS 7, drivers for CUDA 11.5)." \
  --target "A100x8, RHEL 7.5" --target "RTX3090x4, CentOS 7" \
  --exclude-reason "cuml and cugraph could not be installed together with the rest of this environment on these servers (the conflict that motivated envcheck); add one back only when envcheck build solves with it, and it names the clashing entries when not" \
  --out recipes/rapids-22.08-el7.yaml
python -m envcheck recipe new --rapids 24.04 --cuda 11.8 --os el7 --python 3.10 --toolkit 11.8 \
  --with xgboost,ucx,torch,dask-sql,xarray-spatial,skorch \
  --pip dask-pytorch-ddp==0.2.2 --name rapids-24.04-el7 \
  --description "Python 3.10, RAPIDS 24.04 (cudf, dask-cudf, dask-cuda, cuml, cugraph, cuspatial, cuxfilter, cucim), the newest RAPIDS for glibc 2.17: xgboost with Dask support, dask-sql, xarray-spatial, skorch, UCX + ucx-py, PyTorch with CUDA 11.8 and dask-pytorch-ddp, for RHEL 7 / CentOS 7 GPU servers." \
  --target "A100x8, RHEL 7.5" --target "RTX3090x4, CentOS 7" \
  --out recipes/rapids-24.04-el7.yaml
python -m envcheck recipe new --rapids 26.10 --cuda 12.8 --os el8 --python 3.12 \
  --libs cudf,dask-cudf,dask-cuda,cuml,cugraph --with xgboost,ucx,torch \
  --channels rapidsai,conda-forge --name rapids-26.10-cuda12 \
  --description "Python 3.12, RAPIDS 26.10 (cudf, dask-cudf, dask-cuda, cuml, cugraph), xgboost with Dask support, UCX through distributed-ucxx, PyTorch with CUDA 12, for glibc >= 2.28 hosts (RHEL / Rocky / Alma 8 and later, Ubuntu 20.04 and later)." \
  --out recipes/rapids-26.10-cuda12.yaml
