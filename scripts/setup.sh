# Shared by scripts/run and scripts/test: makes sure the Debian packages and the CUDA toolkit
# are there, then configures and builds into build/. Sourced, not run.
#
# Settings (environment):
#   DQL_CUDA_ARCHS  CUDA architectures, e.g. 90 (default: 75;80;86;89;90)
#   DQL_BUILD_GUI   ON (default) or OFF to build everything but the desktop app
#   DQL_BUILD_DIR   build directory (default: build)

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

gui="${DQL_BUILD_GUI:-ON}"
build_dir="${DQL_BUILD_DIR:-build}"

packages=(cmake ninja-build g++ pkg-config libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev
          libstb-dev libmpfr-dev zlib1g-dev)
if [[ "$gui" == "ON" ]]; then
  # The app, and what its tests run it under: Xvfb with Mesa (llvmpipe), and the DejaVu fonts.
  packages+=(libimgui-dev libglfw3-dev python3-glad xvfb xauth libgl1-mesa-dri fonts-dejavu-core)
fi

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if (( ${#missing[@]} )); then
  if [[ "$(id -u)" == "0" ]]; then
    echo "Installing missing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "Dequant Lab needs these Debian packages, which are not installed:" >&2
    echo "  sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    echo "Run that, then this command again." >&2
    exit 1
  fi
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "Dequant Lab needs the CUDA toolkit (nvcc, cuBLAS) to build, and found no nvcc on PATH or in" >&2
  echo "/usr/local/cuda/bin. Install NVIDIA's cuda-toolkit package (or Debian's nvidia-cuda-toolkit)." >&2
  echo "A GPU is not needed to build or to run the CPU twin." >&2
  exit 1
fi

# The SASS view embeds cuobjdump's listing of the kernels. A CUDA 13 toolkit installed from
# NVIDIA's Python packages has no cuobjdump or nvdisasm: install NVIDIA's packages of the two
# beside the build (not system-wide). Without them everything builds and the SASS view says why
# it is empty.
nvcc_dir="$(dirname "$(command -v nvcc)")"
if [[ ! -x "$nvcc_dir/cuobjdump" && ! -x "$build_dir/cuda-tools/nvidia/cu13/bin/cuobjdump" ]]; then
  cuda_major="$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')"
  if [[ "$cuda_major" == "13" ]] && command -v python3 >/dev/null 2>&1; then
    echo "Installing NVIDIA's cuobjdump and nvdisasm into $build_dir/cuda-tools (for the SASS view)"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
      --target "$build_dir/cuda-tools" nvidia-cuda-cuobjdump==13.2.51 nvidia-cuda-nvdisasm==13.2.51 ||
      echo "Could not install them: the SASS view will say that SASS is not available." >&2
  fi
fi

configure=(-S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDQL_BUILD_GUI="$gui")
if [[ -n "${DQL_CUDA_ARCHS:-}" ]]; then
  configure+=(-DCMAKE_CUDA_ARCHITECTURES="$DQL_CUDA_ARCHS")
fi
cmake "${configure[@]}" >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)"
