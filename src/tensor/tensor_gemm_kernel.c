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
 *   Y (K, N), read as vectors: Y[p][c] = y[p * yps + c * ycs], mostly
 *   from (kc, nr) row-major panels it is copied to, zero-padded to whole
 *   vectors.
 * The four transpose combinations differ only in these strides. Three
 * drivers cover the shapes:
 *   gemm_multi   N over several panels: pack X and Y blocks (Goto, BLIS)
 *   gemm_single  N fits one panel (a batch against a weight, as C^T)
 *   gemm_small   m <= SMALL_M and B's rows contiguous: along B's rows
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
 * Block sizes, measured on an AMD EPYC (Zen 5, 1 MiB L2) with
 * tools/bench/gemm.sh. LANES: floats per vector.
 *  - NRV_MAX vectors (NR = NRV_MAX * LANES columns) by MR_MULTI rows: the
 *    register tile when N spans several panels; 6 x 4 zmm is 24 of the 32
 *    registers (16 registers elsewhere: 6 x 2). KC (p), MC (rows of X) and
 *    NC (columns of Y) block it; KC 128..512, MC 72..288 and NC 512..2048
 *    all measured within the noise of these.
 *  - MR_SINGLE_<nrv>: rows when all of N fits one panel of nrv vectors (a
 *    batch of rows against a weight). Rows of X read straight are one
 *    stream each; more than 8 ran slower (16 rows: 97 GFLOP/s, 8: 160 at
 *    m=16 n=4096 k=1024). KC_SINGLE: their p block, longer since the
 *    partial sums stay in registers or a buffer.
 *  - SMALL_M: up to this many rows, B's rows are read unpacked (gemm_small).
 *  - MR_MAX: the most rows of any tile.
 */
#if defined(TPS_GEMM_ISA_AVX512)
#ifndef __AVX512F__
#error "the avx512 variant needs -mavx512f"
#endif
#define LANES	    16
#define NRV_MAX	    4
#define MR_MULTI    6
#define MR_SINGLE_1 8
#define MR_SINGLE_2 8
#define MR_SINGLE_3 8
#define MR_SINGLE_4 6
#define MR_MAX	    12
#define KC	    256
#define KC_SINGLE   1024
#define SMALL_M	    12
#define MC	    144
#define NC	    1024
#elif defined(TPS_GEMM_ISA_AVX2)
#ifndef __AVX2__
#error "the avx2 variant needs -mavx2"
#endif
#define LANES	    8
#define NRV_MAX	    2
#define MR_MULTI    6
#define MR_SINGLE_1 8
#define MR_SINGLE_2 6
#define MR_MAX	    8
#define KC	    256
#define KC_SINGLE   1024
#define SMALL_M	    6
#define MC	    144
#define NC	    1024
#elif defined(TPS_GEMM_ISA_GENERIC)
#define LANES	    4
#define NRV_MAX	    2
#define MR_MULTI    6
#define MR_SINGLE_1 8
#define MR_SINGLE_2 6
#define MR_MAX	    8
#define KC	    256
#define KC_SINGLE   1024
#define SMALL_M	    6
#define MC	    144
#define NC	    1024
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

/* Unrolls a loop over rows or vectors of a tile completely (its bounds are
 * constants), so that acc[][] becomes registers. */
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 16")
#endif

/*
 * The register tile: for r < mr, c < nrv * LANES,
 *   D[r][c] = (first ? 0.0f : D[r][c]) + sum over p < kc ascending of
 *             X[r][p] * Y[p][c]
 * X[r][p] = x[r * xrs + p * xps]; Y row p = y + p * ys (nrv * LANES
 * for a packed panel); D row r = d + r * ldd. mr and nrv are constants at
 * every call, so acc lives in registers.
 */
static inline __attribute__((always_inline)) void
tile(const int mr, const int nrv, int64_t kc, const float *restrict x,
     int64_t xrs, int64_t xps, const float *restrict y, int64_t ys,
     float *restrict d, int64_t ldd, bool first)
{
	vf acc[MR_MAX][NRV_MAX];

	UNROLL
	for (int r = 0; r < mr; r++) {
		UNROLL
		for (int v = 0; v < nrv; v++) {
			acc[r][v] = first ? (vf){0}
					  : vload(d + r * ldd + v * LANES);
		}
	}
	for (int64_t p = 0; p < kc; p++) {
		vf yv[NRV_MAX];
		UNROLL
		for (int v = 0; v < nrv; v++) {
			yv[v] = vload(y + p * ys + v * LANES);
		}
		UNROLL
		for (int r = 0; r < mr; r++) {
			const float xs = x[r * xrs + p * xps];
			UNROLL
			for (int v = 0; v < nrv; v++) {
				acc[r][v] = acc[r][v] + yv[v] * xs;
			}
		}
	}
	UNROLL
	for (int r = 0; r < mr; r++) {
		UNROLL
		for (int v = 0; v < nrv; v++) {
			vstore(d + r * ldd + v * LANES, acc[r][v]);
		}
	}
}

/* A tile with X read down columns (xrs = 1: packed panels, or op(B)'s
 * rows for C^T) or along rows (xps = 1: rows of A or of B^T). */
typedef void tile_fn(int64_t kc, const float *x, int64_t stride, const float *y,
		     float *d, int64_t ldd, bool first);

/* The tiles, by their number of vectors nrv: MR_MULTI rows from packed X
 * panels; MR_SINGLE_<nrv> rows from packed or straight X. */
#define DEFINE_TILES(NRV)                                                      \
	static void tile_multi_##NRV(int64_t kc, const float *x, int64_t xps,  \
				     const float *y, float *d, int64_t ldd,    \
				     bool first)                               \
	{                                                                      \
		tile(MR_MULTI, NRV, kc, x, 1, xps, y, NRV *LANES, d, ldd,      \
		     first);                                                   \
	}                                                                      \
	static void tile_single_cols_##NRV(int64_t kc, const float *x,         \
					   int64_t xps, const float *y,        \
					   float *d, int64_t ldd, bool first)  \
	{                                                                      \
		tile(MR_SINGLE_##NRV, NRV, kc, x, 1, xps, y, NRV *LANES, d,    \
		     ldd, first);                                              \
	}                                                                      \
	static void tile_single_rows_##NRV(int64_t kc, const float *x,         \
					   int64_t xrs, const float *y,        \
					   float *d, int64_t ldd, bool first)  \
	{                                                                      \
		tile(MR_SINGLE_##NRV, NRV, kc, x, xrs, 1, y, NRV *LANES, d,    \
		     ldd, first);                                              \
	}

DEFINE_TILES(1)
DEFINE_TILES(2)
#if NRV_MAX == 4
DEFINE_TILES(3)
DEFINE_TILES(4)
static const int mr_single[NRV_MAX + 1] = {0, MR_SINGLE_1, MR_SINGLE_2,
					   MR_SINGLE_3, MR_SINGLE_4};
static tile_fn *const cols_multi[NRV_MAX + 1] = {
	NULL, tile_multi_1, tile_multi_2, tile_multi_3, tile_multi_4};
static tile_fn *const cols_single[NRV_MAX + 1] = {
	NULL, tile_single_cols_1, tile_single_cols_2, tile_single_cols_3,
	tile_single_cols_4};
static tile_fn *const rows_single[NRV_MAX + 1] = {
	NULL, tile_single_rows_1, tile_single_rows_2, tile_single_rows_3,
	tile_single_rows_4};
#elif NRV_MAX == 2
static const int mr_single[NRV_MAX + 1] = {0, MR_SINGLE_1, MR_SINGLE_2};
static tile_fn *const cols_multi[NRV_MAX + 1] = {NULL, tile_multi_1,
						 tile_multi_2};
static tile_fn *const cols_single[NRV_MAX + 1] = {NULL, tile_single_cols_1,
						  tile_single_cols_2};
static tile_fn *const rows_single[NRV_MAX + 1] = {NULL, tile_single_rows_1,
						  tile_single_rows_2};
#else
#error "NRV_MAX is 2 or 4"
#endif

/* Tiles of m = 1..SMALL_M rows reading Y rows at any stride ys (B's own
 * rows, when m is that small): NRV_MAX vectors wide up to MR_MULTI rows,
 * then half as wide, as the registers allow. */
typedef void small_fn(int64_t kc, const float *x, int64_t xps, const float *y,
		      int64_t ys, float *d, int64_t ldd, bool first);

#define SMALL_NRV(MR) ((MR) <= MR_MULTI ? NRV_MAX : NRV_MAX / 2)
#define DEFINE_SMALL(MR)                                                       \
	static void tile_small_##MR(int64_t kc, const float *x, int64_t xps,   \
				    const float *y, int64_t ys, float *d,      \
				    int64_t ldd, bool first)                   \
	{                                                                      \
		tile(MR, SMALL_NRV(MR), kc, x, 1, xps, y, ys, d, ldd, first);  \
	}

#if MR_MULTI != 6 || (SMALL_M != 6 && SMALL_M != 12)
#error "the small tiles are 1..6 rows, or 1..12"
#endif
DEFINE_SMALL(1)
DEFINE_SMALL(2)
DEFINE_SMALL(3)
DEFINE_SMALL(4)
DEFINE_SMALL(5)
DEFINE_SMALL(6)
#if SMALL_M == 12
DEFINE_SMALL(7)
DEFINE_SMALL(8)
DEFINE_SMALL(9)
DEFINE_SMALL(10)
DEFINE_SMALL(11)
DEFINE_SMALL(12)
static small_fn *const small_tiles[SMALL_M + 1] = {
	NULL,	       tile_small_1,  tile_small_2, tile_small_3, tile_small_4,
	tile_small_5,  tile_small_6,  tile_small_7, tile_small_8, tile_small_9,
	tile_small_10, tile_small_11, tile_small_12};
#else
static small_fn *const small_tiles[SMALL_M + 1] = {
	NULL,	      tile_small_1, tile_small_2, tile_small_3,
	tile_small_4, tile_small_5, tile_small_6};
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

/*
 * Packs the (h, kc) matrix S[r][p] = src[r * rs + p * ps] (rs or ps is 1)
 * into panels of `width` rows, panel t (t = 0, width, ...) at dst + t * kc,
 * column p of it at p * wt: the wt = min(width, round_up(h - t, quantum))
 * floats S[t .. t+wt)[p], zero past row h. X panels have quantum = width
 * (whole tiles); Y panels quantum = LANES (the last one only as wide as it
 * needs). The source is read along its contiguous direction, in blocks of
 * a cache line when transposing, so power-of-two strides stay cheap.
 */
static void pack_panels(float *dst, const float *src, int64_t rs, int64_t ps,
			int64_t h, int64_t kc, int64_t width, int64_t quantum)
{
	if (rs == 1) {
		for (int64_t p = 0; p < kc; p++) {
			for (int64_t t = 0; t < h; t += width) {
				const int64_t w = min64(width, h - t);
				const int64_t wt =
					min64(width, round_up(w, quantum));
				float *d = dst + t * kc + p * wt;
				memcpy(d, src + p * ps + t,
				       (size_t)w * sizeof *d);
				for (int64_t r = w; r < wt; r++) {
					d[r] = 0.0f;
				}
			}
		}
		return;
	}
	for (int64_t t = 0; t < h; t += width) {
		const int64_t w = min64(width, h - t);
		const int64_t wt = min64(width, round_up(w, quantum));
		float *d = dst + t * kc;
		for (int64_t p0 = 0; p0 < kc; p0 += 16) {
			const int64_t p1 = min64(kc, p0 + 16);
			for (int64_t r = 0; r < w; r++) {
				const float *srow = src + (t + r) * rs;
				for (int64_t p = p0; p < p1; p++) {
					d[p * wt + r] = srow[p];
				}
			}
			for (int64_t r = w; r < wt; r++) {
				for (int64_t p = p0; p < p1; p++) {
					d[p * wt + r] = 0.0f;
				}
			}
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
	/* D = C^T: along C's rows (D's columns), 16 of D's rows at a time,
	 * so both sides stay in cache for a whole D. */
	for (int64_t rb = 0; rb < rows; rb += 16) {
		const int64_t re = min64(rows, rb + 16);
		for (int64_t c = 0; c < cols; c++) {
			for (int64_t r = rb; r < re; r++) {
				d[c * op->dcs + r * op->drs] = t[r * ldt + c];
			}
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

/* dst[p * ld + r] = src[p * stride + r] for r < w, zero up to ld, for p
 * < kc. Each row is prefetched 8 rows ahead: with rows 16 KiB apart (n =
 * 4096) the hardware's prefetchers fell behind, and this measured 25-30%
 * faster on the whole product. */
static void copy_rows(float *dst, int64_t ld, const float *src, int64_t stride,
		      int64_t w, int64_t kc)
{
	enum { AHEAD = 8 };
	for (int64_t p = 0; p < kc; p++) {
		const float *s = src + p * stride;
		float *d = dst + p * ld;
		int64_t r = 0;
		if (p + AHEAD < kc) {
			for (int64_t l = 0; l < w; l += 64 / sizeof(float)) {
				__builtin_prefetch(s + AHEAD * stride + l);
			}
		}
		for (; r + LANES <= w; r += LANES) {
			vstore(d + r, vload(s + r));
		}
		for (; r < w; r++) {
			d[r] = s[r];
		}
		for (; r < ld; r++) {
			d[r] = 0.0f;
		}
	}
}

/* A tile of gemm_single: into dbuf (D's rows of nrv vectors, all of
 * them) when there is one, else into D. */
static void single_tile(tile_fn *fn, int mr, int nrv, int64_t kc,
			const float *x, int64_t xstride, const float *ypanel,
			const struct gemm_op *op, float *dbuf, int64_t r0,
			int64_t rows, bool first, float *tmp)
{
	const int64_t width = (int64_t)nrv * LANES;
	if (dbuf) {
		fn(kc, x, xstride, ypanel, dbuf + r0 * width, width, first);
	} else {
		run_tile(fn, mr, nrv, kc, x, xstride, ypanel, op, r0, 0, rows,
			 op->n, first, tmp);
	}
}

/*
 * All of N in one panel of nrv vectors (N <= NR): Y is packed once per p
 * block. X rows contiguous along p (the weight, for y = x W^T) stream
 * straight into the tiles, each float read once. X stored the other way
 * (X[r][p] = x[r + p * xps]) is copied in blocks of MC rows, row p by row
 * p, to a stride that is no power of two: walking down its columns at
 * stride xps would thrash the caches. A last, short row tile is packed
 * too, zero-padded, so no read runs past X.
 *
 * When D is C^T (or N is no whole number of vectors) and there are
 * several p blocks, the partial sums stay in dbuf, D as whole vectors
 * (round_up(M, mr), nrv * LANES), and go to C once at the end, instead of
 * through a transposed copy per tile per p block.
 */
static void gemm_single(const struct gemm_op *op, float *work, float *dbuf,
			float *tmp)
{
	const int nrv = (int)((op->n + LANES - 1) / LANES);
	const int mr = mr_single[nrv];
	const int64_t wpad = (int64_t)nrv * LANES;
	const int64_t kc_max = balanced_block(op->k, KC_SINGLE);
	const int64_t ld = round_up(MC, 16) + 16; /* floats per copied row */
	float *ypanel = work;
	float *xbuf = ypanel + kc_max * wpad;

	for (int64_t pc = 0; pc < op->k; pc += kc_max) {
		const int64_t kc = min64(kc_max, op->k - pc);
		const bool first = pc == 0;
		const float *x = op->x + pc * op->xps;
		pack_panels(ypanel, op->y + pc * op->yps, op->ycs, op->yps,
			    op->n, kc, wpad, LANES);
		for (int64_t ic = 0; ic < op->m; ic += MC) {
			const int64_t mc = min64(MC, op->m - ic);
			int64_t t = 0;
			if (op->xps == 1) {
				for (; t + mr <= mc; t += mr) {
					single_tile(rows_single[nrv], mr, nrv,
						    kc, x + (ic + t) * op->xrs,
						    op->xrs, ypanel, op, dbuf,
						    ic + t, mr, first, tmp);
				}
				if (t < mc) {
					pack_panels(
						xbuf, x + (ic + t) * op->xrs,
						op->xrs, 1, mc - t, kc, mr, mr);
					single_tile(cols_single[nrv], mr, nrv,
						    kc, xbuf, mr, ypanel, op,
						    dbuf, ic + t, mc - t, first,
						    tmp);
				}
				continue;
			}
			copy_rows(xbuf, ld, x + ic, op->xps, mc, kc);
			for (; t < mc; t += mr) {
				single_tile(cols_single[nrv], mr, nrv, kc,
					    xbuf + t, ld, ypanel, op, dbuf,
					    ic + t, min64(mr, mc - t), first,
					    tmp);
			}
		}
	}
	if (dbuf) {
		tile_put(dbuf, wpad, op, 0, 0, op->m, op->n);
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
			pack_panels(ybuf, op->y + pc * op->yps + jc * op->ycs,
				    op->ycs, op->yps, nc, kc, NR, LANES);
			for (int64_t ic = 0; ic < op->m; ic += MC) {
				const int64_t mc = min64(MC, op->m - ic);
				pack_panels(xbuf,
					    op->x + ic * op->xrs + pc * op->xps,
					    op->xrs, op->xps, mc, kc, mr, mr);
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

/*
 * m <= MR_MULTI rows and B's rows contiguous (dx = dy W, dW = dy^T x with
 * a handful of rows): one tile of all m rows runs along B's rows, which
 * are read once, straight, in p blocks of KC_SINGLE. Only X (m, kc) is
 * packed, and the last columns of B (fewer than NR) are copied,
 * zero-padded.
 */
static void gemm_small(const struct gemm_op *op, float *work, float *tmp)
{
	const int mr = (int)op->m;
	const int64_t width = (int64_t)SMALL_NRV(mr) * LANES;
	small_fn *const fn = small_tiles[mr];
	const int64_t kc_max = balanced_block(op->k, KC_SINGLE);
	float *xpanel = work;
	float *ytail = xpanel + kc_max * mr;

	for (int64_t pc = 0; pc < op->k; pc += kc_max) {
		const int64_t kc = min64(kc_max, op->k - pc);
		const bool first = pc == 0;
		const float *y = op->y + pc * op->yps;
		int64_t q = 0;
		pack_panels(xpanel, op->x + pc * op->xps, op->xrs, op->xps,
			    op->m, kc, mr, mr);
		for (; q + width <= op->n; q += width) {
			fn(kc, xpanel, mr, y + q, op->yps, op->d + q, op->drs,
			   first);
		}
		if (q < op->n) {
			pack_panels(ytail, y + q, 1, op->yps, op->n - q, kc,
				    width, width);
			if (!first) {
				tile_get(tmp, width, op, 0, q, op->m,
					 op->n - q);
			}
			fn(kc, xpanel, mr, ytail, width, tmp, width, first);
			tile_put(tmp, width, op, 0, q, op->m, op->n - q);
		}
	}
}

/* Aligns to 64 bytes (a cache line; a whole zmm). */
static float *align64(float *p)
{
	return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

void GEMM_FN(tps_gemm_run)(float *c, int64_t ldc, const float *a, int64_t lda,
			   const float *b, int64_t ldb, int64_t m, int64_t n,
			   int64_t k, bool trans_a, bool trans_b)
{
	struct gemm_op op;
	int64_t kc, floats, dbuf_floats = 0;
	float *mem, *tmp;
	bool small, transposed;

	if (m == 0 || n == 0) {
		return;
	}
	if (k == 0) {
		for (int64_t i = 0; i < m; i++) { /* +0.0f, as naive */
			memset(c + i * ldc, 0, (size_t)n * sizeof *c);
		}
		return;
	}
	/* A handful of rows times B's rows: along them, unpacked. Else
	 * vectors along m (D = C^T) when m fits one panel and fills its
	 * lanes better than n would: a batch times a big weight. */
	small = m <= SMALL_M && !trans_b && n > NR;
	transposed =
		!small && m <= NR &&
		(n > NR || m * round_up(n, LANES) > n * round_up(m, LANES));
	if (!transposed) {
		op = (struct gemm_op){
			.m = m,
			.n = n,
			.k = k,
			.x = a,
			.xrs = trans_a ? 1 : lda,
			.xps = trans_a ? lda : 1,
			.y = b,
			.yps = trans_b ? 1 : ldb,
			.ycs = trans_b ? ldb : 1,
			.d = c,
			.drs = ldc,
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
			.xrs = trans_b ? ldb : 1,
			.xps = trans_b ? 1 : ldb,
			.y = a,
			.yps = trans_a ? lda : 1,
			.ycs = trans_a ? 1 : lda,
			.d = c,
			.drs = 1,
			.dcs = ldc,
		};
	}

	kc = balanced_block(k, small ? KC_SINGLE : op.n <= NR ? KC_SINGLE : KC);
	if (small) {
		floats = kc * (SMALL_M + NR);
	} else if (op.n <= NR) {
		const int64_t wpad = round_up(op.n, LANES);
		floats = kc * wpad + kc * (round_up(MC, 16) + 16);
		if (k > kc && (op.dcs != 1 || op.n != wpad)) {
			/* round_up(m, mr) rows, for any mr <= MR_MAX */
			dbuf_floats = (op.m + MR_MAX) * wpad;
		}
	} else {
		floats = kc * round_up(min64(op.n, NC), NR) +
			 kc * round_up(min64(op.m, MC), MR_MULTI);
	}
	floats += MR_MAX * NR + dbuf_floats + 64 / sizeof(float);
	/* Per call, so threads never share a buffer. Without memory, the
	 * reference loop still gives the same bits. */
	mem = malloc((size_t)floats * sizeof *mem);
	if (!mem) {
		tps_matmul_naive_ld(c, ldc, a, lda, b, ldb, m, n, k, trans_a,
				    trans_b);
		return;
	}
	/* The tile of the edges; its padding lanes are computed, never
	 * stored, but they should not start from unset memory. */
	tmp = align64(mem);
	memset(tmp, 0, MR_MAX * NR * sizeof *tmp);
	if (small) {
		gemm_small(&op, tmp + MR_MAX * NR, tmp);
	} else if (op.n <= NR) {
		/* dbuf last, so that a sanitizer sees a tile run past it */
		gemm_single(&op, tmp + MR_MAX * NR,
			    dbuf_floats ? mem + floats - dbuf_floats : NULL,
			    tmp);
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
	blocking->kc_single = KC_SINGLE;
	blocking->small_m = SMALL_M;
}
