# Shared by ci/test and ci/demo: packages and the Release build.
# shellcheck shell=bash

# groff-base: test_man_pages renders man/ with groff.
OXR_PACKAGES=(build-essential cmake pkg-config libgmp-dev libcriterion-dev clang libclang-rt-14-dev
	libpmix-dev openmpi-bin libopenmpi-dev libibverbs-dev librdmacm-dev libhwloc-dev ibverbs-providers
	groff-base)
# The cluster-launch and netns tests (ci/test only): a one-node Slurm, ip netns.
OXR_CLUSTER_PACKAGES=(slurm-wlm munge iproute2)
# The rxe guest (ci/rxe-guest): Debian's kernel has soft-RoCE, these machines' has no RDMA.
OXR_RXE_PACKAGES=(qemu-system-x86 linux-image-amd64 busybox-static kmod iproute2 rdma-core
	ibverbs-utils rdmacm-utils perftest)
# ci/bench: its plots.
OXR_BENCH_PACKAGES=(gnuplot-nox)

# build/'s options, forced by both ci/demo and ci/test whatever its cache holds:
# the same options for both, so that the README's order (ci/demo, then
# ci/test) builds once and ci/test finds the tests it must run.  ci/demo
# builds the tests it does not run (well under a minute on 2 cores) rather
# than switch them off in a cache that ci/test reuses.
OXR_RELEASE_OPTIONS=(-DOXR_BUILD_TESTS=ON -DOXR_BUILD_BENCH=ON)

say() { printf '\n=== %s\n' "$*"; }

# apt-get only what is missing, so a machine that has everything pays nothing.
ensure_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing ${missing[*]}"
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# configure_build DIR BUILD_TYPE [cmake args...]
configure_build() {
	local dir=$1 type=$2
	shift 2
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" >"$dir.configure.log" 2>&1 ||
		{ cat "$dir.configure.log"; return 1; }
	cmake --build "$dir" -j"$(nproc)" >"$dir.build.log" 2>&1 ||
		{ grep -E 'error|warning' "$dir.build.log" | head -50; return 1; }
}
