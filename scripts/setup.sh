#!/usr/bin/env bash
# Installs dagrad's build and test dependencies from Debian's archive; does nothing when all
# are present. Safe to run any number of times. With --bench it also installs what
# bench/train_vs_pytorch needs (PyTorch, NumPy); the tests never need those.
set -euo pipefail

bench=0
for arg in "$@"; do
  case "$arg" in
    --bench) bench=1 ;;
    *) echo "usage: scripts/setup.sh [--bench]" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config   # toolchain (pkg-config: scripts/test.sh checks dagrad.pc)
  ninja-build                        # scripts/test.sh builds with Ninja
  xtensor-dev xtl-dev                # tensors (xtensor's SIMD option, which needs xsimd, stays off)
  libeigen3-dev                      # half and bfloat16 host types
  libtbb-dev                         # CPU parallelism
  catch2                             # tests (2.13)
  clang libclang-rt-14-dev llvm      # sanitizer + libFuzzer build (llvm-symbolizer for reports)
  clang-format                       # scripts/check_format.sh
  libcli11-dev                       # CLI parsing
  zlib1g-dev                         # gzipped IDX datasets
  nlohmann-json3-dev                 # JSON: checkpoint manifests, profiles, the CLI's --json
  dataset-fashion-mnist              # training data
  libdnnl-dev                        # oneDNN, for the CPU benchmark only
  libopenmpi-dev openmpi-bin         # data-parallel training on MPI (DAGRAD_MPI; mpirun runs tests/mpi)
)
# Debian's PyTorch runs on the system python3 (/usr/bin/python3), not on a pyenv or venv one.
# Its dense layers call libblas.so.3: without recommends that is Netlib's reference BLAS, several
# times slower; OpenBLAS's OpenMP build shares PyTorch's thread count.
[ "$bench" -eq 0 ] || packages+=(python3-torch python3-numpy libopenblas0-openmp)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
