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

copy() {  # repo branch path [folder commit]: a commit of the branch other than its head
  local repo=$1 branch=$2 path=$3 short=${1#rapidsai/}
  local git="$MIRRORS/${repo/\//+}/repo"
  local rel=${4:-${branch#branch-}}
  local commit
  commit=$(git -C "$git" rev-parse "${5:-$branch}^{commit}")
  mkdir -p "$OUT/$short/$rel/$(dirname "$path")"
  git -C "$git" show "$commit:$path" > "$OUT/$short/$rel/$path"
  printf '%s\t%s\t%s\t%s\t%s\n' "$short/$rel/$path" "$repo" "$branch" "$commit" "$path" >> "$SOURCES.new"
}

for v in 22.08 22.10 22.12 23.02 23.04 23.06 23.08 23.10 23.12 24.02 24.04; do
  for f in conda/recipes/versions.yaml conda/recipes/rapids/meta.yaml conda/recipes/rapids-xgboost/meta.yaml; do
    copy rapidsai/integration "branch-$v" "$f"
  done
done
# 23.04.00 as released, before the 23.04.01 hotfix moved xgboost to 1.7.5 (2f82774)
for f in conda/recipes/versions.yaml conda/recipes/rapids/meta.yaml \
  conda/recipes/rapids-xgboost/meta.yaml ci/axis/release.yaml; do
  copy rapidsai/integration branch-23.04 "$f" 23.04.00 507dd02cc8702babbf5d218114a56c5fa3565fac
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
# pandas: cudf's conda recipe run requirements (every release)
for v in 22.08 22.10 22.12 23.02 23.04 23.06 23.08 23.10 23.12 24.02 24.04; do
  copy rapidsai/cudf "branch-$v" conda/recipes/cudf/meta.yaml
done
# ucx-py: cuml's conda recipe (the version its CPU build exports); ucx: pyraft 22.08, which cuml needs
for v in 22.08 22.10 22.12; do
  copy rapidsai/cuml "branch-$v" conda/recipes/cuml/meta.yaml
  copy rapidsai/cuml "branch-$v" ci/cpu/build.sh
done
copy rapidsai/raft branch-22.08 conda/recipes/pyraft/meta.yaml
copy rapidsai/raft branch-22.08 conda/recipes/pyraft/conda_build_config.yaml
# the oldest CUDA a release supports: cudf's README, "CUDA/GPU requirements" (11.2+ from 23.02)
for v in 22.08 22.10 22.12 23.02 23.04 23.06 23.08 23.10 23.12 24.02 24.04; do
  copy rapidsai/cudf "branch-$v" README.md
done
# RAPIDS docs (rapidsai/docs is too large to mirror whole): files copied at the commit named in
# SOURCES.tsv, byte for byte (their sizes checked against the stored copies): support notice 54
# (CUDA >= 12.2 from 25.12) and the platform-support table
#   docs/main/_notices/rsn0054.md        rapidsai/docs@e4841960d7587a364fbbb2e52bd23f32fc033871
#   docs/main/_data/platform_support.yml rapidsai/docs@92e811eb92b63bbe79247378c9dad3030f675bd3
#   docs/main/_notices/rsn0037.md        rapidsai/docs@be2bc0985ccb29aa0e37be97e1d72aa582594d18
# cudf's conda sysroot after 24.04 (c_stdlib_version: 2.17 through 24.12, 2.28 from 25.02)
for v in 24.06 24.08 24.10 24.12 25.02; do
  copy rapidsai/cudf "branch-$v" conda/recipes/cudf/conda_build_config.yaml
done
# release tags (v24.06.00 ...: what was released) of the PyPI-era releases' conda side:
# cudf's conda run requirements (numpy < 2, pandas < 2.2.3 in 24.06 / 24.08: no cudf-cu12
# wheel of them on pypi.org), the rapids meta-package's ucx range and dask-cuda's conda test
# dependencies (ucxx / distributed-ucxx / ucx-py of the release)
for v in 24.06 24.08; do copy rapidsai/cudf "v$v.00" conda/recipes/cudf/meta.yaml "$v"; done
for v in 24.06 24.08 24.10 24.12 25.02 25.04 25.06; do
  copy rapidsai/integration "v$v.00" conda/recipes/versions.yaml "$v"
  copy rapidsai/integration "v$v.00" conda/recipes/rapids/meta.yaml "$v"
  copy rapidsai/dask-cuda "v$v.00" dependencies.yaml "$v"
done
# the PyPI part (pypi/: wheel METADATA of 24.06-26.10) is fetched by
# `python scripts/record/rapids_record.py --refresh`, not copied here
grep "^docs/" "$SOURCES" >> "$SOURCES.new" || true
mv "$SOURCES.new" "$SOURCES"
