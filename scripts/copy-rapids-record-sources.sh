#!/usr/bin/env bash
# Copy the real files the RAPIDS release record is built from into tests/data/rapids-record/.
# Run once, where mirrors of the repositories below exist (git clones with the release
# branches): MIRRORS=/path/with/<owner>+<name>/repo. The table is then rebuilt from the copies
# with `python scripts/record/rapids_record.py` (no network, no mirrors needed).
set -euo pipefail
MIRRORS=${MIRRORS:-/work/.mirror}
OUT=${OUT:-tests/data/rapids-record}
SOURCES="$OUT/SOURCES.tsv"
mkdir -p "$OUT"
: > "$SOURCES.new"

copy() {  # repo branch path
  local repo=$1 branch=$2 path=$3 short=${1#rapidsai/}
  local git="$MIRRORS/${repo/\//+}/repo"
  local rel=${branch#branch-}
  local commit
  commit=$(git -C "$git" rev-parse "$branch")
  mkdir -p "$OUT/$short/$rel/$(dirname "$path")"
  git -C "$git" show "$commit:$path" > "$OUT/$short/$rel/$path"
  printf '%s\t%s\t%s\t%s\t%s\n' "$short/$rel/$path" "$repo" "$branch" "$commit" "$path" >> "$SOURCES.new"
}

for v in 22.08 22.10 22.12 23.02 23.04 23.06 23.08 23.10 23.12 24.02 24.04; do
  for f in conda/recipes/versions.yaml conda/recipes/rapids/meta.yaml conda/recipes/rapids-xgboost/meta.yaml; do
    copy rapidsai/integration "branch-$v" "$f"
  done
done
# the build matrix (Python versions, CUDA versions) of the meta-packages
for v in 22.08 22.10 22.12 23.02 23.04; do copy rapidsai/integration "branch-$v" ci/axis/release.yaml; done
for v in 23.06 23.08 23.10 23.12 24.02 24.04; do copy rapidsai/integration "branch-$v" .github/workflows/build.yaml; done
for v in 23.06 23.08 23.10; do copy rapidsai/shared-action-workflows "branch-$v" .github/workflows/conda-python-build.yaml; done
for v in 23.12 24.02 24.04; do copy rapidsai/shared-workflows "branch-$v" .github/workflows/conda-python-build.yaml; done
# the glibc floor after versions.yaml stopped carrying sysroot_version (23.08)
for v in 23.08 23.10 23.12 24.02 24.04; do copy rapidsai/cudf "branch-$v" conda/recipes/cudf/conda_build_config.yaml; done
# the dask pin after it left versions.yaml (23.08): dask-cuda, then rapids-dask-dependency
for v in 23.08 23.10 23.12 24.02 24.04; do copy rapidsai/dask-cuda "branch-$v" pyproject.toml; done
for v in 23.12 24.02 24.04; do copy rapidsai/rapids-dask-dependency "branch-$v" conda/recipes/rapids-dask-dependency/meta.yaml; done
# ucx-py: dask-cuda's CI (22.08-22.12) and dependencies.yaml (23.02 on)
for v in 22.08 22.10 22.12; do copy rapidsai/dask-cuda "branch-$v" ci/gpu/build.sh; done
for v in 23.02 23.04 23.06 23.08 23.10 23.12 24.02 24.04; do copy rapidsai/dask-cuda "branch-$v" dependencies.yaml; done
# the PyPI part (pypi/: wheel METADATA of 24.06-26.10) is fetched by
# `python scripts/record/rapids_record.py --refresh`, not copied here
mv "$SOURCES.new" "$SOURCES"
