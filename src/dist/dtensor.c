#include "dtensor.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "memory.h"

struct tps_placement tps_placement_replicate(void)
{
	return (struct tps_placement){TPS_PLACEMENT_REPLICATE, 0, 1, false,
				      false};
}

struct tps_placement tps_placement_shard(int dim)
{
	return (struct tps_placement){TPS_PLACEMENT_SHARD, dim, 1, false,
				      false};
}

struct tps_placement tps_placement_shard_blocks(int dim, int64_t block)
{
	assert(block >= 0);
	return (struct tps_placement){TPS_PLACEMENT_SHARD, dim,
				      block > 1 ? block : 1, false, false};
}

struct tps_placement tps_placement_partial(void)
{
	return (struct tps_placement){TPS_PLACEMENT_PARTIAL, 0, 1, false,
				      false};
}

struct tps_placement tps_placement_shard_flat(int dim)
{
	return (struct tps_placement){TPS_PLACEMENT_SHARD, dim, 1, true, false};
}

struct tps_placement tps_placement_shard_local(int dim, bool flat)
{
	return (struct tps_placement){TPS_PLACEMENT_SHARD, dim, 1, flat, true};
}

int64_t tps_placement_block(struct tps_placement p)
{
	return p.kind == TPS_PLACEMENT_SHARD && p.block > 1 ? p.block : 1;
}

bool tps_placement_equal(struct tps_placement a, struct tps_placement b)
{
	return a.kind == b.kind &&
	       (a.kind != TPS_PLACEMENT_SHARD ||
		(a.dim == b.dim &&
		 tps_placement_block(a) == tps_placement_block(b) &&
		 a.flat == b.flat && a.local == b.local));
}

char *tps_placement_format(struct tps_placement p, char *buf, size_t size)
{
	switch (p.kind) {
	case TPS_PLACEMENT_REPLICATE: snprintf(buf, size, "replicate"); break;
	case TPS_PLACEMENT_SHARD:
		/* Block 1 keeps the spelling of every trace before blocks. */
		if (p.local) {
			snprintf(buf, size, "shard(%d%s,local)", p.dim,
				 p.flat ? ",flat" : "");
		} else if (p.flat) {
			snprintf(buf, size, "shard(%d,flat)", p.dim);
		} else if (tps_placement_block(p) == 1) {
			snprintf(buf, size, "shard(%d)", p.dim);
		} else {
			snprintf(buf, size, "shard(%d,block=%lld)", p.dim,
				 (long long)tps_placement_block(p));
		}
		break;
	case TPS_PLACEMENT_PARTIAL: snprintf(buf, size, "partial"); break;
	}
	return buf;
}

/* A whole number from lo to hi, digits only, no leading zero; *end after. */
static bool parse_whole(const char *s, int64_t lo, int64_t hi, int64_t *out,
			const char **end)
{
	int64_t v = 0;
	const char *c = s;
	if (*c < '0' || *c > '9' ||
	    (c[0] == '0' && c[1] >= '0' && c[1] <= '9')) {
		return false;
	}
	for (; *c >= '0' && *c <= '9'; c++) {
		v = v * 10 + (*c - '0');
		if (v > hi) {
			return false;
		}
	}
	if (v < lo) {
		return false;
	}
	*out = v;
	*end = c;
	return true;
}

bool tps_placement_parse(const char *s, int ndim, struct tps_placement *p)
{
	const char *c;
	int64_t d, block = 1;
	bool negative, flat = false, local = false;
	if (strcmp(s, "replicate") == 0) {
		*p = tps_placement_replicate();
		return true;
	}
	if (strcmp(s, "partial") == 0) {
		*p = tps_placement_partial();
		return true;
	}
	if (strncmp(s, "shard(", 6) != 0) {
		return false;
	}
	c = s + 6;
	negative = *c == '-';
	if (!parse_whole(c + negative, 0, TPS_MAX_DIMS, &d, &c)) {
		return false;
	}
	d = negative ? -d : d;
	if (strncmp(c, ",flat", 5) == 0 && (c[5] == ')' || c[5] == ',')) {
		flat = true;
		c += 5;
	}
	if (strcmp(c, ",local)") == 0) {
		local = true;
		c += 6;
	}
	/* A flat or local shard takes no block. */
	if (!flat && !local && strncmp(c, ",block=", 7) == 0 &&
	    !parse_whole(c + 7, 1, TPS_MAX_ELEMENTS, &block, &c)) {
		return false;
	}
	if (strcmp(c, ")") != 0 || tps_dim_normalize((int)d, ndim) < 0) {
		return false;
	}
	d = tps_dim_normalize((int)d, ndim);
	*p = local  ? tps_placement_shard_local((int)d, flat)
	     : flat ? tps_placement_shard_flat((int)d)
		    : tps_placement_shard_blocks((int)d, block);
	return true;
}

/*
 * How mesh dim i splits its tensor dim: *size ranks, this rank being
 * *index of them. A flat shard's first mesh dim stands for its whole
 * flattened group (index row-major over the group's coordinates); its
 * other dims give false: the group was split at the first.
 */
static bool split_of(const struct tps_mesh *mesh,
		     const struct tps_placement *placements, const int *coord,
		     int i, int *size, int *index)
{
	struct tps_placement p = placements[i];
	if (p.kind != TPS_PLACEMENT_SHARD) {
		return false;
	}
	*size = mesh->shape[i];
	*index = coord[i];
	if (!p.flat) {
		return true;
	}
	for (int j = 0; j < i; j++) {
		if (tps_placement_equal(placements[j], p)) {
			return false;
		}
	}
	for (int j = i + 1; j < mesh->ndim; j++) {
		if (tps_placement_equal(placements[j], p)) {
			*index = *index * mesh->shape[j] + coord[j];
			*size *= mesh->shape[j];
		}
	}
	return true;
}

void tps_dtensor_local_region(const struct tps_mesh *mesh,
			      const struct tps_shape *global,
			      const struct tps_placement *placements, int rank,
			      int64_t *offset, int64_t *length)
{
	int coord[TPS_MAX_MESH_DIMS];
	tps_mesh_coord_of(mesh, rank, coord);
	for (int d = 0; d < global->ndim; d++) {
		offset[d] = 0;
		length[d] = global->dim[d];
	}
	/* Chunk of a chunk, mesh dim by mesh dim in mesh order; the local
	 * shards last (the chunk of each rank's local tensor). */
	for (int k = 0; k < 2 * mesh->ndim; k++) {
		int64_t start, len;
		int i = k % mesh->ndim;
		int d = placements[i].dim, size, index;
		if (placements[i].local != (k >= mesh->ndim) ||
		    !split_of(mesh, placements, coord, i, &size, &index)) {
			continue;
		}
		assert(d >= 0 && d < global->ndim);
		tps_chunk_range_blocks(length[d],
				       tps_placement_block(placements[i]), size,
				       index, &start, &len);
		offset[d] += start;
		length[d] = len;
	}
}

enum tps_status tps_dtensor_check_placements(
	const struct tps_mesh *mesh, const struct tps_shape *global,
	const struct tps_placement *placements, struct tps_error *err)
{
	char a[32];
	for (int i = 0; i < mesh->ndim; i++) {
		int d = placements[i].dim;
		if (placements[i].kind == TPS_PLACEMENT_SHARD &&
		    (d < 0 || d >= global->ndim)) {
			return tps_error_set(
				err, TPS_ERR_SHAPE,
				"%s on mesh dim \"%s\": a %d-dim tensor has no "
				"dim %d",
				tps_placement_format(placements[i], a,
						     sizeof a),
				mesh->dim_names[i], global->ndim, d);
		}
	}
	/* The region walk of tps_dtensor_local_region, checking each block
	 * against the length it is about to chunk. */
	for (int r = 0; r < mesh->world_size; r++) {
		int64_t length[TPS_MAX_DIMS];
		int coord[TPS_MAX_MESH_DIMS];
		tps_mesh_coord_of(mesh, r, coord);
		for (int d = 0; d < global->ndim; d++) {
			length[d] = global->dim[d];
		}
		for (int k = 0; k < 2 * mesh->ndim; k++) {
			int i = k % mesh->ndim;
			int d = placements[i].dim, size, index;
			int64_t block = tps_placement_block(placements[i]);
			int64_t start;
			if (placements[i].local != (k >= mesh->ndim) ||
			    !split_of(mesh, placements, coord, i, &size,
				      &index)) {
				continue;
			}
			if (length[d] % block != 0) {
				return tps_error_set(
					err, TPS_ERR_SHAPE,
					"%s on mesh dim \"%s\": tensor dim %d "
					"has %lld elements there, not a whole "
					"number of blocks of %lld",
					tps_placement_format(placements[i], a,
							     sizeof a),
					mesh->dim_names[i], d,
					(long long)length[d], (long long)block);
			}
			tps_chunk_range_blocks(length[d], block, size, index,
					       &start, &length[d]);
		}
	}
	return TPS_OK;
}

static void free_locals(struct tps_tensor *locals, int n)
{
	if (!locals) {
		return;
	}
	for (int r = 0; r < n; r++) {
		tps_tensor_free(&locals[r]);
	}
	free(locals);
}

void tps_dtensor_wrap(struct tps_dtensor *dt, const struct tps_mesh *mesh,
		      const struct tps_shape *global,
		      const struct tps_placement *placements,
		      struct tps_tensor *locals)
{
	memset(dt, 0, sizeof *dt);
	dt->mesh = mesh;
	dt->global = *global;
	for (int i = 0; i < mesh->ndim; i++) {
		dt->placements[i] = placements[i];
	}
	dt->locals = locals;
}

struct map_job {
	tps_local_fn fn;
	void *ctx;
	struct tps_tensor *locals;
};

static enum tps_status map_rank(void *opaque, int rank, struct tps_error *err)
{
	struct map_job *job = opaque;
	return job->fn(job->ctx, rank, &job->locals[rank], err);
}

enum tps_status tps_dtensor_map(struct tps_dtensor *out,
				const struct tps_mesh *mesh,
				const struct tps_shape *global,
				const struct tps_placement *placements,
				tps_local_fn fn, void *ctx,
				struct tps_error *err)
{
	struct map_job job = {fn, ctx, NULL};
	enum tps_status st;
	/* Through memory.h, so that a meta run, which allocates no tensor
	 * values, has its heap advised too (its rank arrays are most of
	 * its memory). */
	job.locals =
		tps_memory_calloc((size_t)mesh->world_size, sizeof *job.locals);
	if (!job.locals) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	st = tps_mesh_for_each_rank(mesh, map_rank, &job, err);
	if (st != TPS_OK) {
		free_locals(job.locals, mesh->world_size);
		return st;
	}
	tps_dtensor_wrap(out, mesh, global, placements, job.locals);
	return TPS_OK;
}

/* Rank r's part of distribute: its region of the global tensor, zeroed
 * off local rank 0 of a partial dim. */
struct distribute_job {
	const struct tps_mesh *mesh;
	const struct tps_tensor *global;
	const struct tps_placement *placements;
	bool shared; /* locals view global where they can */
};

static enum tps_status distribute_rank(void *opaque, int r,
				       struct tps_tensor *out,
				       struct tps_error *err)
{
	const struct distribute_job *job = opaque;
	const struct tps_mesh *mesh = job->mesh;
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	int coord[TPS_MAX_MESH_DIMS];
	bool zero = false;
	enum tps_status st;
	tps_dtensor_local_region(mesh, &job->global->shape, job->placements, r,
				 offset, length);
	if (!tps_mesh_holds(mesh, r)) {
		/* Another process holds r (backend.h): its shape only. */
		struct tps_shape shape =
			tps_shape_make(job->global->shape.ndim, length);
		return tps_tensor_init_meta(out, &shape, err);
	}
	tps_mesh_coord_of(mesh, r, coord);
	for (int i = 0; i < mesh->ndim; i++) {
		if (job->placements[i].kind == TPS_PLACEMENT_PARTIAL &&
		    coord[i] != 0) {
			zero = true;
		}
	}
	if (job->shared && !zero) {
		return tps_tensor_view_region(out, job->global, offset, length,
					      err);
	}
	st = tps_tensor_region(out, job->global, offset, length, err);
	if (st == TPS_OK && zero) {
		tps_tensor_scale(out, 0.0f);
	}
	return st;
}

static enum tps_status distribute(struct tps_dtensor *dt,
				  const struct tps_mesh *mesh,
				  const struct tps_tensor *global,
				  const struct tps_placement *placements,
				  bool shared, struct tps_error *err)
{
	struct distribute_job job = {mesh, global, placements, shared};
	enum tps_status st = tps_dtensor_check_placements(mesh, &global->shape,
							  placements, err);
	if (st != TPS_OK) {
		return st;
	}
	return tps_dtensor_map(dt, mesh, &global->shape, placements,
			       distribute_rank, &job, err);
}

enum tps_status tps_dtensor_distribute(struct tps_dtensor *dt,
				       const struct tps_mesh *mesh,
				       const struct tps_tensor *global,
				       const struct tps_placement *placements,
				       struct tps_error *err)
{
	return distribute(dt, mesh, global, placements, false, err);
}

enum tps_status tps_dtensor_distribute_shared(
	struct tps_dtensor *dt, const struct tps_mesh *mesh,
	const struct tps_tensor *global, const struct tps_placement *placements,
	struct tps_error *err)
{
	return distribute(dt, mesh, global, placements, true, err);
}

/* dst[region] += src, where src has the region's shape. */
static void add_at(struct tps_tensor *dst, const struct tps_tensor *src,
		   const int64_t *offset)
{
	int nd = dst->shape.ndim;
	int64_t idx[TPS_MAX_DIMS] = {0};
	int64_t n = tps_tensor_numel(src);
	for (int64_t e = 0; e < n; e++) {
		int64_t flat = 0;
		for (int d = 0; d < nd; d++) {
			flat = flat * dst->shape.dim[d] + offset[d] + idx[d];
		}
		dst->data[flat] += src->data[tps_tensor_offset(src, e)];
		for (int d = nd - 1; d >= 0; d--) {
			if (++idx[d] < src->shape.dim[d]) {
				break;
			}
			idx[d] = 0;
		}
	}
}

/* Whether rank r's local is part of the whole: one replica per replicate
 * dim; every member of shard and partial dims contributes. */
static bool counted_in_full(const struct tps_mesh *mesh,
			    const struct tps_placement *placements, int r)
{
	int coord[TPS_MAX_MESH_DIMS];
	tps_mesh_coord_of(mesh, r, coord);
	for (int i = 0; i < mesh->ndim; i++) {
		if (placements[i].kind == TPS_PLACEMENT_REPLICATE &&
		    coord[i] != 0) {
			return false;
		}
	}
	return true;
}

/* Under a backend the assembling processes (every one, or process 0
 * alone) need each counted rank's local (need fn of tps_backend_fetch). */
struct full_job {
	const struct tps_dtensor *dt;
	bool writer_only;
};

static bool full_needs(const void *ctx, const struct tps_mesh *mesh, int p,
		       int r)
{
	const struct full_job *job = ctx;
	return (!job->writer_only || p == 0) &&
	       counted_in_full(mesh, job->dt->placements, r);
}

static enum tps_status full_tensor(const struct tps_dtensor *dt,
				   bool writer_only, struct tps_tensor *out,
				   struct tps_error *err)
{
	const struct tps_mesh *mesh = dt->mesh;
	struct tps_tensor full;
	struct full_job job = {dt, writer_only};
	/* Meta in a meta pass, and on a process that does not assemble;
	 * otherwise the values, the other processes' ranks fetched
	 * (backend.h). */
	bool pass = tps_mesh_locals_meta(mesh, dt->locals);
	bool meta = pass || (writer_only && !tps_mesh_is_writer(mesh));
	enum tps_status st =
		meta ? tps_tensor_init_meta(&full, &dt->global, err)
		     : tps_tensor_init(&full, &dt->global, err);
	if (st == TPS_OK && !pass) {
		st = tps_backend_fetch(mesh, dt->locals, full_needs, &job,
				       TPS_TRAFFIC_ASSEMBLE, err);
		if (st != TPS_OK) {
			tps_tensor_free(&full);
		}
	} else if (mesh->backend && !pass) {
		/* Every process still reaches the exchange. */
		st = tps_backend_agree(mesh, st, err);
	}
	if (st != TPS_OK) {
		return st; /* full was not made: *out untouched */
	}
	for (int r = 0; !meta && r < mesh->world_size; r++) {
		int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
		if (!counted_in_full(mesh, dt->placements, r)) {
			continue;
		}
		tps_dtensor_local_region(mesh, &dt->global, dt->placements, r,
					 offset, length);
		add_at(&full, &dt->locals[r], offset);
	}
	tps_backend_drop(mesh, dt->locals);
	*out = full;
	return TPS_OK;
}

enum tps_status tps_dtensor_full_tensor(const struct tps_dtensor *dt,
					struct tps_tensor *out,
					struct tps_error *err)
{
	return full_tensor(dt, false, out, err);
}

enum tps_status tps_dtensor_full_tensor_on_writer(const struct tps_dtensor *dt,
						  struct tps_tensor *out,
						  struct tps_error *err)
{
	return full_tensor(dt, true, out, err);
}

void tps_dtensor_free(struct tps_dtensor *dt)
{
	if (!dt) {
		return;
	}
	if (dt->mesh) {
		free_locals(dt->locals, dt->mesh->world_size);
	}
	memset(dt, 0, sizeof *dt);
}

/* True when a mesh dim after i shards tensor dim d: a step on mesh dim i
 * touching d would then concatenate or split in the wrong nesting order. */
static bool inner_shards(const struct tps_dtensor *dt, int i, int d)
{
	for (int j = i + 1; j < dt->mesh->ndim; j++) {
		if (dt->placements[j].kind == TPS_PLACEMENT_SHARD &&
		    dt->placements[j].dim == d) {
			return true;
		}
	}
	return false;
}

/* Rank r's part of the local split of replicate -> shard(d) on mesh dim i:
 * its chunk of its own buffer. */
struct split_job {
	const struct tps_dtensor *dt;
	int i, d;
	int64_t block;
};

static enum tps_status split_rank(void *opaque, int r, struct tps_tensor *out,
				  struct tps_error *err)
{
	const struct split_job *job = opaque;
	const struct tps_dtensor *dt = job->dt;
	int64_t size = dt->locals[r].shape.dim[job->d];
	int coord[TPS_MAX_MESH_DIMS];
	int64_t start, len;
	if (size % job->block != 0) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "split: rank %d's tensor dim %d has %lld "
				     "elements, not a whole number of blocks "
				     "of %lld",
				     r, job->d, (long long)size,
				     (long long)job->block);
	}
	tps_mesh_coord_of(dt->mesh, r, coord);
	tps_chunk_range_blocks(size, job->block, dt->mesh->shape[job->i],
			       coord[job->i], &start, &len);
	return tps_tensor_narrow(out, &dt->locals[r], job->d, start, len, err);
}

static enum tps_status split_locally(struct tps_dtensor *dt, int i,
				     struct tps_placement to,
				     struct tps_error *err)
{
	struct split_job job = {dt, i, to.dim, tps_placement_block(to)};
	struct tps_dtensor next;
	enum tps_status st =
		tps_dtensor_map(&next, dt->mesh, &dt->global, dt->placements,
				split_rank, &job, err);
	if (st != TPS_OK) {
		return st;
	}
	free_locals(dt->locals, dt->mesh->world_size);
	dt->locals = next.locals;
	return TPS_OK;
}

/* Performs the change of mesh dim i from its placement to `to`. */
static enum tps_status step(struct tps_dtensor *dt, int i,
			    struct tps_placement to,
			    struct tps_comm_dtypes dtypes,
			    tps_redistribute_observer observer, void *ctx,
			    struct tps_error *err)
{
	struct tps_redistribute_step s = {0};
	struct tps_placement from = dt->placements[i];
	unsigned mask = 1u << i;
	int touched = from.kind == TPS_PLACEMENT_SHARD ? from.dim : to.dim;
	char a[32], b[32];
	enum tps_status st;

	s.kind = TPS_REDISTRIBUTE_COLLECTIVE;
	s.mesh_dim = i;
	s.before = from;
	s.after = to;
	if (from.flat || to.flat || from.local || to.local) {
		/* Only distribute (and ZeRO, docs/zero.md) makes one: a step on
		 * one of its mesh dims would split or gather a single dim of
		 * the group. */
		return tps_error_set(
			err, TPS_ERR_UNSUPPORTED,
			"redistribute %s -> %s on mesh dim \"%s\": a flat "
			"or local shard is made by distribute or ZeRO only",
			tps_placement_format(from, a, sizeof a),
			tps_placement_format(to, b, sizeof b),
			dt->mesh->dim_names[i]);
	}
	if (to.kind == TPS_PLACEMENT_PARTIAL) {
		return tps_error_set(
			err, TPS_ERR_UNSUPPORTED,
			"redistribute %s -> partial on mesh dim \"%s\" is not "
			"supported",
			tps_placement_format(from, a, sizeof a),
			dt->mesh->dim_names[i]);
	}
	if ((from.kind == TPS_PLACEMENT_SHARD &&
	     inner_shards(dt, i, from.dim)) ||
	    (to.kind == TPS_PLACEMENT_SHARD && inner_shards(dt, i, to.dim))) {
		return tps_error_set(
			err, TPS_ERR_UNSUPPORTED,
			"redistribute %s -> %s on mesh dim \"%s\": tensor dim "
			"%d is also sharded by an inner mesh dim",
			tps_placement_format(from, a, sizeof a),
			tps_placement_format(to, b, sizeof b),
			dt->mesh->dim_names[i], touched);
	}
	if (from.kind == TPS_PLACEMENT_SHARD &&
	    to.kind == TPS_PLACEMENT_SHARD && from.dim == to.dim) {
		/* Only the block differs: an all_to_all would concatenate
		 * chunks of chunks. Gather, then split in the new blocks. */
		st = step(dt, i, tps_placement_replicate(), dtypes, observer,
			  ctx, err);
		return st == TPS_OK
			       ? step(dt, i, to, dtypes, observer, ctx, err)
			       : st;
	}
	if (from.kind == TPS_PLACEMENT_PARTIAL) {
		st = to.kind == TPS_PLACEMENT_REPLICATE
			     ? tps_comm_all_reduce(dt->mesh, mask, dt->locals,
						   TPS_REDUCE_SUM, dtypes,
						   &s.report, err)
			     : tps_comm_reduce_scatter_blocks(
				       dt->mesh, mask, dt->locals,
				       TPS_REDUCE_SUM, dtypes, to.dim,
				       tps_placement_block(to), &s.report, err);
	} else if (from.kind == TPS_PLACEMENT_SHARD &&
		   to.kind == TPS_PLACEMENT_REPLICATE) {
		st = tps_comm_all_gather(dt->mesh, mask, dt->locals, from.dim,
					 &s.report, err);
	} else if (from.kind == TPS_PLACEMENT_SHARD) {
		st = tps_comm_all_to_all_blocks(dt->mesh, mask, dt->locals,
						to.dim, tps_placement_block(to),
						from.dim, &s.report, err);
	} else {
		s.kind = TPS_REDISTRIBUTE_SPLIT;
		st = split_locally(dt, i, to, err);
	}
	if (st != TPS_OK) {
		return st;
	}
	dt->placements[i] = to;
	if (observer && dt->mesh->shape[i] > 1) {
		st = observer(ctx, &s, dt, err);
	}
	return st;
}

enum tps_status tps_dtensor_redistribute(struct tps_dtensor *dt,
					 const struct tps_placement *target,
					 struct tps_comm_dtypes dtypes,
					 tps_redistribute_observer observer,
					 void *ctx, struct tps_error *err)
{
	const struct tps_mesh *mesh = dt->mesh;
	enum tps_status st = TPS_OK;

	for (int i = mesh->ndim - 1; i >= 0 && st == TPS_OK; i--) {
		bool local_split =
			dt->placements[i].kind == TPS_PLACEMENT_REPLICATE;
		if (!tps_placement_equal(dt->placements[i], target[i]) &&
		    !local_split) {
			st = step(dt, i, target[i], dtypes, observer, ctx, err);
		}
	}
	for (int i = 0; i < mesh->ndim && st == TPS_OK; i++) {
		if (!tps_placement_equal(dt->placements[i], target[i])) {
			st = step(dt, i, target[i], dtypes, observer, ctx, err);
		}
	}
	return st;
}

static enum tps_status copy_rank(void *opaque, int r, struct tps_tensor *out,
				 struct tps_error *err)
{
	const struct tps_dtensor *x = opaque;
	return tps_tensor_copy(out, &x->locals[r], err);
}

enum tps_status tps_dtensor_copy(struct tps_dtensor *out,
				 const struct tps_dtensor *x,
				 struct tps_error *err)
{
	return tps_dtensor_map(out, x->mesh, &x->global, x->placements,
			       copy_rank, (void *)x, err);
}

struct mul_job {
	const struct tps_dtensor *a, *b;
};

static enum tps_status mul_rank(void *opaque, int r, struct tps_tensor *out,
				struct tps_error *err)
{
	const struct mul_job *job = opaque;
	return tps_tensor_mul(out, &job->a->locals[r], &job->b->locals[r],
			      err);
}

enum tps_status tps_dtensor_mul(struct tps_dtensor *out,
				const struct tps_dtensor *a,
				const struct tps_dtensor *b,
				struct tps_error *err)
{
	struct mul_job job = {a, b};
	char pa[32], pb[32];
	if (a->mesh != b->mesh || !tps_shape_equal(&a->global, &b->global)) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "element-wise product: expected operands "
				     "of one mesh and one global shape");
	}
	for (int i = 0; i < a->mesh->ndim; i++) {
		if (!tps_placement_equal(a->placements[i], b->placements[i])) {
			return tps_error_set(
				err, TPS_ERR_SHAPE,
				"element-wise product: mesh dim %d (%s): "
				"expected both operands in one layout, got %s "
				"and %s",
				i, a->mesh->dim_names[i],
				tps_placement_format(a->placements[i], pa,
						     sizeof pa),
				tps_placement_format(b->placements[i], pb,
						     sizeof pb));
		}
		if (a->placements[i].kind == TPS_PLACEMENT_PARTIAL) {
			return tps_error_set(
				err, TPS_ERR_SHAPE,
				"element-wise product: mesh dim %d (%s): "
				"expected no partial operand (the product of "
				"sums is not the sum of products), got partial",
				i, a->mesh->dim_names[i]);
		}
	}
	return tps_dtensor_map(out, a->mesh, &a->global, a->placements,
			       mul_rank, &job, err);
}

struct rope_job {
	const struct tps_dtensor *x;
	int64_t head_dim;
	double theta;
	enum tps_rope_style style;
	int sign;
};

static enum tps_status rope_rank(void *opaque, int r, struct tps_tensor *out,
				 struct tps_error *err)
{
	const struct rope_job *job = opaque;
	const struct tps_dtensor *x = job->x;
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	int n = x->global.ndim;
	tps_dtensor_local_region(x->mesh, &x->global, x->placements, r, offset,
				 length);
	return tps_tensor_rope(out, &x->locals[r], job->head_dim, offset[n - 2],
			       job->theta, job->style, job->sign, err);
}

enum tps_status tps_dtensor_rope(struct tps_dtensor *out,
				 const struct tps_dtensor *x, int64_t head_dim,
				 double theta, enum tps_rope_style style,
				 int sign, struct tps_error *err)
{
	struct rope_job job = {x, head_dim, theta, style, sign};
	int n = x->global.ndim;
	assert(n >= 2 && head_dim >= 2 && head_dim % 2 == 0);
	for (int r = 0; r < x->mesh->world_size; r++) {
		int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
		tps_dtensor_local_region(x->mesh, &x->global, x->placements, r,
					 offset, length);
		if (length[n - 1] != 0 && (offset[n - 1] % head_dim != 0 ||
					   length[n - 1] % head_dim != 0)) {
			return tps_error_set(
				err, TPS_ERR_SHAPE,
				"rope: rank %d holds features [%lld, %lld) of "
				"%lld: expected whole heads of head_dim %lld "
				"(the rotation pairs features within a head)",
				r, (long long)offset[n - 1],
				(long long)(offset[n - 1] + length[n - 1]),
				(long long)x->global.dim[n - 1],
				(long long)head_dim);
		}
	}
	return tps_dtensor_map(out, x->mesh, &x->global, x->placements,
			       rope_rank, &job, err);
}
