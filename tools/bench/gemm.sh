#!/bin/sh
# tps_matmul against single-thread OpenBLAS sgemm (tools/bench/gemm_bench.c),
# with OpenBLAS pinned the only way it honours: in the environment it loads
# with. One thread, and the kernels of this CPU (SkylakeX with avx512f,
# Haswell with avx2), so the comparison is with the best single core.
#   tools/bench/gemm.sh [BUILD_DIR] [--variant NAME] [--runs N] [--min-ms MS]
# BUILD_DIR defaults to build; meson builds gemm_bench only where pkg-config
# finds openblas (Debian: libopenblas-dev).
set -eu
cd "$(dirname "$0")/../.."
build=build
case "${1:-}" in
"" | -*) ;;
*) build=$1; shift ;;
esac
exe=$build/tools/bench/gemm_bench
[ -x "$exe" ] || {
	echo "gemm.sh: $exe is missing (build first; it needs openblas)" >&2
	exit 2
}
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
case " $flags " in
*" avx512f "*) core=SkylakeX ;;
*" avx2 "*) core=Haswell ;;
*" avx "*) core=Sandybridge ;;
*) core=Prescott ;;
esac
OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=$core exec "$exe" "$@"
