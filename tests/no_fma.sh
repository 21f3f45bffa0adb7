#!/bin/sh
# no_fma.sh OBJDUMP LIB...: fails if a GEMM kernel library holds a fused
# multiply-add. tps_matmul rounds every product and every sum (tensor.h);
# -ffp-contract=off keeps the compiler from fusing, and this checks the
# object code, where -mavx512f would allow it (x86 vfmadd/vfmsub/vfnmadd,
# AArch64 fmla/fmls/fmadd/fmsub).
set -eu
objdump=$1
shift
fused=$("$objdump" -d --no-show-raw-insn "$@" |
	grep -E '[[:space:]](v?fn?m(add|sub)[0-9a-z]*|fml[as])[[:space:]]' || true)
if [ -n "$fused" ]; then
	echo "no_fma: fused multiply-adds in the GEMM kernels:" >&2
	echo "$fused" | head -20 >&2
	exit 1
fi
echo "no_fma: no fused multiply-add in $# kernel libraries"
