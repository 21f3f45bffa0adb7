/*
 * tpsim tensors: dense, row-major, contiguous float32 arrays of 0..4 dims.
 *
 * A struct tps_tensor owns its data (tps_tensor_init / tps_tensor_free),
 * or is a view of another's (tps_tensor_view_region), which may be strided:
 * its rows of the last dim row_stride floats apart.
 * An empty tensor (a dim of size 0, e.g. the (0, 4) shard of an uneven
 * split) keeps its full shape and has data == NULL.
 *
 * Numerics (the contract of docs/design.md section 3):
 *  - tps_tensor_linear sums each output element over k in ascending order,
 *    starting from 0.0f, then adds the bias (if any) once, after the sum.
 *  - Element-wise ops are one float operation per element; nothing is fused
 *    (the build uses -ffp-contract=off).
 *
 * Example: y = x W^T + b with x (2, 4), W (3, 4), b (3) gives y (2, 3).
 *
 * Every op that makes a tensor makes a meta one from meta inputs, and ops
 * that change a tensor in place leave a meta one as it is.
 */
#ifndef TPSIM_TENSOR_H
#define TPSIM_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "pool.h"

#define TPS_MAX_DIMS 4
/* No tensor may hold more elements than this (docs/design.md section 8). */
#define TPS_MAX_ELEMENTS ((int64_t)1 << 31)
/* A meta tensor allocates nothing, so its global shape may be larger: the
 * logits of a large model's whole batch, (64, 2048, 50257), are 6.6e9
 * elements. 2^48 keeps bytes and flops far inside int64_t. */
#define TPS_MAX_META_ELEMENTS ((int64_t)1 << 48)

struct tps_shape {
	int ndim;		   /* 0..TPS_MAX_DIMS */
	int64_t dim[TPS_MAX_DIMS]; /* sizes, each >= 0; unused entries 0 */
};

struct tps_tensor {
	struct tps_shape shape;
	float *data; /* numel floats, row-major; NULL if empty or meta */
	/* A meta tensor has a shape and no values (PyTorch's meta device):
	 * every op on it makes a meta result without computing, so the
	 * engine can count a run's collectives and flops at any size
	 * (`tpsim comm`). */
	bool meta;
	/* Where data lives: the tensor's own block (freed with it, charged
	 * to the run's account), a block of another tensor's (a view:
	 * tps_tensor_view_region; that tensor must outlive it), or a
	 * read-only mapping of zeros that holds no memory
	 * (tps_tensor_init_zero_view). Views and zero views are never
	 * written: the in-place ops assert it, and a write to zeros faults.
	 * An enum tps_storage in one byte, and row_stride in four: a
	 * symbolic GPT-3 run holds millions of tensors, 56 bytes each. */
	uint8_t storage;
	/* 0: contiguous. Else a view whose rows (of the last dim) are
	 * row_stride floats apart, the rows themselves evenly spaced: a
	 * column block of a wider matrix, such as a rowwise shard(1) of a
	 * weight (tps_tensor_view_region). Only what reads through
	 * tps_tensor_row_stride takes one: the GEMM's operands, copies,
	 * regions, the trace's values and summaries (tensor.c asserts the
	 * rest is given contiguous tensors). Fits: a strided view has two
	 * rows or more of at most TPS_MAX_ELEMENTS / 2 floats. */
	int32_t row_stride;
};
enum tps_storage { TPS_STORAGE_OWN = 0, TPS_STORAGE_VIEW, TPS_STORAGE_ZEROS };

/* Builds a shape from ndim sizes. Asserts ndim <= TPS_MAX_DIMS. */
struct tps_shape tps_shape_make(int ndim, const int64_t *dims);
bool tps_shape_equal(const struct tps_shape *a, const struct tps_shape *b);

/* Number of elements, overflow-checked against TPS_MAX_ELEMENTS.
 * On error TPS_ERR_LIMIT naming the shape; *numel untouched. */
enum tps_status tps_shape_numel(const struct tps_shape *shape, int64_t *numel,
				struct tps_error *err);

/* Formats "(2, 4)" into buf (always NUL-terminated). Returns buf. */
char *tps_shape_format(const struct tps_shape *shape, char *buf, size_t size);

/* Normalises a possibly negative dim index (-1 = last) against ndim.
 * Returns -1 if it is out of range. */
int tps_dim_normalize(int dim, int ndim);

/*
 * The torch.chunk / DTensor split rule: n elements over k shards give shards
 * of ceil(n/k), the trailing ones short or empty (13 over 6: 3,3,3,3,1,0).
 * Sets the start and length of shard i (0 <= i < k).
 */
void tps_chunk_range(int64_t n, int k, int i, int64_t *start, int64_t *length);

/*
 * The chunk rule in whole blocks of `block` elements (attention heads of
 * head_dim features): the n / block blocks are chunked over k shards by
 * tps_chunk_range, and start and length are in elements. 5 heads of 2 over
 * 2 shards: blocks 3,2 -> elements [0,6) and [6,10); 2 blocks of 3 over 3:
 * 3,3,0. block 1 is tps_chunk_range. Asserts block >= 1 and n a multiple of
 * block (callers with user input check first).
 */
void tps_chunk_range_blocks(int64_t n, int64_t block, int k, int i,
			    int64_t *start, int64_t *length);

/* Allocates a zero-filled tensor. On error (limit, memory) *t is untouched. */
enum tps_status tps_tensor_init(struct tps_tensor *t,
				const struct tps_shape *shape,
				struct tps_error *err);
/* A meta tensor of the shape (no values), of at most TPS_MAX_META_ELEMENTS
 * elements. On error (limit) *t untouched. */
enum tps_status tps_tensor_init_meta(struct tps_tensor *t,
				     const struct tps_shape *shape,
				     struct tps_error *err);
/* tps_tensor_init, or tps_tensor_init_meta when `like` is meta. */
enum tps_status tps_tensor_init_like(struct tps_tensor *t,
				     const struct tps_shape *shape,
				     const struct tps_tensor *like,
				     struct tps_error *err);
/* Frees the data and resets t to an empty 0-dim shape. NULL is a no-op. */
void tps_tensor_free(struct tps_tensor *t);
/* Element count of a valid tensor (validated at init, cannot overflow). */
int64_t tps_tensor_numel(const struct tps_tensor *t);

/* Tensor values are charged to the calling thread's memory account, the
 * run's (memory.h: tps_memory_account_bind), when they are allocated and
 * released when they are freed. */
/* dst = a new copy of src. */
enum tps_status tps_tensor_copy(struct tps_tensor *dst,
				const struct tps_tensor *src,
				struct tps_error *err);
/* Replaces dst's contents by src's, freeing dst's old data; src is left empty.
 * Never fails. */
void tps_tensor_move(struct tps_tensor *dst, struct tps_tensor *src);

/* out = a copy of the box src[offset[0]:offset[0]+length[0], ...], one
 * offset and length per dim (each within src's size). */
enum tps_status tps_tensor_region(struct tps_tensor *out,
				  const struct tps_tensor *src,
				  const int64_t *offset, const int64_t *length,
				  struct tps_error *err);

/* out = a copy of src[..., start:start+length, ...] along dim. */
enum tps_status tps_tensor_narrow(struct tps_tensor *out,
				  const struct tps_tensor *src, int dim,
				  int64_t start, int64_t length,
				  struct tps_error *err);
/*
 * tps_tensor_region without a copy where the region is one contiguous
 * stretch of src (whole in the dims after its last cut one, of length 1
 * before it; or all of src), or evenly spaced rows of it (a cut in the
 * last dim alone, the rows before it one contiguous stretch: a strided
 * view, row_stride the last dim of src): out is then a view of src's values
 * (shares them, never writes them), else a copy. Parameters' shards and
 * replicas are views of the global parameter this way (issue 22): the
 * reference and the ranks read the same memory. src is contiguous.
 */
enum tps_status tps_tensor_view_region(struct tps_tensor *out,
				       const struct tps_tensor *src,
				       const int64_t *offset,
				       const int64_t *length,
				       struct tps_error *err);
/*
 * A tensor of shape whose values are all +0.0f and hold no memory: a
 * private read-only mapping that the kernel backs with its zero page
 * until someone writes, which faults. For a value that is 0 and stays 0
 * (an inference run's parameters' error bounds), so that it costs neither
 * memory nor a first touch. Not charged to the run's account.
 */
enum tps_status tps_tensor_init_zero_view(struct tps_tensor *t,
					  const struct tps_shape *shape,
					  struct tps_error *err);
/* Whether t's values are shared or read-only (a view or zero view). */
bool tps_tensor_is_view(const struct tps_tensor *t);
/* Floats from the start of one row (of the last dim) to the next: the
 * last dim's size, or a strided view's row_stride. Element i of t is at
 * data[tps_tensor_offset(t, i)]. */
int64_t tps_tensor_row_stride(const struct tps_tensor *t);
int64_t tps_tensor_offset(const struct tps_tensor *t, int64_t i);
/* Elements per contiguous run of t's values: all of them, or one row of a
 * strided view. Reading t in element order is a loop over runs:
 *   for (i = 0; i < numel; i += len) run = data + tps_tensor_offset(t, i) */
int64_t tps_tensor_run_length(const struct tps_tensor *t);

/* out = concatenation of parts[0..n) along dim (other dims must agree). */
enum tps_status tps_tensor_concat(struct tps_tensor *out,
				  const struct tps_tensor *parts, int n,
				  int dim, struct tps_error *err);

/*
 * The GEMM, one kernel for every matmul tpsim does:
 *
 *   C (m, n) = op(A) op(B),  op(X) = X, or X^T when its trans flag is set
 *   trans_a false: A is (m, k), row-major;  true: A is (k, m)
 *   trans_b false: B is (k, n);             true: B is (n, k)
 *
 * The contract (docs/design.md section 3): every C[i][j] starts from 0.0f and
 * adds op(A)[i][p] * op(B)[p][j] for p = 0, 1, ..., k-1 in ascending order,
 * one rounded product and one rounded sum at a time (no FMA). The k of
 * each use, so the order is plain:
 *
 *   forward  y  = x W^T   A = x (rows, in),    B = W (out, in), trans_b
 *                         k = in features
 *   input    dx = dy W    A = dy (rows, out),  B = W (out, in)
 *                         k = out features
 *   weight   dW = dy^T x  A = dy (rows, out), trans_a, B = x (rows, in)
 *                         k = rows: the batch (and seq) in row order
 *
 * tps_matmul_naive computes the same sums one element at a time; the
 * kernels are tested against it bit for bit. c must not overlap a or b.
 *
 * tps_matmul (src/tensor/tensor_gemm.c, src/tensor/tensor_gemm_kernel.c) is blocked for
 * the caches and registers and vectorised across output elements, never
 * across k, so each lane does the naive sequence. It is compiled once per
 * instruction set (the variants below) and uses the best one the CPU
 * runs, or the one tps_matmul_variant_use chose (main() does, from the
 * environment variable TPSIM_GEMM; the library reads no environment).
 * Every variant gives the same bits,
 * for all four flag combinations (trans_a && trans_b, unused in tpsim so
 * far, included). Calls share no buffer (only the variant choice is
 * cached, atomically), so threads may call it at once: packing buffers
 * are allocated per call, and if that fails the naive loop runs instead.
 */
void tps_matmul(float *c, const float *a, const float *b, int64_t m, int64_t n,
		int64_t k, bool trans_a, bool trans_b);
void tps_matmul_naive(float *c, const float *a, const float *b, int64_t m,
		      int64_t n, int64_t k, bool trans_a, bool trans_b);

/*
 * The same with leading dimensions, as BLAS's sgemm takes them: row i of
 * C starts at c + i * ldc, row r of A as stored (m rows, or k when
 * trans_a) at a + r * lda, row r of B as stored at b + r * ldb; each at
 * least its stored row length. So a block of a bigger row-major matrix (a
 * head's columns of q, a rank's columns of a weight) is an operand in
 * place. The same sums in the same order: strides change no bit.
 */
void tps_matmul_ld(float *c, int64_t ldc, const float *a, int64_t lda,
		   const float *b, int64_t ldb, int64_t m, int64_t n, int64_t k,
		   bool trans_a, bool trans_b);
void tps_matmul_naive_ld(float *c, int64_t ldc, const float *a, int64_t lda,
			 const float *b, int64_t ldb, int64_t m, int64_t n,
			 int64_t k, bool trans_a, bool trans_b);

/*
 * tps_matmul on the pool's threads: C is cut into blocks of rows or of
 * columns, each computed by one thread as an ordinary tps_matmul, so every
 * element's sum is the same as tps_matmul's (same order, one thread). NULL
 * pool, small products, or a call from inside a pool item: tps_matmul.
 */
void tps_matmul_on(struct tps_pool *pool, float *c, const float *a,
		   const float *b, int64_t m, int64_t n, int64_t k,
		   bool trans_a, bool trans_b);
/* tps_matmul_on with leading dimensions (tps_matmul_ld). */
void tps_matmul_on_ld(struct tps_pool *pool, float *c, int64_t ldc,
		      const float *a, int64_t lda, const float *b, int64_t ldb,
		      int64_t m, int64_t n, int64_t k, bool trans_a,
		      bool trans_b);

/*
 * The GEMM's variants, for tests and benchmarks. Index i is 0..count-1 in
 * the order generic, avx2, avx512 on every build; a variant this build did
 * not compile (not x86) runs nowhere.
 */
#define TPS_MATMUL_CPU_AVX2    1u /* features, as tps_matmul_cpu_features */
#define TPS_MATMUL_CPU_AVX512F 2u
int tps_matmul_variant_count(void);
/* "generic", "avx2", "avx512"; NULL when i is out of range. */
const char *tps_matmul_variant_name(int i);
/* The TPS_MATMUL_CPU_* features of this CPU and OS. */
unsigned tps_matmul_cpu_features(void);
/* Whether variant i is compiled in and needs no more than `features`
 * (false when i is out of range). */
bool tps_matmul_variant_runs_on(int i, unsigned features);
/* tps_matmul_variant_runs_on(i, tps_matmul_cpu_features()). */
bool tps_matmul_variant_supported(int i);
/* The variant named `request` (a TPSIM_GEMM value; NULL: none) on a CPU
 * with `features`: the one named if it runs there, else the last
 * (fastest) one that runs. */
int tps_matmul_variant_pick(const char *request, unsigned features);
/* The variant tps_matmul uses in this process: the one last given to
 * tps_matmul_variant_use, else tps_matmul_variant_pick(NULL, this CPU's
 * features). */
int tps_matmul_variant_active(void);
/* Makes tps_matmul use variant i, which must be supported (asserted),
 * from now on in the whole process: a process-level choice, for main() to
 * make once (from TPSIM_GEMM) before any run starts. Since every variant
 * gives the same bits, a run that is going on when it changes writes the
 * same trace. */
void tps_matmul_variant_use(int i);
/* tps_matmul with variant i, which must be supported (asserted). */
void tps_matmul_variant(int i, float *c, const float *a, const float *b,
			int64_t m, int64_t n, int64_t k, bool trans_a,
			bool trans_b);
void tps_matmul_variant_ld(int i, float *c, int64_t ldc, const float *a,
			   int64_t lda, const float *b, int64_t ldb, int64_t m,
			   int64_t n, int64_t k, bool trans_a, bool trans_b);

/* A variant's blocking, so tests can reach every edge of it, in terms of
 * the kernels' D = X Y (D is C, or C^T for a batch-sized m; see
 * tensor_gemm_kernel.c): vectors of `lanes` floats; register tiles of mr
 * rows by nr columns; p in blocks of kc (split evenly), X in blocks of mc
 * rows, Y in blocks of nc columns; p blocks of kc_single when all of D's
 * columns fit one tile (<= nr); B's rows read unpacked when m <= small_m
 * and B is not transposed. */
struct tps_matmul_blocking {
	int lanes, mr, nr, small_m;
	int64_t kc, mc, nc, kc_single;
};
/* Fills *blocking for variant i (compiled in, asserted). */
void tps_matmul_variant_blocking(int i, struct tps_matmul_blocking *blocking);

/*
 * y = x W^T (+ b).  x: (..., k), W: (n, k), b: (n) or NULL -> y: (..., n).
 * y[r, j] = (sum over i = 0..k-1 ascending of x[r, i] * W[j, i]) + b[j].
 * TPS_ERR_SHAPE when the shapes do not fit. The matmuls here and below run
 * on pool (tps_matmul_on; NULL: the caller's thread), the same bytes.
 */
enum tps_status tps_tensor_linear(struct tps_tensor *y,
				  const struct tps_tensor *x,
				  const struct tps_tensor *w,
				  const struct tps_tensor *b,
				  struct tps_pool *pool, struct tps_error *err);

/*
 * The backward of y = x W^T + b (tps_matmul's "input" and "weight" uses):
 *   dx = dy W     dy (..., n), W (n, k) -> dx (..., k); sums over n
 *   dW = dy^T x   dy (..., n), x (..., k), same leading dims -> (n, k);
 *                 sums over the rows (leading dims flattened) in order
 *   db = sum_rows dy   (..., n) -> (n): db[j] = sum over rows r
 *                 ascending of dy[r, j], from 0.0f
 * TPS_ERR_SHAPE when the shapes do not fit.
 */
enum tps_status tps_tensor_linear_backward_input(struct tps_tensor *dx,
						 const struct tps_tensor *dy,
						 const struct tps_tensor *w,
						 struct tps_pool *pool,
						 struct tps_error *err);
enum tps_status tps_tensor_linear_backward_weight(struct tps_tensor *dw,
						  const struct tps_tensor *dy,
						  const struct tps_tensor *x,
						  struct tps_pool *pool,
						  struct tps_error *err);
/*
 * The same three products on the magnitudes of the operands `abs` names
 * (TPS_ABS_A: the first, x or dy; TPS_ABS_B: the second, W or x), as the
 * error bounds take them (op(|A|, |B|), bound.h): the bits of the plain
 * call on tensors of |values| (tps_bound_magnitude's), but a second
 * operand taken by magnitude is read a block of columns at a time, so
 * |W| is never whole in memory. No bias.
 */
enum { TPS_ABS_A = 1u, TPS_ABS_B = 2u };
enum tps_status tps_tensor_linear_abs(struct tps_tensor *y,
				      const struct tps_tensor *x,
				      const struct tps_tensor *w, unsigned abs,
				      struct tps_pool *pool,
				      struct tps_error *err);
enum tps_status tps_tensor_linear_backward_input_abs(
	struct tps_tensor *dx, const struct tps_tensor *dy,
	const struct tps_tensor *w, unsigned abs, struct tps_pool *pool,
	struct tps_error *err);
enum tps_status tps_tensor_linear_backward_weight_abs(
	struct tps_tensor *dw, const struct tps_tensor *dy,
	const struct tps_tensor *x, unsigned abs, struct tps_pool *pool,
	struct tps_error *err);
enum tps_status tps_tensor_sum_rows(struct tps_tensor *db,
				    const struct tps_tensor *dy,
				    struct tps_error *err);

/* y[..., j] += scale * b[j] for a (..., n) tensor and an (n) bias. With scale
 * 1 this is the bias add; partial_split uses 1/N. Shapes are asserted. */
void tps_tensor_add_bias(struct tps_tensor *y, const struct tps_tensor *b,
			 float scale);
/* dst += src, same shape (asserted). */
void tps_tensor_add(struct tps_tensor *dst, const struct tps_tensor *src);
/* dst = max(dst, src) element-wise, same shape (asserted). */
void tps_tensor_max(struct tps_tensor *dst, const struct tps_tensor *src);
/* t *= scale. */
void tps_tensor_scale(struct tps_tensor *t, float scale);

/* out = relu(x) / gelu(x) (the erf form, as torch's default) / silu(x)
 * (x sigmoid(x), nn.SiLU), same shape. */
enum tps_status tps_tensor_relu(struct tps_tensor *out,
				const struct tps_tensor *x,
				struct tps_error *err);
enum tps_status tps_tensor_gelu(struct tps_tensor *out,
				const struct tps_tensor *x,
				struct tps_error *err);
enum tps_status tps_tensor_silu(struct tps_tensor *out,
				const struct tps_tensor *x,
				struct tps_error *err);

/*
 * The backward of the activations, element-wise, same shape (asserted):
 *   relu  dx = dy where x > 0, else 0 (PyTorch's threshold_backward)
 *   gelu  dx = dy * g, g = Phi(x) + x phi(x) (the erf form's derivative)
 *         evaluated in double and rounded once to float
 *   silu  dx = dy * g, g = s (1 + x (1 - s)), s = sigmoid(x), the same way
 */
enum tps_status tps_tensor_relu_backward(struct tps_tensor *dx,
					 const struct tps_tensor *dy,
					 const struct tps_tensor *x,
					 struct tps_error *err);
enum tps_status tps_tensor_gelu_backward(struct tps_tensor *dx,
					 const struct tps_tensor *dy,
					 const struct tps_tensor *x,
					 struct tps_error *err);
enum tps_status tps_tensor_silu_backward(struct tps_tensor *dx,
					 const struct tps_tensor *dy,
					 const struct tps_tensor *x,
					 struct tps_error *err);

/* out = a * b element-wise (the Hadamard product), same shape (asserted). */
enum tps_status tps_tensor_mul(struct tps_tensor *out,
			       const struct tps_tensor *a,
			       const struct tps_tensor *b,
			       struct tps_error *err);

/* Which features of a head rotary position embeddings pair
 * (tps_tensor_rope). */
enum tps_rope_style {
	/* i with i + d/2: LLaMA as Hugging Face's transformers writes it
	 * (rotate_half), GPT-NeoX */
	TPS_ROPE_ROTATE_HALF,
	/* 2i with 2i + 1: the RoFormer paper's and Meta's reference
	 * llama's (complex multiplication), GPT-J */
	TPS_ROPE_INTERLEAVED,
	TPS_ROPE_STYLE_COUNT
};

/*
 * Rotary position embeddings (RoFormer; LLaMA) over x (..., S, F), F a
 * multiple of the even head_dim d (asserted): the rows along dim -2 are
 * positions pos0, pos0 + 1, ..., pos0 + S - 1 (pos0: where a shard of the
 * sequence starts; every leading index restarts at pos0). In each head,
 * the pair (a, b) of frequency index i in [0, d/2) (a = i, b = i + d/2
 * rotate_half; a = 2i, b = 2i + 1 interleaved) turns by
 *
 *   angle = sign pos theta^(-2i/d)
 *   y_a = x_a cos(angle) - x_b sin(angle)
 *   y_b = x_b cos(angle) + x_a sin(angle)
 *
 * with theta^(-2i/d), the angle, its cos and sin and each y in double,
 * y rounded once to float. sign is 1 (forward) or -1: the rotation's
 * transpose, its backward (dx = R^T dy). Same shape; a meta x gives a
 * meta out. On error *out is untouched.
 */
enum tps_status tps_tensor_rope(struct tps_tensor *out,
				const struct tps_tensor *x, int64_t head_dim,
				int64_t pos0, double theta,
				enum tps_rope_style style, int sign,
				struct tps_error *err);

/* The names of enum tps_rope_style, as the config writes them
 * ("rotate_half", "interleaved"), then NULL (tps_name_index's lists end
 * with one). */
extern const char *const tps_rope_style_names[TPS_ROPE_STYLE_COUNT + 1];

/* True when every element is finite; else sets *first_bad to its index. */
bool tps_tensor_all_finite(const struct tps_tensor *t, int64_t *first_bad);

#endif
