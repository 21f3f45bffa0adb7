#include "tensor.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

struct tps_shape tps_shape_make(int ndim, const int64_t *dims)
{
	struct tps_shape s = {0};
	assert(ndim >= 0 && ndim <= TPS_MAX_DIMS);
	s.ndim = ndim;
	for (int i = 0; i < ndim; i++) {
		s.dim[i] = dims[i];
	}
	return s;
}

bool tps_shape_equal(const struct tps_shape *a, const struct tps_shape *b)
{
	if (a->ndim != b->ndim) {
		return false;
	}
	for (int i = 0; i < a->ndim; i++) {
		if (a->dim[i] != b->dim[i]) {
			return false;
		}
	}
	return true;
}

char *tps_shape_format(const struct tps_shape *shape, char *buf, size_t size)
{
	size_t used = 0;
	int n = snprintf(buf, size, "(");
	used = n > 0 ? (size_t)n : 0;
	for (int i = 0; i < shape->ndim && used < size; i++) {
		n = snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
			     (long long)shape->dim[i]);
		used += n > 0 ? (size_t)n : 0;
	}
	if (used < size) {
		snprintf(buf + used, size - used, ")");
	}
	return buf;
}

enum tps_status tps_shape_numel(const struct tps_shape *shape, int64_t *numel,
				struct tps_error *err)
{
	int64_t n = 1;
	char buf[128];
	for (int i = 0; i < shape->ndim; i++) {
		if (shape->dim[i] < 0 ||
		    __builtin_mul_overflow(n, shape->dim[i], &n) ||
		    n > TPS_MAX_ELEMENTS) {
			return tps_error_set(
				err, TPS_ERR_LIMIT,
				"tensor of shape %s has more than 2^31 "
				"elements",
				tps_shape_format(shape, buf, sizeof buf));
		}
	}
	*numel = n;
	return TPS_OK;
}

int tps_dim_normalize(int dim, int ndim)
{
	if (dim < 0) {
		dim += ndim;
	}
	return dim >= 0 && dim < ndim ? dim : -1;
}

void tps_chunk_range(int64_t n, int k, int i, int64_t *start, int64_t *length)
{
	int64_t chunk = (n + k - 1) / k;
	int64_t s = chunk * i;
	assert(k > 0 && i >= 0 && i < k);
	if (s > n) {
		s = n;
	}
	*start = s;
	*length = n - s < chunk ? n - s : chunk;
}

void tps_chunk_range_blocks(int64_t n, int64_t block, int k, int i,
			    int64_t *start, int64_t *length)
{
	int64_t s, len;
	assert(block >= 1 && n % block == 0);
	tps_chunk_range(n / block, k, i, &s, &len);
	*start = s * block;
	*length = len * block;
}

/* Tensor values: zeroed, in huge pages where the kernel gives them
 * (memory.h says why). */
static float *alloc_zeroed(int64_t numel)
{
	return tps_memory_calloc((size_t)numel, sizeof(float));
}

static void release(struct tps_tensor *t)
{
	if (t->storage == TPS_STORAGE_ZEROS && t->data) {
		tps_memory_zeros_free(t->data, (size_t)tps_tensor_numel(t) *
						       sizeof(float));
		return;
	}
	if (t->storage == TPS_STORAGE_VIEW) {
		return; /* another tensor's values */
	}
	if (t->data) {
		/* Released from the run's account (memory.h). */
		tps_memory_account_charge(-tps_tensor_numel(t) *
					  (int64_t)sizeof(float));
		free(t->data);
	}
}

/* A tensor of shape, zeroed or not: a result that the caller writes in
 * full (a matmul, a copy, an elementwise op) need not be zeroed first;
 * zeroing it would touch its memory twice. */
static enum tps_status init_values(struct tps_tensor *t,
				   const struct tps_shape *shape, bool zeroed,
				   struct tps_error *err)
{
	int64_t numel;
	float *data = NULL;
	enum tps_status st = tps_shape_numel(shape, &numel, err);
	if (st != TPS_OK) {
		return st;
	}
	if (numel > 0) {
		data = zeroed ? alloc_zeroed(numel)
			      : tps_memory_malloc((size_t)numel * sizeof *data);
		if (!data) {
			return tps_error_set(
				err, TPS_ERR_NOMEM,
				"out of memory allocating %lld floats",
				(long long)numel);
		}
		/* `tpsim run --stats`: charged to the account of the run
		 * this thread works for (memory.h), not to the process. */
		tps_memory_account_charge(numel * (int64_t)sizeof(float));
	}
	*t = (struct tps_tensor){.shape = *shape, .data = data};
	return TPS_OK;
}

enum tps_status tps_tensor_init(struct tps_tensor *t,
				const struct tps_shape *shape,
				struct tps_error *err)
{
	return init_values(t, shape, true, err);
}

enum tps_status tps_tensor_init_meta(struct tps_tensor *t,
				     const struct tps_shape *shape,
				     struct tps_error *err)
{
	/* Nothing is allocated: the limit is TPS_MAX_META_ELEMENTS. */
	int64_t n = 1;
	char buf[128];
	for (int i = 0; i < shape->ndim; i++) {
		if (shape->dim[i] < 0 ||
		    __builtin_mul_overflow(n, shape->dim[i], &n) ||
		    n > TPS_MAX_META_ELEMENTS) {
			return tps_error_set(
				err, TPS_ERR_LIMIT,
				"meta tensor of shape %s has more than 2^48 "
				"elements",
				tps_shape_format(shape, buf, sizeof buf));
		}
	}
	*t = (struct tps_tensor){.shape = *shape, .meta = true};
	return TPS_OK;
}

enum tps_status tps_tensor_init_like(struct tps_tensor *t,
				     const struct tps_shape *shape,
				     const struct tps_tensor *like,
				     struct tps_error *err)
{
	return like->meta ? tps_tensor_init_meta(t, shape, err)
			  : tps_tensor_init(t, shape, err);
}

/* init_for_overwrite for the ops that read a strided `like` row by row
 * (copies and regions). */
static enum tps_status init_for_copy(struct tps_tensor *t,
				     const struct tps_shape *shape,
				     const struct tps_tensor *like,
				     struct tps_error *err)
{
	return like->meta ? tps_tensor_init_meta(t, shape, err)
			  : init_values(t, shape, false, err);
}

/* tps_tensor_init_like for a result the caller writes in full. */
static enum tps_status init_for_overwrite(struct tps_tensor *t,
					  const struct tps_shape *shape,
					  const struct tps_tensor *like,
					  struct tps_error *err)
{
	/* Every op but the copies reads its operands as contiguous. */
	assert(like->row_stride == 0);
	return init_for_copy(t, shape, like, err);
}

void tps_tensor_free(struct tps_tensor *t)
{
	if (!t) {
		return;
	}
	release(t);
	memset(t, 0, sizeof *t);
}

int64_t tps_tensor_numel(const struct tps_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->shape.ndim; i++) {
		n *= t->shape.dim[i];
	}
	return n;
}

enum tps_status tps_tensor_copy(struct tps_tensor *dst,
				const struct tps_tensor *src,
				struct tps_error *err)
{
	struct tps_tensor t;
	int64_t n, len = tps_tensor_run_length(src);
	enum tps_status st = init_for_copy(&t, &src->shape, src, err);
	if (st != TPS_OK) {
		return st;
	}
	/* A meta or empty t has no data, and nothing to copy. */
	n = t.data ? tps_tensor_numel(src) : 0;
	for (int64_t i = 0; i < n; i += len) {
		memcpy(t.data + i, src->data + tps_tensor_offset(src, i),
		       (size_t)len * sizeof(float));
	}
	*dst = t;
	return TPS_OK;
}

int64_t tps_tensor_row_stride(const struct tps_tensor *t)
{
	if (t->row_stride) {
		return t->row_stride;
	}
	return t->shape.ndim ? t->shape.dim[t->shape.ndim - 1] : 1;
}

int64_t tps_tensor_run_length(const struct tps_tensor *t)
{
	return t->row_stride ? t->shape.dim[t->shape.ndim - 1]
			     : tps_tensor_numel(t);
}

int64_t tps_tensor_offset(const struct tps_tensor *t, int64_t i)
{
	int64_t last;
	if (!t->row_stride) {
		return i;
	}
	last = t->shape.dim[t->shape.ndim - 1];
	return i / last * t->row_stride + i % last;
}

void tps_tensor_move(struct tps_tensor *dst, struct tps_tensor *src)
{
	release(dst);
	*dst = *src;
	memset(src, 0, sizeof *src);
}

/* Views a row-major tensor as (outer, dim, inner) around one dim. */
static void split_around(const struct tps_shape *s, int dim, int64_t *outer,
			 int64_t *inner)
{
	*outer = 1;
	*inner = 1;
	for (int i = 0; i < dim; i++) {
		*outer *= s->dim[i];
	}
	for (int i = dim + 1; i < s->ndim; i++) {
		*inner *= s->dim[i];
	}
}

enum tps_status tps_tensor_narrow(struct tps_tensor *out,
				  const struct tps_tensor *src, int dim,
				  int64_t start, int64_t length,
				  struct tps_error *err)
{
	struct tps_shape shape = src->shape;
	struct tps_tensor t;
	int64_t outer, inner;
	enum tps_status st;

	assert(dim >= 0 && dim < src->shape.ndim);
	assert(start >= 0 && length >= 0 &&
	       start + length <= src->shape.dim[dim]);
	if (src->row_stride) {
		int64_t offset[TPS_MAX_DIMS] = {0}, len[TPS_MAX_DIMS];
		for (int d = 0; d < src->shape.ndim; d++) {
			len[d] = src->shape.dim[d];
		}
		offset[dim] = start;
		len[dim] = length;
		return tps_tensor_region(out, src, offset, len, err);
	}
	shape.dim[dim] = length;
	st = init_for_overwrite(&t, &shape, src, err);
	if (st != TPS_OK) {
		return st;
	}
	split_around(&src->shape, dim, &outer, &inner);
	if (t.data) {
		/* (outer, n, inner) -> (outer, length, inner) */
		int64_t n = src->shape.dim[dim];
		for (int64_t o = 0; o < outer; o++) {
			memcpy(t.data + o * length * inner,
			       src->data + (o * n + start) * inner,
			       (size_t)(length * inner) * sizeof(float));
		}
	}
	*out = t;
	return TPS_OK;
}

/* Copies the box of src at offset, of sizes length, into dst (contiguous,
 * of sizes length): one memcpy per run of the last dim, dims d..
 * stride[d]: floats from one index of dim d to the next in src (for the
 * last but one dim, a strided view's row_stride). */
static void copy_box(float *dst, const float *src, const int64_t *stride,
		     int ndim, const int64_t *offset, const int64_t *length,
		     int d, int64_t *copied)
{
	if (d == ndim - 1) {
		memcpy(dst + *copied, src + offset[d],
		       (size_t)length[d] * sizeof(float));
		*copied += length[d];
		return;
	}
	for (int64_t i = 0; i < length[d]; i++) {
		copy_box(dst, src + (offset[d] + i) * stride[d], stride, ndim,
			 offset, length, d + 1, copied);
	}
}

enum tps_status tps_tensor_region(struct tps_tensor *out,
				  const struct tps_tensor *src,
				  const int64_t *offset, const int64_t *length,
				  struct tps_error *err)
{
	struct tps_shape shape = src->shape;
	struct tps_tensor t;
	int64_t copied = 0;
	enum tps_status st;

	int64_t stride[TPS_MAX_DIMS];

	for (int d = shape.ndim - 1; d >= 0; d--) {
		assert(offset[d] >= 0 && length[d] >= 0 &&
		       offset[d] + length[d] <= src->shape.dim[d]);
		shape.dim[d] = length[d];
		stride[d] = d == shape.ndim - 1 ? 1
			    : d == shape.ndim - 2
				    ? tps_tensor_row_stride(src)
				    : stride[d + 1] * src->shape.dim[d + 1];
	}
	st = init_for_copy(&t, &shape, src, err);
	if (st != TPS_OK) {
		return st;
	}
	if (t.data) {
		if (shape.ndim == 0) {
			t.data[0] = src->data[0];
		} else {
			copy_box(t.data, src->data, stride, shape.ndim, offset,
				 length, 0, &copied);
		}
	}
	*out = t;
	return TPS_OK;
}

/* Whether the box of `length` in the first n dims of sh is one contiguous
 * stretch of them: whole in the dims after its last cut one, of length 1
 * before it. */
static bool contiguous_box(const struct tps_shape *sh, const int64_t *length,
			   int n)
{
	int c = n - 1;
	while (c >= 0 && length[c] == sh->dim[c]) {
		c--;
	}
	for (int e = 0; e < c; e++) {
		if (length[e] != 1) {
			return false;
		}
	}
	return true;
}

enum tps_status tps_tensor_view_region(struct tps_tensor *out,
				       const struct tps_tensor *src,
				       const int64_t *offset,
				       const int64_t *length,
				       struct tps_error *err)
{
	const struct tps_shape *sh = &src->shape;
	int last = sh->ndim - 1;
	int64_t start = 0, row_stride = 0;

	assert(src->row_stride == 0);
	if (src->meta || !src->data || src->storage == TPS_STORAGE_ZEROS) {
		return tps_tensor_region(out, src, offset, length, err);
	}
	/* Contiguous when the dims after the last cut one are whole and
	 * those before it of length 1; evenly spaced rows when that holds
	 * of the dims before the last, and the last is cut. */
	if (!contiguous_box(sh, length, sh->ndim)) {
		if (last < 1 || !contiguous_box(sh, length, last)) {
			return tps_tensor_region(out, src, offset, length, err);
		}
		row_stride = sh->dim[last];
		assert(row_stride <= INT32_MAX);
	}
	for (int e = 0; e < sh->ndim; e++) {
		start = start * sh->dim[e] + offset[e];
	}
	*out = (struct tps_tensor){.shape = *sh,
				   .data = src->data + start,
				   .storage = TPS_STORAGE_VIEW,
				   .row_stride = (int32_t)row_stride};
	for (int e = 0; e < sh->ndim; e++) {
		out->shape.dim[e] = length[e];
	}
	if (tps_tensor_numel(out) == 0) {
		/* as an empty tensor of its own */
		*out = (struct tps_tensor){.shape = out->shape};
	}
	return TPS_OK;
}

enum tps_status tps_tensor_init_zero_view(struct tps_tensor *t,
					  const struct tps_shape *shape,
					  struct tps_error *err)
{
	int64_t numel;
	const void *data;
	enum tps_status st = tps_shape_numel(shape, &numel, err);
	if (st != TPS_OK) {
		return st;
	}
	if (numel == 0) {
		return tps_tensor_init(t, shape, err);
	}
	data = tps_memory_zeros((size_t)numel * sizeof(float));
	if (!data) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	/* data is read-only: the struct's pointer is not, but the storage
	 * kind says so (and the mapping enforces it). */
	*t = (struct tps_tensor){.shape = *shape,
				 .data = (float *)(uintptr_t)data,
				 .storage = TPS_STORAGE_ZEROS};
	return TPS_OK;
}

bool tps_tensor_is_view(const struct tps_tensor *t)
{
	return t->storage != TPS_STORAGE_OWN;
}

enum tps_status tps_tensor_concat(struct tps_tensor *out,
				  const struct tps_tensor *parts, int n,
				  int dim, struct tps_error *err)
{
	struct tps_shape shape;
	struct tps_tensor t;
	int64_t outer, inner, total = 0, offset = 0;
	enum tps_status st;
	char a[128], b[128];

	assert(n > 0 && dim >= 0 && dim < parts[0].shape.ndim);
	shape = parts[0].shape;
	for (int p = 0; p < n; p++) {
		struct tps_shape other = parts[p].shape;
		other.dim[dim] = shape.dim[dim];
		if (!tps_shape_equal(&other, &shape)) {
			return tps_error_set(
				err, TPS_ERR_SHAPE,
				"cannot concatenate %s and %s along dim %d",
				tps_shape_format(&parts[0].shape, a, sizeof a),
				tps_shape_format(&parts[p].shape, b, sizeof b),
				dim);
		}
		total += parts[p].shape.dim[dim];
	}
	shape.dim[dim] = total;
	st = init_for_overwrite(&t, &shape, &parts[0], err);
	if (st != TPS_OK) {
		return st;
	}
	split_around(&shape, dim, &outer, &inner);
	for (int p = 0; p < n && t.data; p++) {
		int64_t len = parts[p].shape.dim[dim];
		for (int64_t o = 0; o < outer && len > 0; o++) {
			memcpy(t.data + (o * total + offset) * inner,
			       parts[p].data + o * len * inner,
			       (size_t)(len * inner) * sizeof(float));
		}
		offset += len;
	}
	*out = t;
	return TPS_OK;
}

/* Rows and the last dim of a tensor of >= 1 dims: (rows, last). */
static void rows_and_last(const struct tps_tensor *t, int64_t *rows,
			  int64_t *last)
{
	*last = t->shape.dim[t->shape.ndim - 1];
	*rows = 1;
	for (int d = 0; d + 1 < t->shape.ndim; d++) {
		*rows *= t->shape.dim[d];
	}
}

/* |v| as the bounds take it (tps_bound_magnitude's 1 |v|: the same bits,
 * NaNs too). */
static float magnitude(float v)
{
	return 1.0f * fabsf(v);
}

/* Columns of op(B) per block when B is taken by magnitude: about 4 MiB of
 * |B| at a time, whole register panels. */
static int64_t abs_block_columns(int64_t n, int64_t k)
{
	int64_t cols = ((int64_t)1 << 20) / (k > 0 ? k : 1);
	cols = cols < 64 ? 64 : cols / 64 * 64;
	return cols < n ? cols : n;
}

/*
 * c (m, n) = op(|A| or A) op(|B| or B) per abs (TPS_ABS_A, TPS_ABS_B):
 * |A| whole, as a tensor of its own; |B| a block of nb columns of op(B)
 * at a time, each block's product written into C's columns in place
 * (leading dimensions). Every C[i][j] is still one sum over all of k in
 * ascending order, so the bits are those of the product of the
 * magnitudes' tensors.
 */
static enum tps_status matmul_abs(float *c, const float *a, const float *b,
				  int64_t ldb, int64_t m, int64_t n, int64_t k,
				  bool trans_a, bool trans_b, unsigned abs,
				  struct tps_pool *pool, struct tps_error *err)
{
	struct tps_tensor ta = {0}, tb = {0};
	int64_t nb = abs & TPS_ABS_B ? abs_block_columns(n, k) : n;
	int64_t dims[1] = {m * k};
	struct tps_shape sh = tps_shape_make(1, dims);
	enum tps_status st = TPS_OK;

	if (abs & TPS_ABS_A) {
		st = init_values(&ta, &sh, false, err);
		for (int64_t i = 0; st == TPS_OK && i < m * k; i++) {
			ta.data[i] = magnitude(a[i]);
		}
		a = ta.data;
	}
	if (st == TPS_OK && (abs & TPS_ABS_B)) {
		dims[0] = nb * k;
		sh = tps_shape_make(1, dims);
		st = init_values(&tb, &sh, false, err);
	}
	for (int64_t j0 = 0; st == TPS_OK && j0 < n; j0 += nb) {
		int64_t nj = n - j0 < nb ? n - j0 : nb;
		const float *bj = trans_b ? b + j0 * ldb : b + j0;
		int64_t ldbj = ldb;
		if (abs & TPS_ABS_B) {
			/* op(B)'s columns j0..: B's rows (trans_b, nj x k) or
			 * its columns (k x nj), packed. */
			for (int64_t q = 0; trans_b && q < nj; q++) {
				for (int64_t p = 0; p < k; p++) {
					tb.data[q * k + p] =
						magnitude(bj[q * ldb + p]);
				}
			}
			for (int64_t p = 0; !trans_b && p < k; p++) {
				for (int64_t q = 0; q < nj; q++) {
					tb.data[p * nj + q] =
						magnitude(bj[p * ldb + q]);
				}
			}
			bj = tb.data;
			ldbj = trans_b ? k : nj;
		}
		tps_matmul_on_ld(pool, c + j0, n, a, trans_a ? m : k, bj, ldbj,
				 m, nj, k, trans_a, trans_b);
	}
	tps_tensor_free(&ta);
	tps_tensor_free(&tb);
	return st;
}

/* *out = a new tensor of `shape` (meta when `like` is) holding
 * op(A) op(B) of the (m, k) x (k, n) product, per tps_matmul, on the
 * magnitudes of the operands abs names. B's rows are ldb floats apart
 * (0: packed, k or n), so a strided view's values are read in place. */
static enum tps_status matmul_into(struct tps_tensor *out,
				   const struct tps_shape *shape,
				   const struct tps_tensor *like,
				   const float *a, const float *b, int64_t ldb,
				   int64_t m, int64_t n, int64_t k,
				   bool trans_a, bool trans_b, unsigned abs,
				   struct tps_pool *pool, struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st = init_for_overwrite(&t, shape, like, err);
	if (st != TPS_OK) {
		return st;
	}
	if (ldb == 0) {
		ldb = trans_b ? k : n;
	}
	if (t.data && abs) {
		st = matmul_abs(t.data, a, b, ldb, m, n, k, trans_a, trans_b,
				abs, pool, err);
	} else if (t.data) {
		tps_matmul_on_ld(pool, t.data, n, a, trans_a ? m : k, b, ldb, m,
				 n, k, trans_a, trans_b);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&t);
		return st;
	}
	*out = t;
	return TPS_OK;
}

static enum tps_status linear(struct tps_tensor *y, const struct tps_tensor *x,
			      const struct tps_tensor *w,
			      const struct tps_tensor *b, unsigned abs,
			      struct tps_pool *pool, struct tps_error *err)
{
	struct tps_shape shape;
	struct tps_tensor t;
	int64_t k, n, rows;
	enum tps_status st;
	char xs[128], ws[128];

	if (x->shape.ndim < 1 || w->shape.ndim != 2 ||
	    x->shape.dim[x->shape.ndim - 1] != w->shape.dim[1] ||
	    (b && (b->shape.ndim != 1 || b->shape.dim[0] != w->shape.dim[0]))) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"linear: input %s does not fit weight %s",
			tps_shape_format(&x->shape, xs, sizeof xs),
			tps_shape_format(&w->shape, ws, sizeof ws));
	}
	rows_and_last(x, &rows, &k);
	n = w->shape.dim[0];
	shape = x->shape;
	shape.dim[shape.ndim - 1] = n;
	/* (rows, k) (n, k)^T: k order the input features. */
	/* W (n, k), maybe a strided view (a rowwise shard): read in place. */
	st = matmul_into(&t, &shape, x, x->data, w->data,
			 tps_tensor_row_stride(w), rows, n, k, false, true, abs,
			 pool, err);
	if (st == TPS_OK && b) {
		tps_tensor_add_bias(&t, b, 1.0f);
	}
	if (st == TPS_OK) {
		*y = t;
	}
	return st;
}

enum tps_status tps_tensor_linear(struct tps_tensor *y,
				  const struct tps_tensor *x,
				  const struct tps_tensor *w,
				  const struct tps_tensor *b,
				  struct tps_pool *pool, struct tps_error *err)
{
	return linear(y, x, w, b, 0, pool, err);
}

enum tps_status tps_tensor_linear_abs(struct tps_tensor *y,
				      const struct tps_tensor *x,
				      const struct tps_tensor *w, unsigned abs,
				      struct tps_pool *pool,
				      struct tps_error *err)
{
	return linear(y, x, w, NULL, abs, pool, err);
}

enum tps_status tps_tensor_linear_backward_input_abs(
	struct tps_tensor *dx, const struct tps_tensor *dy,
	const struct tps_tensor *w, unsigned abs, struct tps_pool *pool,
	struct tps_error *err)
{
	struct tps_shape shape;
	int64_t rows, n, k;
	char a[128], b[128];

	if (dy->shape.ndim < 1 || w->shape.ndim != 2 ||
	    dy->shape.dim[dy->shape.ndim - 1] != w->shape.dim[0]) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"linear backward: gradient %s does not fit weight %s",
			tps_shape_format(&dy->shape, a, sizeof a),
			tps_shape_format(&w->shape, b, sizeof b));
	}
	rows_and_last(dy, &rows, &n);
	k = w->shape.dim[1];
	shape = dy->shape;
	shape.dim[shape.ndim - 1] = k;
	/* (rows, n) (n, k): k order n, the output features. */
	return matmul_into(dx, &shape, dy, dy->data, w->data,
			   tps_tensor_row_stride(w), rows, k, n, false, false,
			   abs, pool, err);
}

enum tps_status tps_tensor_linear_backward_input(struct tps_tensor *dx,
						 const struct tps_tensor *dy,
						 const struct tps_tensor *w,
						 struct tps_pool *pool,
						 struct tps_error *err)
{
	return tps_tensor_linear_backward_input_abs(dx, dy, w, 0, pool, err);
}

enum tps_status tps_tensor_linear_backward_weight_abs(
	struct tps_tensor *dw, const struct tps_tensor *dy,
	const struct tps_tensor *x, unsigned abs, struct tps_pool *pool,
	struct tps_error *err)
{
	int64_t rows, xrows, n, k, dims[2];
	struct tps_shape shape;
	char a[128], b[128];
	bool fit = dy->shape.ndim >= 1 && dy->shape.ndim == x->shape.ndim;

	for (int d = 0; fit && d + 1 < dy->shape.ndim; d++) {
		fit = dy->shape.dim[d] == x->shape.dim[d];
	}
	if (!fit) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"linear backward: gradient %s does not fit input %s",
			tps_shape_format(&dy->shape, a, sizeof a),
			tps_shape_format(&x->shape, b, sizeof b));
	}
	rows_and_last(dy, &rows, &n);
	rows_and_last(x, &xrows, &k);
	dims[0] = n;
	dims[1] = k;
	shape = tps_shape_make(2, dims);
	/* (rows, n)^T (rows, k): k order the rows, in row order. */
	assert(x->row_stride == 0);
	return matmul_into(dw, &shape, dy, dy->data, x->data, 0, n, k, rows,
			   true, false, abs, pool, err);
}

enum tps_status tps_tensor_linear_backward_weight(struct tps_tensor *dw,
						  const struct tps_tensor *dy,
						  const struct tps_tensor *x,
						  struct tps_pool *pool,
						  struct tps_error *err)
{
	return tps_tensor_linear_backward_weight_abs(dw, dy, x, 0, pool, err);
}

enum tps_status tps_tensor_sum_rows(struct tps_tensor *db,
				    const struct tps_tensor *dy,
				    struct tps_error *err)
{
	struct tps_tensor t;
	int64_t rows, n;
	struct tps_shape shape;
	enum tps_status st;

	assert(dy->shape.ndim >= 1);
	rows_and_last(dy, &rows, &n);
	shape = tps_shape_make(1, &n);
	st = tps_tensor_init_like(&t, &shape, dy, err); /* zeroed */
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t r = 0; r < rows && t.data; r++) {
		for (int64_t j = 0; j < n; j++) {
			t.data[j] += dy->data[r * n + j];
		}
	}
	*db = t;
	return TPS_OK;
}

void tps_tensor_add_bias(struct tps_tensor *y, const struct tps_tensor *b,
			 float scale)
{
	int64_t n = b->shape.dim[0];
	int64_t rows;
	assert(!tps_tensor_is_view(y)); /* never written */
	assert(b->shape.ndim == 1 && y->shape.ndim >= 1 &&
	       y->shape.dim[y->shape.ndim - 1] == n);
	if (n == 0 || !y->data) {
		return;
	}
	rows = tps_tensor_numel(y) / n;
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < n; j++) {
			float add = b->data[j];
			if (scale != 1.0f) {
				add = add * scale;
			}
			y->data[r * n + j] += add;
		}
	}
}

void tps_tensor_add(struct tps_tensor *dst, const struct tps_tensor *src)
{
	int64_t n = dst->data ? tps_tensor_numel(dst) : 0; /* 0: meta */
	assert(!tps_tensor_is_view(dst));		   /* never written */
	assert(tps_shape_equal(&dst->shape, &src->shape));
	assert(src->row_stride == 0);
	for (int64_t i = 0; i < n; i++) {
		dst->data[i] += src->data[i];
	}
}

void tps_tensor_max(struct tps_tensor *dst, const struct tps_tensor *src)
{
	int64_t n = dst->data ? tps_tensor_numel(dst) : 0; /* 0: meta */
	assert(!tps_tensor_is_view(dst));		   /* never written */
	assert(tps_shape_equal(&dst->shape, &src->shape));
	assert(src->row_stride == 0);
	for (int64_t i = 0; i < n; i++) {
		if (src->data[i] > dst->data[i]) {
			dst->data[i] = src->data[i];
		}
	}
}

void tps_tensor_scale(struct tps_tensor *t, float scale)
{
	int64_t n = t->data ? tps_tensor_numel(t) : 0; /* 0: meta */
	assert(!tps_tensor_is_view(t));		       /* never written */
	for (int64_t i = 0; i < n; i++) {
		t->data[i] *= scale;
	}
}

enum tps_status tps_tensor_relu(struct tps_tensor *out,
				const struct tps_tensor *x,
				struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st = init_for_overwrite(&t, &x->shape, x, err);
	int64_t n = x->meta ? 0 : tps_tensor_numel(x);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t i = 0; i < n; i++) {
		t.data[i] = x->data[i] > 0.0f ? x->data[i] : 0.0f;
	}
	*out = t;
	return TPS_OK;
}

enum tps_status tps_tensor_gelu(struct tps_tensor *out,
				const struct tps_tensor *x,
				struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st = init_for_overwrite(&t, &x->shape, x, err);
	int64_t n = x->meta ? 0 : tps_tensor_numel(x);
	if (st != TPS_OK) {
		return st;
	}
	/* gelu(v) = v/2 (1 + erf(v / sqrt 2)), evaluated in double and rounded
	 * once, so it does not depend on the float math library's rounding. */
	for (int64_t i = 0; i < n; i++) {
		double v = x->data[i];
		t.data[i] = (float)(0.5 * v *
				    (1.0 + erf(v * 0.70710678118654752440)));
	}
	*out = t;
	return TPS_OK;
}

enum tps_status tps_tensor_relu_backward(struct tps_tensor *dx,
					 const struct tps_tensor *dy,
					 const struct tps_tensor *x,
					 struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st;
	int64_t n = x->meta ? 0 : tps_tensor_numel(x);
	assert(tps_shape_equal(&dy->shape, &x->shape));
	st = init_for_overwrite(&t, &x->shape, x, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t i = 0; i < n; i++) {
		t.data[i] = x->data[i] > 0.0f ? dy->data[i] : 0.0f;
	}
	*dx = t;
	return TPS_OK;
}

enum tps_status tps_tensor_gelu_backward(struct tps_tensor *dx,
					 const struct tps_tensor *dy,
					 const struct tps_tensor *x,
					 struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st;
	int64_t n = x->meta ? 0 : tps_tensor_numel(x);
	assert(tps_shape_equal(&dy->shape, &x->shape));
	st = init_for_overwrite(&t, &x->shape, x, err);
	if (st != TPS_OK) {
		return st;
	}
	/* d/dv [v Phi(v)] = Phi(v) + v phi(v), Phi(v) = (1 + erf(v/sqrt 2))/2,
	 * phi(v) = exp(-v^2/2) / sqrt(2 pi). */
	for (int64_t i = 0; i < n; i++) {
		double v = x->data[i];
		double cdf = 0.5 * (1.0 + erf(v * 0.70710678118654752440));
		double pdf = exp(-0.5 * v * v) * 0.39894228040143267794;
		float g = (float)(cdf + v * pdf);
		t.data[i] = dy->data[i] * g;
	}
	*dx = t;
	return TPS_OK;
}

/* sigmoid(v) = 1 / (1 + exp(-v)) in double: exp(-v) overflows to inf for
 * v < -709, which gives 0, the limit. */
static double sigmoid_double(double v)
{
	return 1.0 / (1.0 + exp(-v));
}

enum tps_status tps_tensor_silu(struct tps_tensor *out,
				const struct tps_tensor *x,
				struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st = init_for_overwrite(&t, &x->shape, x, err);
	int64_t n = x->meta ? 0 : tps_tensor_numel(x);
	if (st != TPS_OK) {
		return st;
	}
	/* silu(v) = v sigmoid(v), in double and rounded once, as gelu. */
	for (int64_t i = 0; i < n; i++) {
		double v = x->data[i];
		t.data[i] = (float)(v * sigmoid_double(v));
	}
	*out = t;
	return TPS_OK;
}

enum tps_status tps_tensor_silu_backward(struct tps_tensor *dx,
					 const struct tps_tensor *dy,
					 const struct tps_tensor *x,
					 struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st;
	int64_t n = x->meta ? 0 : tps_tensor_numel(x);
	assert(tps_shape_equal(&dy->shape, &x->shape));
	st = init_for_overwrite(&t, &x->shape, x, err);
	if (st != TPS_OK) {
		return st;
	}
	/* d/dv [v s(v)] = s + v s (1 - s) = s (1 + v (1 - s)). */
	for (int64_t i = 0; i < n; i++) {
		double v = x->data[i];
		double s = sigmoid_double(v);
		float g = (float)(s * (1.0 + v * (1.0 - s)));
		t.data[i] = dy->data[i] * g;
	}
	*dx = t;
	return TPS_OK;
}

enum tps_status tps_tensor_mul(struct tps_tensor *out,
			       const struct tps_tensor *a,
			       const struct tps_tensor *b,
			       struct tps_error *err)
{
	struct tps_tensor t;
	enum tps_status st;
	int64_t n = a->meta ? 0 : tps_tensor_numel(a);
	assert(tps_shape_equal(&a->shape, &b->shape));
	st = init_for_overwrite(&t, &a->shape, a, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t i = 0; i < n; i++) {
		t.data[i] = a->data[i] * b->data[i];
	}
	*out = t;
	return TPS_OK;
}

const char *const tps_rope_style_names[TPS_ROPE_STYLE_COUNT + 1] = {
	[TPS_ROPE_ROTATE_HALF] = "rotate_half",
	[TPS_ROPE_INTERLEAVED] = "interleaved",
	[TPS_ROPE_STYLE_COUNT] = NULL,
};

enum tps_status tps_tensor_rope(struct tps_tensor *out,
				const struct tps_tensor *x, int64_t head_dim,
				int64_t pos0, double theta,
				enum tps_rope_style style, int sign,
				struct tps_error *err)
{
	const struct tps_shape *sh = &x->shape;
	int64_t F = sh->ndim ? sh->dim[sh->ndim - 1] : 0;
	int64_t S = sh->ndim > 1 ? sh->dim[sh->ndim - 2] : 0;
	int64_t rows = x->meta || F == 0 ? 0 : tps_tensor_numel(x) / F;
	int64_t half = head_dim / 2;
	struct tps_tensor t;
	enum tps_status st;
	assert(sh->ndim >= 2 && head_dim >= 2 && head_dim % 2 == 0 &&
	       F % head_dim == 0 && (sign == 1 || sign == -1));
	st = init_for_overwrite(&t, sh, x, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t r = 0; r < rows; r++) {
		double pos = (double)(pos0 + r % S);
		const float *in = x->data + r * F;
		float *o = t.data + r * F;
		for (int64_t i = 0; i < half; i++) {
			/* theta^(-2i/d), as LLaMA's inv_freq (in double) */
			double freq =
				pow(theta, -(double)(2 * i) / (double)head_dim);
			double angle = sign * pos * freq;
			double c = cos(angle), s = sin(angle);
			int64_t a = style == TPS_ROPE_INTERLEAVED ? 2 * i : i;
			int64_t b = style == TPS_ROPE_INTERLEAVED ? 2 * i + 1
								  : i + half;
			for (int64_t h = 0; h < F; h += head_dim) {
				double xa = in[h + a], xb = in[h + b];
				o[h + a] = (float)(xa * c - xb * s);
				o[h + b] = (float)(xb * c + xa * s);
			}
		}
	}
	*out = t;
	return TPS_OK;
}

bool tps_tensor_all_finite(const struct tps_tensor *t, int64_t *first_bad)
{
	int64_t n = t->meta ? 0 : tps_tensor_numel(t);
	int64_t len = tps_tensor_run_length(t);
	for (int64_t i0 = 0; i0 < n; i0 += len) {
		const float *row = t->data + tps_tensor_offset(t, i0);
		for (int64_t j = 0; j < len; j++) {
			if (!isfinite(row[j])) {
				if (first_bad) {
					*first_bad = i0 + j;
				}
				return false;
			}
		}
	}
	return true;
}
