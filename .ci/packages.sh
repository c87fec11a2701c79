# .ci/packages.sh - the Debian packages dlaccel's build and tests need, and
# an idempotent installer. Sourced by .ci/run and tools/quickstart.sh so the
# two never disagree about what a fresh machine needs.

dla_packages=(build-essential autoconf automake libtool pkg-config libjansson-dev
    libcmocka-dev libopenblas-openmp-dev ocl-icd-opencl-dev pocl-opencl-icd
    opencl-headers libclblast1 valgrind python3 zlib1g-dev dataset-fashion-mnist
    openmpi-bin libopenmpi-dev libpng-dev libjpeg-dev)

# Not here: the CUDA toolkit (nvcc, cuBLAS, cuDNN, NVRTC), which CI and
# development machines have under /usr/local/cuda from NVIDIA's installer;
# .ci/run puts its bin/ on PATH and configures with --enable-cuda when it
# is there.

# What the hardening runs add (.ci/sanitize, fuzz/run.sh): clang with
# libFuzzer and its sanitizer runtimes, and clang's OpenMP. gcc's ASan,
# UBSan and TSan runtimes (libasan8, libubsan1, libtsan2) come with
# build-essential. Installed by `dla_install_packages hardening`.
dla_hardening_packages=(clang libclang-rt-14-dev libomp-dev)

# The list a caller asked for: the build's, or with "hardening" the
# hardening runs' as well.
dla_package_list() {
    if [ "${1:-}" = hardening ]; then
        echo "${dla_packages[@]}" "${dla_hardening_packages[@]}"
    else
        echo "${dla_packages[@]}"
    fi
}

dla_missing_packages() {
    local p
    for p in $(dla_package_list "${1:-}"); do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            echo "$p"
    done
}

# Installs what is missing (quietly); returns non-zero when it cannot.
# `dla_install_packages hardening` adds the hardening runs' packages.
dla_install_packages() {
    local missing sudo=() wanted
    read -r -a wanted <<<"$(dla_package_list "${1:-}")"
    if ! command -v dpkg-query >/dev/null 2>&1; then
        echo "not a Debian system: install by hand: ${wanted[*]}" >&2
        return 0
    fi
    mapfile -t missing < <(dla_missing_packages "${1:-}")
    if [ ${#missing[@]} -eq 0 ]; then
        echo "all ${#wanted[@]} packages already installed"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || {
            echo "missing packages and not root (no sudo): ${missing[*]}" >&2
            return 1
        }
        sudo=(sudo)
    fi
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get -qq update &&
        "${sudo[@]}" apt-get -qq install -y --no-install-recommends "${missing[@]}" >/dev/null
}
