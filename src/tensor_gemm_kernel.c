/*
 * The GEMM's blocked kernels. Meson compiles this file once per instruction
 * set, each time with its own flags and TPS_GEMM_VARIANT (generic, avx2,
 * avx512), into tps_gemm_run_<variant>; tensor_gemm.c picks one at run time.
 *
 * The order of arithmetic is tps_matmul's contract (tensor.h): every
 * C[i][j] starts from 0.0f and adds op(A)[i][p] * op(B)[p][j] for p
 * ascending, one rounded product and one rounded sum. So the vectors run
 * across output elements, never across p: lane c of a register computes
 * exactly the naive loop's sequence for its own element. Blocking over p
 * stores a partial sum to C (a float, as the naive sum is) and reloads it,
 * which changes no bit.
 *
 * Every product is computed as D = X Y with
 *   D (M, N), vectors along N: either C itself, or C^T when m is small, so
 *   that a batch of 32 rows fills two 16-float vectors and the big weight
 *   is streamed once instead of being transposed into panels;
 *   X (M, K), read one float at a time: X[r][p] = x[r * xrs + p * xps];
 *   Y (K, N), read as vectors from packed panels: Y[p][c] = y[p * yps +
 *   c * ycs], copied to (kc, nr) row-major panels, zero-padded to whole
 *   vectors.
 */
#include "tensor_gemm_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef TPS_GEMM_VARIANT
#error "meson defines TPS_GEMM_VARIANT (generic, avx2 or avx512)"
#endif

#define GEMM_CAT2(a, b) a##_##b
#define GEMM_CAT(a, b)	GEMM_CAT2(a, b)
#define GEMM_FN(name)	GEMM_CAT(name, TPS_GEMM_VARIANT)

/*
 * Block sizes, measured on an AMD EPYC (Zen 5) with tools/bench/gemm.sh.
 * LANES: floats per vector. NRV_MAX vectors of D per register tile row
 * (NR = NRV_MAX * LANES columns); MR_MULTI rows when N spans several panels;
 * mr_single[nrv]: rows when all of N fits one panel of nrv vectors (the
 * batch-sized case), as many as the registers hold. KC: the p block; MC, NC:
 * rows of X and columns of Y packed per block (X block in L2, Y panel
 * streamed from L1/L2).
 */
#if defined(TPS_GEMM_ISA_AVX512)
#ifndef __AVX512F__
#error "the avx512 variant needs -mavx512f"
#endif
#define LANES	 16
#define NRV_MAX	 4
#define MR_MULTI 6
#define MR_MAX	 16
static const int mr_single[NRV_MAX + 1] = {0, 16, 12, 8, 6};
#define KC 256
#define MC 144
#define NC 1024
#elif defined(TPS_GEMM_ISA_AVX2)
#ifndef __AVX2__
#error "the avx2 variant needs -mavx2"
#endif
#define LANES	 8
#define NRV_MAX	 2
#define MR_MULTI 6
#define MR_MAX	 8
static const int mr_single[NRV_MAX + 1] = {0, 8, 6};
#define KC	 256
#define MC	 144
#define NC	 1024
#elif defined(TPS_GEMM_ISA_GENERIC)
#define LANES	 4
#define NRV_MAX	 2
#define MR_MULTI 6
#define MR_MAX	 8
static const int mr_single[NRV_MAX + 1] = {0, 8, 6};
#define KC	 256
#define MC	 144
#define NC	 1024
#else
#error "meson defines one of TPS_GEMM_ISA_{GENERIC,AVX2,AVX512}"
#endif

#define NR (NRV_MAX * LANES)

typedef float vf __attribute__((vector_size(LANES * sizeof(float))));

static inline vf vload(const float *p)
{
	vf v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline void vstore(float *p, vf v)
{
	memcpy(p, &v, sizeof v);
}

/*
 * The register tile: for r < mr, c < nrv * LANES,
 *   D[r][c] = (first ? 0.0f : D[r][c]) + sum over p < kc ascending of
 *             X[r][p] * Y[p][c]
 * X[r][p] = x[r * xrs + p * xps]; Y row p = y + p * nrv * LANES (packed);
 * D row r = d + r * ldd. mr and nrv are constants at every call, so acc
 * lives in registers.
 */
static inline __attribute__((always_inline)) void
tile(const int mr, const int nrv, int64_t kc, const float *restrict x,
     int64_t xrs, int64_t xps, const float *restrict y, float *restrict d,
     int64_t ldd, bool first)
{
	vf acc[MR_MAX][NRV_MAX];

#pragma GCC unroll 16
	for (int r = 0; r < mr; r++) {
#pragma GCC unroll 4
		for (int v = 0; v < nrv; v++) {
			acc[r][v] = first ? (vf){0}
					  : vload(d + r * ldd + v * LANES);
		}
	}
	for (int64_t p = 0; p < kc; p++) {
		vf yv[NRV_MAX];
#pragma GCC unroll 4
		for (int v = 0; v < nrv; v++) {
			yv[v] = vload(y + p * nrv * LANES + v * LANES);
		}
#pragma GCC unroll 16
		for (int r = 0; r < mr; r++) {
			const float xs = x[r * xrs + p * xps];
#pragma GCC unroll 4
			for (int v = 0; v < nrv; v++) {
				acc[r][v] = acc[r][v] + yv[v] * xs;
			}
		}
	}
#pragma GCC unroll 16
	for (int r = 0; r < mr; r++) {
#pragma GCC unroll 4
		for (int v = 0; v < nrv; v++) {
			vstore(d + r * ldd + v * LANES, acc[r][v]);
		}
	}
}

/* A tile with X read down columns (xrs = 1: packed panels, or op(B)'s
 * rows for C^T) or along rows (xps = 1: rows of A or of B^T). */
typedef void tile_fn(int64_t kc, const float *x, int64_t stride, const float *y,
		     float *d, int64_t ldd, bool first);

#define DEFINE_COLS(MR, NRV)                                                   \
	static void tile_cols_##MR##_##NRV(int64_t kc, const float *x,         \
					   int64_t xps, const float *y,        \
					   float *d, int64_t ldd, bool first)  \
	{                                                                      \
		tile(MR, NRV, kc, x, 1, xps, y, d, ldd, first);                \
	}
#define DEFINE_ROWS(MR, NRV)                                                   \
	static void tile_rows_##MR##_##NRV(int64_t kc, const float *x,         \
					   int64_t xrs, const float *y,        \
					   float *d, int64_t ldd, bool first)  \
	{                                                                      \
		tile(MR, NRV, kc, x, xrs, 1, y, d, ldd, first);                \
	}

#if NRV_MAX == 4
DEFINE_COLS(6, 1)
DEFINE_COLS(6, 2)
DEFINE_COLS(6, 3)
DEFINE_COLS(6, 4)
DEFINE_ROWS(6, 4)
DEFINE_COLS(16, 1)
DEFINE_ROWS(16, 1)
DEFINE_COLS(12, 2)
DEFINE_ROWS(12, 2)
DEFINE_COLS(8, 3)
DEFINE_ROWS(8, 3)
/* Indexed by nrv: MR_MULTI rows; mr_single[nrv] rows. */
static tile_fn *const cols_multi[NRV_MAX + 1] = {
	NULL, tile_cols_6_1, tile_cols_6_2, tile_cols_6_3, tile_cols_6_4};
static tile_fn *const cols_single[NRV_MAX + 1] = {
	NULL, tile_cols_16_1, tile_cols_12_2, tile_cols_8_3, tile_cols_6_4};
static tile_fn *const rows_single[NRV_MAX + 1] = {
	NULL, tile_rows_16_1, tile_rows_12_2, tile_rows_8_3, tile_rows_6_4};
#else
DEFINE_COLS(6, 1)
DEFINE_COLS(6, 2)
DEFINE_ROWS(6, 2)
DEFINE_COLS(8, 1)
DEFINE_ROWS(8, 1)
static tile_fn *const cols_multi[NRV_MAX + 1] = {NULL, tile_cols_6_1,
						 tile_cols_6_2};
static tile_fn *const cols_single[NRV_MAX + 1] = {NULL, tile_cols_8_1,
						  tile_cols_6_2};
static tile_fn *const rows_single[NRV_MAX + 1] = {NULL, tile_rows_8_1,
						  tile_rows_6_2};
#endif

/* D = X Y as described at the top; D[r][c] = d[r * drs + c * dcs]. */
struct gemm_op {
	int64_t m, n, k;
	const float *x;
	int64_t xrs, xps;
	const float *y;
	int64_t yps, ycs;
	float *d;
	int64_t drs, dcs;
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t round_up(int64_t a, int64_t to)
{
	return (a + to - 1) / to * to;
}

/* Splits len into ceil(len / block) near-equal blocks: their size. */
static int64_t balanced_block(int64_t len, int64_t block)
{
	int64_t count = (len + block - 1) / block;
	return (len + count - 1) / count;
}

/* panel (kc, wpad) = Y[p0 .. p0+kc)[c0 .. c0+w), zero beyond w. */
static void pack_y(float *panel, const struct gemm_op *op, int64_t p0,
		   int64_t kc, int64_t c0, int64_t w, int64_t wpad)
{
	const float *src = op->y + p0 * op->yps + c0 * op->ycs;
	for (int64_t p = 0; p < kc; p++) {
		float *dst = panel + p * wpad;
		if (op->ycs == 1) {
			memcpy(dst, src + p * op->yps, (size_t)w * sizeof *dst);
		} else {
			for (int64_t c = 0; c < w; c++) {
				dst[c] = src[p * op->yps + c * op->ycs];
			}
		}
		for (int64_t c = w; c < wpad; c++) {
			dst[c] = 0.0f;
		}
	}
}

/* panel (kc, mr) = X[r0 .. r0+h)[p0 .. p0+kc) transposed, so that a tile
 * reads column p at panel + p * mr; rows h..mr are zero. */
static void pack_x(float *panel, const struct gemm_op *op, int64_t r0,
		   int64_t h, int64_t p0, int64_t kc, int mr)
{
	const float *src = op->x + r0 * op->xrs + p0 * op->xps;
	for (int64_t p = 0; p < kc; p++) {
		float *dst = panel + p * mr;
		for (int64_t r = 0; r < h; r++) {
			dst[r] = src[r * op->xrs + p * op->xps];
		}
		for (int64_t r = h; r < mr; r++) {
			dst[r] = 0.0f;
		}
	}
}

/* t (rows, cols), row stride ldt, from or to D at (r0, c0). */
static void tile_get(float *t, int64_t ldt, const struct gemm_op *op,
		     int64_t r0, int64_t c0, int64_t rows, int64_t cols)
{
	const float *d = op->d + r0 * op->drs + c0 * op->dcs;
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t c = 0; c < cols; c++) {
			t[r * ldt + c] = d[r * op->drs + c * op->dcs];
		}
	}
}

static void tile_put(const float *t, int64_t ldt, const struct gemm_op *op,
		     int64_t r0, int64_t c0, int64_t rows, int64_t cols)
{
	float *d = op->d + r0 * op->drs + c0 * op->dcs;
	if (op->dcs == 1) {
		for (int64_t r = 0; r < rows; r++) {
			memcpy(d + r * op->drs, t + r * ldt,
			       (size_t)cols * sizeof *d);
		}
		return;
	}
	/* D = C^T: walk C's rows (D's columns) contiguously. */
	for (int64_t c = 0; c < cols; c++) {
		for (int64_t r = 0; r < rows; r++) {
			d[c * op->dcs + r * op->drs] = t[r * ldt + c];
		}
	}
}

/* One register tile of D at (r0, c0), rows x cols of it valid: straight
 * into D when it is a whole tile of C, else through tmp. */
static void run_tile(tile_fn *fn, int mr, int nrv, int64_t kc, const float *x,
		     int64_t xstride, const float *ypanel,
		     const struct gemm_op *op, int64_t r0, int64_t c0,
		     int64_t rows, int64_t cols, bool first, float *tmp)
{
	const int64_t width = (int64_t)nrv * LANES;
	if (op->dcs == 1 && rows == mr && cols == width) {
		fn(kc, x, xstride, ypanel, op->d + r0 * op->drs + c0, op->drs,
		   first);
		return;
	}
	if (!first) {
		tile_get(tmp, width, op, r0, c0, rows, cols);
	}
	fn(kc, x, xstride, ypanel, tmp, width, first);
	tile_put(tmp, width, op, r0, c0, rows, cols);
}

/*
 * All of N in one panel of nrv vectors (N <= NR): Y is packed once per p
 * block and X is streamed straight from A or B, each float read once; only
 * a last, short row tile is copied (zero-padded) so no read runs past X.
 */
static void gemm_single(const struct gemm_op *op, float *work, float *tmp)
{
	const int nrv = (int)((op->n + LANES - 1) / LANES);
	const int mr = mr_single[nrv];
	const int64_t wpad = (int64_t)nrv * LANES;
	const int64_t kc_max = balanced_block(op->k, KC);
	float *ypanel = work;
	float *edge = ypanel + kc_max * wpad;

	for (int64_t pc = 0; pc < op->k; pc += kc_max) {
		const int64_t kc = min64(kc_max, op->k - pc);
		const bool first = pc == 0;
		pack_y(ypanel, op, pc, kc, 0, op->n, wpad);
		for (int64_t ic = 0; ic < op->m; ic += mr) {
			const int64_t rows = min64(mr, op->m - ic);
			const float *x = op->x + ic * op->xrs + pc * op->xps;
			if (rows < mr) {
				pack_x(edge, op, ic, rows, pc, kc, mr);
				run_tile(cols_single[nrv], mr, nrv, kc, edge,
					 mr, ypanel, op, ic, 0, rows, op->n,
					 first, tmp);
			} else if (op->xps == 1) {
				run_tile(rows_single[nrv], mr, nrv, kc, x,
					 op->xrs, ypanel, op, ic, 0, rows,
					 op->n, first, tmp);
			} else {
				run_tile(cols_single[nrv], mr, nrv, kc, x,
					 op->xps, ypanel, op, ic, 0, rows,
					 op->n, first, tmp);
			}
		}
	}
}

/*
 * N over several panels: the classic blocking (Goto, BLIS). For each
 * (NC columns, KC p) block of Y, pack its panels; for each MC rows of X,
 * pack MR-row panels; then every (panel, row tile) pair is one register
 * tile. p blocks run in ascending order for every element of D.
 */
static void gemm_multi(const struct gemm_op *op, float *work, float *tmp)
{
	const int mr = MR_MULTI;
	const int64_t kc_max = balanced_block(op->k, KC);
	const int64_t nc_max = round_up(min64(op->n, NC), NR);
	float *ybuf = work;
	float *xbuf = ybuf + kc_max * nc_max;

	for (int64_t jc = 0; jc < op->n; jc += NC) {
		const int64_t nc = min64(NC, op->n - jc);
		for (int64_t pc = 0; pc < op->k; pc += kc_max) {
			const int64_t kc = min64(kc_max, op->k - pc);
			const bool first = pc == 0;
			for (int64_t q = 0; q < nc; q += NR) {
				const int64_t w = min64(NR, nc - q);
				pack_y(ybuf + q * kc, op, pc, kc, jc + q, w,
				       round_up(w, LANES));
			}
			for (int64_t ic = 0; ic < op->m; ic += MC) {
				const int64_t mc = min64(MC, op->m - ic);
				for (int64_t t = 0; t < mc; t += mr) {
					pack_x(xbuf + t * kc, op, ic + t,
					       min64(mr, mc - t), pc, kc, mr);
				}
				for (int64_t q = 0; q < nc; q += NR) {
					const int64_t w = min64(NR, nc - q);
					const int nrv =
						(int)((w + LANES - 1) / LANES);
					for (int64_t t = 0; t < mc; t += mr) {
						run_tile(cols_multi[nrv], mr,
							 nrv, kc, xbuf + t * kc,
							 mr, ybuf + q * kc, op,
							 ic + t, jc + q,
							 min64(mr, mc - t), w,
							 first, tmp);
					}
				}
			}
		}
	}
}

/* Aligns to 64 bytes (a cache line; a whole zmm). */
static float *align64(float *p)
{
	return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

void GEMM_FN(tps_gemm_run)(float *c, const float *a, const float *b, int64_t m,
			   int64_t n, int64_t k, bool trans_a, bool trans_b)
{
	struct gemm_op op;
	int64_t floats;
	float *mem, *tmp;
	bool transposed;

	if (m == 0 || n == 0) {
		return;
	}
	if (k == 0) {
		memset(c, 0, (size_t)(m * n) * sizeof *c); /* +0.0f, as naive */
		return;
	}
	/* Vectors along m (D = C^T) when m fits one panel and fills its
	 * lanes better than n would: a batch times a big weight. */
	transposed = m <= NR && (n > NR || m * round_up(n, LANES) >
						   n * round_up(m, LANES));
	if (!transposed) {
		op = (struct gemm_op){
			.m = m,
			.n = n,
			.k = k,
			.x = a,
			.xrs = trans_a ? 1 : k,
			.xps = trans_a ? m : 1,
			.y = b,
			.yps = trans_b ? 1 : n,
			.ycs = trans_b ? k : 1,
			.d = c,
			.drs = n,
			.dcs = 1,
		};
	} else {
		/* D[j][i] = C[i][j], X[j][p] = op(B)[p][j], Y[p][i] =
		 * op(A)[i][p]. */
		op = (struct gemm_op){
			.m = n,
			.n = m,
			.k = k,
			.x = b,
			.xrs = trans_b ? k : 1,
			.xps = trans_b ? 1 : n,
			.y = a,
			.yps = trans_a ? m : 1,
			.ycs = trans_a ? 1 : k,
			.d = c,
			.drs = 1,
			.dcs = n,
		};
	}

	{
		const int64_t kc = balanced_block(k, KC);
		if (op.n <= NR) {
			floats = kc * NR + kc * MR_MAX;
		} else {
			floats = kc * round_up(min64(op.n, NC), NR) +
				 kc * round_up(min64(op.m, MC), MR_MULTI);
		}
		floats += MR_MAX * NR + 64 / sizeof(float);
	}
	/* Per call, so threads never share a buffer. Without memory, the
	 * reference loop still gives the same bits. */
	mem = malloc((size_t)floats * sizeof *mem);
	if (!mem) {
		tps_matmul_naive(c, a, b, m, n, k, trans_a, trans_b);
		return;
	}
	/* The tile of the edges; its padding lanes are computed, never
	 * stored, but they should not start from unset memory. */
	tmp = align64(mem);
	memset(tmp, 0, MR_MAX * NR * sizeof *tmp);
	if (op.n <= NR) {
		gemm_single(&op, tmp + MR_MAX * NR, tmp);
	} else {
		gemm_multi(&op, tmp + MR_MAX * NR, tmp);
	}
	free(mem);
}

void GEMM_FN(tps_gemm_blocking)(struct tps_matmul_blocking *blocking)
{
	blocking->lanes = LANES;
	blocking->mr = MR_MULTI;
	blocking->nr = NR;
	blocking->kc = KC;
	blocking->mc = MC;
	blocking->nc = NC;
}
