#!/bin/sh
# Install every Debian package qemu-jitbpf needs to build QEMU, the tool,
# and to run the test suite and benchmarks. Idempotent; needs root.
set -eu

PKGS="
  make gcc libc6-dev pkg-config git xz-utils dpkg-dev gpgv debian-archive-keyring
  ninja-build meson python3 python3-venv libglib2.0-dev flex bison
  systemtap-sdt-dev libdw-dev libelf-dev libdeflate-dev zlib1g-dev liblzma-dev libbz2-dev libcapstone-dev libiberty-dev
  libpixman-1-dev libfdt-dev seabios qemu-system-data
  clang llvm lld bpftool libclang-rt-14-dev
  linux-perf uftrace bpftrace
  bats bats-assert bats-support bats-file
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross busybox-static g++ rustc
  gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
  gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
  gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross
  gcc-s390x-linux-gnu libc6-dev-s390x-cross
  valgrind clang-format bc cpio libcurl4-openssl-dev python3-seccomp cmark-gfm
  docker.io
  protobuf-c-compiler libprotobuf-c-dev golang-github-google-pprof-dev
  golang-go chromium tmux libc6-dbg gnuplot-nox elfutils lcov diff-cover debootstrap
  lintian binfmt-support
"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "deps: all packages present"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing (run 'make deps' as root)" >&2
	exit 1
fi

echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# Third-party sources configured on the machine may be unreachable; the
# Debian archive is what matters.
apt-get update -qq || true
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
