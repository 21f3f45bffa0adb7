#include "comm.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "memory.h"

const char *tps_comm_op_name(enum tps_comm_op op)
{
	switch (op) {
	case TPS_COMM_ALL_GATHER: return "all_gather";
	case TPS_COMM_ALL_REDUCE: return "all_reduce";
	case TPS_COMM_REDUCE_SCATTER: return "reduce_scatter";
	case TPS_COMM_BROADCAST: return "broadcast";
	case TPS_COMM_SCATTER: return "scatter";
	case TPS_COMM_ALL_TO_ALL: return "all_to_all";
	}
	return "?";
}

const char *tps_reduce_op_name(enum tps_reduce_op op)
{
	switch (op) {
	case TPS_REDUCE_SUM: return "sum";
	case TPS_REDUCE_AVG: return "avg";
	case TPS_REDUCE_MAX: return "max";
	}
	return "?";
}

/*
 * Scratch space for one collective: the new buffer of every rank and the
 * members of the group being processed. New buffers are built here and moved
 * into `locals` only when every group succeeded, so an error leaves the
 * callers' buffers untouched.
 */
struct comm_run {
	const struct tps_mesh *mesh;
	unsigned mask;
	int n; /* group size */
	int groups;
	int *members;		/* n ranks of the current group */
	struct tps_tensor *out; /* world_size new buffers */
	int64_t bytes;		/* largest bytes_per_rank over groups */
	/* NULL, or each group's reduction (reduce_scatter's): where
	 * ordered_gather finds them instead of out[first member]. */
	struct tps_tensor *full;
	/* A reduction under a backend: this process reduces its members'
	 * chunks alone (ordered_scatter). */
	bool ordered;
};

/* Under a backend (backend.h), process p needs rank r's buffer when r's
 * group has a member p holds. */
static bool group_needs(const void *ctx, const struct tps_mesh *mesh, int p,
			int r)
{
	const struct comm_run *run = ctx;
	int g = tps_mesh_group_index(mesh, run->mask, r);
	tps_mesh_group_members(mesh, run->mask, g, run->members);
	for (int i = 0; i < run->n; i++) {
		if (tps_mesh_holder(mesh, run->members[i]) == p) {
			return true;
		}
	}
	return false;
}

/* Starts a collective on locals. Under a backend, the buffers of the
 * groups of this process's ranks are fetched first, but for a reduction,
 * which moves its addends itself (run->ordered: ordered_scatter). */
static enum tps_status run_begin(struct comm_run *run,
				 const struct tps_mesh *mesh, unsigned mask,
				 struct tps_tensor *locals, bool reduction,
				 struct tps_error *err)
{
	enum tps_status st;
	memset(run, 0, sizeof *run);
	run->mesh = mesh;
	run->mask = mask;
	run->n = tps_mesh_group_size(mesh, mask);
	run->groups = tps_mesh_group_count(mesh, mask);
	run->members = calloc((size_t)run->n, sizeof *run->members);
	run->out =
		tps_memory_calloc((size_t)mesh->world_size, sizeof *run->out);
	if (!run->members || !run->out) {
		free(run->members);
		free(run->out);
		st = tps_error_set(err, TPS_ERR_NOMEM,
				   "out of memory in a collective");
		/* Every process still reaches the exchange. */
		return tps_backend_agree(mesh, st, err);
	}
	run->ordered = reduction && mesh->backend &&
		       !tps_mesh_locals_meta(mesh, locals);
	st = reduction ? TPS_OK
		       : tps_backend_fetch(mesh, locals, group_needs, run,
					   TPS_TRAFFIC_COLLECTIVE, err);
	if (st != TPS_OK) {
		free(run->members);
		free(run->out);
	}
	return st;
}

/* Moves the new buffers in on success, frees them on failure. */
static enum tps_status run_end(struct comm_run *run, struct tps_tensor *locals,
			       enum tps_status st, enum tps_comm_op op,
			       struct tps_comm_report *report)
{
	for (int r = 0; r < run->mesh->world_size; r++) {
		if (st == TPS_OK) {
			tps_tensor_move(&locals[r], &run->out[r]);
		} else {
			tps_tensor_free(&run->out[r]);
		}
	}
	/* The other processes' ranks: shapes only again. */
	tps_backend_drop(run->mesh, locals);
	if (st == TPS_OK && report) {
		report->op = op;
		report->mask = run->mask;
		report->group_size = run->n;
		report->bytes_per_rank = run->n > 1 ? run->bytes : 0;
	}
	free(run->members);
	free(run->out);
	return st;
}

static void note_bytes(struct comm_run *run, int64_t bytes)
{
	if (bytes > run->bytes) {
		run->bytes = bytes;
	}
}

/* out[r] = a copy of src; only its shape where another process holds r
 * (backend.h): that process makes the values. */
static enum tps_status result_copy(struct comm_run *run, int r,
				   const struct tps_tensor *src,
				   struct tps_error *err)
{
	if (!tps_mesh_holds(run->mesh, r)) {
		return tps_tensor_init_meta(&run->out[r], &src->shape, err);
	}
	return tps_tensor_copy(&run->out[r], src, err);
}

/* out[r] = src narrowed to [start, start + len) along dim; only the
 * shape where another process holds r (see result_copy). */
static enum tps_status result_narrow(struct comm_run *run, int r,
				     const struct tps_tensor *src, int dim,
				     int64_t start, int64_t len,
				     struct tps_error *err)
{
	if (!tps_mesh_holds(run->mesh, r)) {
		struct tps_shape shape = src->shape;
		shape.dim[dim] = len;
		return tps_tensor_init_meta(&run->out[r], &shape, err);
	}
	return tps_tensor_narrow(&run->out[r], src, dim, start, len, err);
}

/*
 * The reductions under a backend (backend.h), with the ring's bytes.
 * Member j of a group of n reduces the flat chunk j of the buffer (ceil(S
 * / n) elements, the ring formula's chunk): every other member's process
 * sends it that chunk of its addend (ordered_scatter); it adds the n
 * addends in ascending group order with reduce_group, the arithmetic of
 * the one-process run, element by element; and sends the reduced chunk to
 * every other process of the group (ordered_gather). Each process sends
 * (n - 1) / n of the buffer each way, as a ring all_reduce; no MPI
 * reduction adds anything, so the bytes are those of one process.
 */
static void flat_chunk(int64_t size, int n, int j, int64_t *lo, int64_t *len)
{
	int64_t c = (size + n - 1) / n;
	int64_t end = c * (j + 1) < size ? c * (j + 1) : size;
	*lo = c * j < size ? c * j : size;
	*len = end - *lo;
}

static bool group_here(const struct tps_mesh *mesh, const int *members, int n)
{
	for (int i = 0; i < n; i++) {
		if (tps_mesh_holds(mesh, members[i])) {
			return true;
		}
	}
	return false;
}

/* Phase 1: the other processes' addends arrive, each as the chunks this
 * process's members reduce, into zeroed buffers of their shapes (the rest
 * of them stays zero: the sums there are not used). st: the status so
 * far, agreed on before the exchange. */
static enum tps_status ordered_scatter(struct comm_run *run,
				       struct tps_tensor *locals,
				       enum tps_status st,
				       struct tps_error *err)
{
	const struct tps_mesh *mesh = run->mesh;
	int n = run->n, world = mesh->world_size;
	int me = mesh->backend->process, *m = run->members;
	size_t k = 0;
	struct tps_transfer *list =
		malloc(2 * (size_t)world * (size_t)n * sizeof *list);
	if (!list && st == TPS_OK) {
		st = tps_error_set(err, TPS_ERR_NOMEM,
				   "out of memory in a collective");
	}
	for (int g = 0; st == TPS_OK && g < run->groups; g++) {
		int64_t size;
		tps_mesh_group_members(mesh, run->mask, g, m);
		if (!group_here(mesh, m, n)) {
			continue;
		}
		size = tps_tensor_numel(&locals[m[0]]);
		for (int i = 0; i < n && st == TPS_OK; i++) {
			struct tps_shape shape = locals[m[i]].shape;
			if (locals[m[i]].meta) {
				st = tps_tensor_init(&locals[m[i]], &shape,
						     err);
			}
		}
		for (int i = 0; i < n && st == TPS_OK; i++) {
			int from = tps_mesh_holder(mesh, m[i]);
			for (int j = 0; j < n; j++) {
				int to = tps_mesh_holder(mesh, m[j]);
				int64_t lo, len;
				flat_chunk(size, n, j, &lo, &len);
				if (from == to || len == 0 ||
				    (from != me && to != me) ||
				    tps_tensor_numel(&locals[m[i]]) != size) {
					continue;
				}
				list[k++] = (struct tps_transfer){
					from == me ? to : from,
					m[i] * world + m[j],
					locals[m[i]].data + lo, len,
					from == me};
			}
		}
	}
	st = tps_backend_exchange(mesh, st, list, k, TPS_TRAFFIC_COLLECTIVE,
				  err);
	free(list);
	return st;
}

/* Phase 2: each reduced chunk goes to every other process of its group,
 * once, into that process's copy of the reduction. */
static enum tps_status ordered_gather(struct comm_run *run, enum tps_status st,
				      struct tps_error *err)
{
	const struct tps_mesh *mesh = run->mesh;
	int n = run->n, me = mesh->backend->process, *m = run->members;
	size_t k = 0;
	struct tps_transfer *list =
		malloc(2 * (size_t)mesh->world_size * (size_t)n * sizeof *list);
	if (!list && st == TPS_OK) {
		st = tps_error_set(err, TPS_ERR_NOMEM,
				   "out of memory in a collective");
	}
	for (int g = 0; st == TPS_OK && g < run->groups; g++) {
		struct tps_tensor *acc;
		int64_t size;
		tps_mesh_group_members(mesh, run->mask, g, m);
		if (!group_here(mesh, m, n)) {
			continue;
		}
		acc = run->full ? &run->full[g] : &run->out[m[0]];
		size = tps_tensor_numel(acc);
		for (int j = 0; j < n; j++) {
			int from = tps_mesh_holder(mesh, m[j]);
			int64_t lo, len;
			flat_chunk(size, n, j, &lo, &len);
			for (int i = 0; i < n && len > 0; i++) {
				int to = tps_mesh_holder(mesh, m[i]);
				bool again = false;
				for (int e = 0; e < i; e++) {
					again = again ||
						tps_mesh_holder(mesh, m[e]) ==
							to;
				}
				if (to == from || again ||
				    (from != me && to != me)) {
					continue;
				}
				list[k++] = (struct tps_transfer){
					from == me ? to : from, m[j],
					acc->data + lo, len, from == me};
			}
		}
	}
	st = tps_backend_exchange(mesh, st, list, k, TPS_TRAFFIC_COLLECTIVE,
				  err);
	free(list);
	return st;
}

/* Elements of a shape excluding dim d (the "inner rows" of a shard). */
static int64_t numel_without(const struct tps_shape *s, int d)
{
	int64_t n = 1;
	for (int i = 0; i < s->ndim; i++) {
		if (i != d) {
			n *= s->dim[i];
		}
	}
	return n;
}

static enum tps_status check_dim(const struct tps_tensor *t, int dim,
				 const char *what, struct tps_error *err)
{
	if (dim < 0 || dim >= t->shape.ndim) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"%s: tensor dim %d out of range for a %d-dim tensor",
			what, dim, t->shape.ndim);
	}
	return TPS_OK;
}

/* A chunking in whole blocks needs the dim to be a whole number of them. */
static enum tps_status check_blocks(const struct tps_tensor *t, int dim,
				    int64_t block, const char *what,
				    struct tps_error *err)
{
	assert(block >= 1);
	if (t->shape.dim[dim] % block != 0) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "%s: tensor dim %d has %lld elements, not "
				     "a whole number of blocks of %lld",
				     what, dim, (long long)t->shape.dim[dim],
				     (long long)block);
	}
	return TPS_OK;
}

enum tps_status tps_comm_all_gather(const struct tps_mesh *mesh, unsigned mask,
				    struct tps_tensor *locals, int tensor_dim,
				    struct tps_comm_report *report,
				    struct tps_error *err)
{
	struct comm_run run;
	struct tps_tensor *parts = NULL;
	enum tps_status st = run_begin(&run, mesh, mask, locals, false, err);
	if (st != TPS_OK) {
		return st;
	}
	parts = calloc((size_t)run.n, sizeof *parts);
	if (!parts) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		int64_t largest = 0;
		tps_mesh_group_members(mesh, mask, g, run.members);
		st = check_dim(&locals[run.members[0]], tensor_dim,
			       "all_gather", err);
		for (int i = 0; i < run.n && st == TPS_OK; i++) {
			const struct tps_tensor *t = &locals[run.members[i]];
			/* Views of the members' buffers, not copies. */
			parts[i] = *t;
			if (t->shape.dim[tensor_dim] > largest) {
				largest = t->shape.dim[tensor_dim];
			}
		}
		if (st != TPS_OK) {
			break;
		}
		st = tps_tensor_concat(&run.out[run.members[0]], parts, run.n,
				       tensor_dim, err);
		for (int i = 1; i < run.n && st == TPS_OK; i++) {
			st = result_copy(&run, run.members[i],
					 &run.out[run.members[0]], err);
		}
		note_bytes(&run,
			   (int64_t)(run.n - 1) * largest *
				   numel_without(&parts[0].shape, tensor_dim) *
				   4);
	}
out:
	free(parts);
	return run_end(&run, locals, st, TPS_COMM_ALL_GATHER, report);
}

/* out = the reduction of the group's buffers (see the order in comm.h). */
/*
 * The sum (or mean) of a group, a chunk of elements at a time, the chunks
 * on the mesh's pool: each element still adds the members in ascending
 * group order into 0.0f, so the bytes do not depend on the threads.
 */
#define SUM_CHUNK ((int64_t)1 << 14)

struct sum_job {
	const struct comm_run *run;
	const struct tps_tensor *locals;
	struct tps_tensor *acc; /* zeroed */
	enum tps_reduce_op op;
	struct tps_comm_dtypes dt;
	int64_t start, end; /* the elements summed */
};

static void sum_chunk(void *opaque, int64_t chunk)
{
	const struct sum_job *job = opaque;
	int64_t lo = job->start + chunk * SUM_CHUNK;
	int64_t hi = lo + SUM_CHUNK < job->end ? lo + SUM_CHUNK : job->end;
	float *acc = job->acc->data;
	enum tps_dtype sum = job->dt.sum;
	if (job->op == TPS_REDUCE_MAX) {
		/* The first member's value, then each larger one. */
		for (int i = 0; i < job->run->n; i++) {
			const float *x = job->locals[job->run->members[i]].data;
			for (int64_t e = lo; e < hi; e++) {
				if (i == 0 || x[e] > acc[e]) {
					acc[e] = x[e];
				}
			}
		}
	} else if (sum == TPS_DTYPE_F32) {
		for (int i = 0; i < job->run->n; i++) {
			const float *x = job->locals[job->run->members[i]].data;
			for (int64_t e = lo; e < hi; e++) {
				acc[e] += x[e];
			}
		}
	} else {
		/* Each value as the sum's dtype holds it, each partial sum
		 * rounded (comm.h). */
		for (int i = 0; i < job->run->n; i++) {
			const float *x = job->locals[job->run->members[i]].data;
			for (int64_t e = lo; e < hi; e++) {
				acc[e] = tps_dtype_round(
					acc[e] + tps_dtype_round(x[e], sum),
					sum);
			}
		}
	}
	if (job->op == TPS_REDUCE_AVG) {
		for (int64_t e = lo; e < hi; e++) {
			acc[e] = tps_dtype_round(acc[e] / (float)job->run->n,
						 sum);
		}
	}
	tps_dtype_round_array(acc + lo, hi - lo, job->dt.store);
}

static enum tps_status
reduce_group(const struct comm_run *run, const struct tps_tensor *locals,
	     enum tps_reduce_op op, struct tps_comm_dtypes dt,
	     struct tps_tensor *out, struct tps_error *err)
{
	const struct tps_tensor *first = &locals[run->members[0]];
	struct tps_tensor acc;
	char a[128], b[128];
	enum tps_status st;

	for (int i = 1; i < run->n; i++) {
		const struct tps_tensor *t = &locals[run->members[i]];
		if (!tps_shape_equal(&t->shape, &first->shape)) {
			return tps_error_set(
				err, TPS_ERR_SHAPE,
				"%s: rank %d has shape %s but rank %d has %s",
				tps_reduce_op_name(op), run->members[0],
				tps_shape_format(&first->shape, a, sizeof a),
				run->members[i],
				tps_shape_format(&t->shape, b, sizeof b));
		}
	}
	/* zeroed; meta when the members are */
	st = tps_tensor_init_like(&acc, &first->shape, first, err);
	for (int j = 0; st == TPS_OK && acc.data && j < run->n; j++) {
		struct sum_job job = {run, locals, &acc, op, dt, 0, 0};
		int64_t numel = tps_tensor_numel(&acc), len;
		if (!run->ordered) {
			job.end = numel;
			j = run->n; /* the whole buffer, once */
		} else if (tps_mesh_holds(run->mesh, run->members[j])) {
			/* Under a backend, the chunks this process's
			 * members reduce (ordered_scatter). */
			flat_chunk(numel, run->n, j, &job.start, &len);
			job.end = job.start + len;
		}
		tps_pool_for(run->mesh->pool,
			     (job.end - job.start + SUM_CHUNK - 1) / SUM_CHUNK,
			     sum_chunk, &job);
	}
	if (st == TPS_OK) {
		*out = acc;
	}
	return st;
}

/* The other members' copies of the first member's result, made on the
 * mesh's pool (each copy is its own buffer). */
struct copy_job {
	struct comm_run *run;
	const struct tps_tensor *first;
};

static enum tps_status copy_member(void *opaque, int64_t i,
				   struct tps_error *err)
{
	struct copy_job *job = opaque;
	return result_copy(job->run, job->run->members[i + 1], job->first, err);
}

static enum tps_status copy_to_members(struct comm_run *run,
				       const struct tps_tensor *first,
				       struct tps_error *err)
{
	struct copy_job job = {run, first};
	return tps_pool_try(run->mesh->pool, run->n - 1, copy_member, &job,
			    err);
}

enum tps_status tps_comm_all_reduce(const struct tps_mesh *mesh, unsigned mask,
				    struct tps_tensor *locals,
				    enum tps_reduce_op op,
				    struct tps_comm_dtypes dt,
				    struct tps_comm_report *report,
				    struct tps_error *err)
{
	struct comm_run run;
	enum tps_status st = run_begin(&run, mesh, mask, locals, true, err);
	if (st != TPS_OK) {
		return st;
	}
	if (run.ordered) {
		st = ordered_scatter(&run, locals, st, err);
	}
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		int64_t total;
		tps_mesh_group_members(mesh, mask, g, run.members);
		st = reduce_group(&run, locals, op, dt,
				  &run.out[run.members[0]], err);
		total = tps_tensor_numel(&locals[run.members[0]]);
		note_bytes(&run, 2 * (int64_t)(run.n - 1) *
					 ((total + run.n - 1) / run.n) * 4);
	}
	if (run.ordered) {
		st = ordered_gather(&run, st, err);
	}
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		tps_mesh_group_members(mesh, mask, g, run.members);
		st = copy_to_members(&run, &run.out[run.members[0]], err);
	}
	return run_end(&run, locals, st, TPS_COMM_ALL_REDUCE, report);
}

enum tps_status
tps_comm_reduce_scatter(const struct tps_mesh *mesh, unsigned mask,
			struct tps_tensor *locals, enum tps_reduce_op op,
			struct tps_comm_dtypes dt, int tensor_dim,
			struct tps_comm_report *report, struct tps_error *err)
{
	return tps_comm_reduce_scatter_blocks(mesh, mask, locals, op, dt,
					      tensor_dim, 1, report, err);
}

enum tps_status tps_comm_reduce_scatter_blocks(
	const struct tps_mesh *mesh, unsigned mask, struct tps_tensor *locals,
	enum tps_reduce_op op, struct tps_comm_dtypes dt, int tensor_dim,
	int64_t block, struct tps_comm_report *report, struct tps_error *err)
{
	struct comm_run run;
	enum tps_status st = run_begin(&run, mesh, mask, locals, true, err);
	struct tps_tensor *full = NULL; /* per group: the reduction */
	if (st != TPS_OK) {
		return st;
	}
	full = calloc((size_t)run.groups, sizeof *full);
	if (!full) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	/* The whole reduction moves as all_reduce's does, then each member
	 * keeps its chunk along tensor_dim (a chunk of a dim other than the
	 * first is not a contiguous run of the buffer). */
	if (run.ordered) {
		st = ordered_scatter(&run, locals, st, err);
	}
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		tps_mesh_group_members(mesh, mask, g, run.members);
		st = check_dim(&locals[run.members[0]], tensor_dim,
			       "reduce_scatter", err);
		if (st == TPS_OK) {
			st = check_blocks(&locals[run.members[0]], tensor_dim,
					  block, "reduce_scatter", err);
		}
		if (st == TPS_OK) {
			st = reduce_group(&run, locals, op, dt,
					  &run.out[run.members[0]], err);
		}
		if (st == TPS_OK) {
			tps_tensor_move(&full[g], &run.out[run.members[0]]);
		}
	}
	if (run.ordered) {
		run.full = full;
		st = ordered_gather(&run, st, err);
	}
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		int64_t size, start, len, chunk_len;
		tps_mesh_group_members(mesh, mask, g, run.members);
		size = full[g].shape.dim[tensor_dim];
		for (int i = 0; i < run.n && st == TPS_OK; i++) {
			tps_chunk_range_blocks(size, block, run.n, i, &start,
					       &len);
			st = result_narrow(&run, run.members[i], &full[g],
					   tensor_dim, start, len, err);
		}
		tps_chunk_range_blocks(size, block, run.n, 0, &start,
				       &chunk_len);
		note_bytes(&run,
			   (int64_t)(run.n - 1) * chunk_len *
				   numel_without(&full[g].shape, tensor_dim) *
				   4);
	}
	for (int g = 0; full && g < run.groups; g++) {
		tps_tensor_free(&full[g]);
	}
	free(full);
	return run_end(&run, locals, st, TPS_COMM_REDUCE_SCATTER, report);
}

enum tps_status tps_comm_broadcast(const struct tps_mesh *mesh, unsigned mask,
				   struct tps_tensor *locals, int root,
				   struct tps_comm_report *report,
				   struct tps_error *err)
{
	struct comm_run run;
	enum tps_status st = run_begin(&run, mesh, mask, locals, false, err);
	if (st != TPS_OK) {
		return st;
	}
	assert(root >= 0 && root < run.n);
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		const struct tps_tensor *src;
		tps_mesh_group_members(mesh, mask, g, run.members);
		src = &locals[run.members[root]];
		for (int i = 0; i < run.n && st == TPS_OK; i++) {
			st = result_copy(&run, run.members[i], src, err);
		}
		note_bytes(&run, tps_tensor_numel(src) * 4);
	}
	return run_end(&run, locals, st, TPS_COMM_BROADCAST, report);
}

enum tps_status tps_comm_scatter(const struct tps_mesh *mesh, unsigned mask,
				 struct tps_tensor *locals, int root,
				 int tensor_dim, struct tps_comm_report *report,
				 struct tps_error *err)
{
	return tps_comm_scatter_blocks(mesh, mask, locals, root, tensor_dim, 1,
				       report, err);
}

enum tps_status tps_comm_scatter_blocks(const struct tps_mesh *mesh,
					unsigned mask,
					struct tps_tensor *locals, int root,
					int tensor_dim, int64_t block,
					struct tps_comm_report *report,
					struct tps_error *err)
{
	struct comm_run run;
	enum tps_status st = run_begin(&run, mesh, mask, locals, false, err);
	if (st != TPS_OK) {
		return st;
	}
	assert(root >= 0 && root < run.n);
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		const struct tps_tensor *src;
		int64_t size, start, len, chunk_len;
		tps_mesh_group_members(mesh, mask, g, run.members);
		src = &locals[run.members[root]];
		st = check_dim(src, tensor_dim, "scatter", err);
		if (st == TPS_OK) {
			st = check_blocks(src, tensor_dim, block, "scatter",
					  err);
		}
		if (st != TPS_OK) {
			break;
		}
		size = src->shape.dim[tensor_dim];
		for (int i = 0; i < run.n && st == TPS_OK; i++) {
			tps_chunk_range_blocks(size, block, run.n, i, &start,
					       &len);
			st = tps_tensor_narrow(&run.out[run.members[i]], src,
					       tensor_dim, start, len, err);
		}
		tps_chunk_range_blocks(size, block, run.n, 0, &start,
				       &chunk_len);
		note_bytes(&run,
			   (int64_t)(run.n - 1) * chunk_len *
				   numel_without(&src->shape, tensor_dim) * 4);
	}
	return run_end(&run, locals, st, TPS_COMM_SCATTER, report);
}

enum tps_status tps_comm_all_to_all(const struct tps_mesh *mesh, unsigned mask,
				    struct tps_tensor *locals, int split_dim,
				    int concat_dim,
				    struct tps_comm_report *report,
				    struct tps_error *err)
{
	return tps_comm_all_to_all_blocks(mesh, mask, locals, split_dim, 1,
					  concat_dim, report, err);
}

enum tps_status tps_comm_all_to_all_blocks(
	const struct tps_mesh *mesh, unsigned mask, struct tps_tensor *locals,
	int split_dim, int64_t split_block, int concat_dim,
	struct tps_comm_report *report, struct tps_error *err)
{
	struct comm_run run;
	struct tps_tensor *blocks = NULL; /* n x n: blocks[j * n + i] i -> j */
	enum tps_status st = run_begin(&run, mesh, mask, locals, false, err);
	if (st != TPS_OK) {
		return st;
	}
	blocks = calloc((size_t)run.n * (size_t)run.n, sizeof *blocks);
	if (!blocks) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int g = 0; g < run.groups && st == TPS_OK; g++) {
		int64_t largest = 0;
		tps_mesh_group_members(mesh, mask, g, run.members);
		for (int i = 0; i < run.n && st == TPS_OK; i++) {
			const struct tps_tensor *src = &locals[run.members[i]];
			int64_t size, start, len;
			st = check_dim(src, split_dim, "all_to_all", err);
			if (st == TPS_OK) {
				st = check_dim(src, concat_dim, "all_to_all",
					       err);
			}
			if (st == TPS_OK) {
				st = check_blocks(src, split_dim, split_block,
						  "all_to_all", err);
			}
			size = st == TPS_OK ? src->shape.dim[split_dim] : 0;
			for (int j = 0; j < run.n && st == TPS_OK; j++) {
				struct tps_tensor *blk = &blocks[j * run.n + i];
				tps_chunk_range_blocks(size, split_block, run.n,
						       j, &start, &len);
				st = tps_tensor_narrow(blk, src, split_dim,
						       start, len, err);
				if (st == TPS_OK && j != i &&
				    tps_tensor_numel(blk) > largest) {
					largest = tps_tensor_numel(blk);
				}
			}
		}
		for (int j = 0; j < run.n && st == TPS_OK; j++) {
			st = tps_tensor_concat(&run.out[run.members[j]],
					       &blocks[j * run.n], run.n,
					       concat_dim, err);
		}
		for (int b = 0; b < run.n * run.n; b++) {
			tps_tensor_free(&blocks[b]);
		}
		note_bytes(&run, (int64_t)(run.n - 1) * largest * 4);
	}
out:
	free(blocks);
	return run_end(&run, locals, st, TPS_COMM_ALL_TO_ALL, report);
}
