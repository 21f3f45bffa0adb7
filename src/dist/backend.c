#include "backend.h"

#include <stdlib.h>
#include <string.h>

void tps_backend_init(struct tps_backend *b, const struct tps_backend_ops *ops,
		      void *impl, int process, int processes)
{
	*b = (struct tps_backend){0};
	b->ops = ops;
	b->impl = impl;
	b->process = process;
	b->processes = processes;
	b->ranks = 1;
	b->first_rank = process;
}

enum tps_status tps_backend_place(struct tps_backend *b, int world_size,
				  struct tps_error *err)
{
	if (world_size % b->processes != 0) {
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"%d processes cannot share the mesh's %d ranks "
			"(expected a divisor of %d: each process holds the "
			"same number of consecutive ranks)",
			b->processes, world_size, world_size);
	}
	b->ranks = world_size / b->processes;
	b->first_rank = b->process * b->ranks;
	return TPS_OK;
}

bool tps_mesh_holds(const struct tps_mesh *mesh, int r)
{
	const struct tps_backend *b = mesh->backend;
	return !b || (r >= b->first_rank && r < b->first_rank + b->ranks);
}

int tps_mesh_holder(const struct tps_mesh *mesh, int r)
{
	return mesh->backend ? r / mesh->backend->ranks : 0;
}

bool tps_mesh_is_writer(const struct tps_mesh *mesh)
{
	return !mesh->backend || mesh->backend->process == 0;
}

static enum tps_status agree(struct tps_backend *b, enum tps_status mine,
			     struct tps_error *err)
{
	enum tps_status st;
	if (b->failed) {
		return mine != TPS_OK ? mine
				      : tps_error_set(err, TPS_ERR_UNSUPPORTED,
						      "another process failed");
	}
	st = b->ops->agree(b->impl, mine, err);
	if (st != TPS_OK) {
		b->failed = true;
	}
	return st;
}

void tps_backend_drop(const struct tps_mesh *mesh, struct tps_tensor *locals)
{
	for (int r = 0; mesh->backend && r < mesh->world_size; r++) {
		if (!tps_mesh_holds(mesh, r) && !locals[r].meta) {
			struct tps_shape shape = locals[r].shape;
			tps_tensor_free(&locals[r]);
			locals[r].shape = shape;
			locals[r].meta = true;
		}
	}
}

/*
 * The transfers of one exchange, in the same order on every process: for
 * each rank r in ascending order, its holder's sends to every process
 * needing it, and those processes' receives. Tag r: a pair of processes
 * exchanges each rank's buffer once, so (peer, tag) names one message.
 */
static enum tps_status fetch_list(const struct tps_mesh *mesh,
				  struct tps_tensor *locals,
				  tps_backend_need_fn need, const void *ctx,
				  struct tps_transfer *list, size_t *n,
				  struct tps_error *err)
{
	const struct tps_backend *b = mesh->backend;
	enum tps_status st = TPS_OK;
	*n = 0;
	for (int r = 0; r < mesh->world_size; r++) {
		int64_t count = tps_tensor_numel(&locals[r]);
		if (count == 0) {
			continue;
		}
		if (tps_mesh_holds(mesh, r)) {
			for (int p = 0; p < b->processes; p++) {
				if (p != b->process && need(ctx, mesh, p, r)) {
					list[(*n)++] = (struct tps_transfer){
						p, r, locals[r].data, count,
						true};
				}
			}
		} else if (need(ctx, mesh, b->process, r)) {
			/* From meta to values, zeroed until received. */
			if (st == TPS_OK) {
				struct tps_shape shape = locals[r].shape;
				st = tps_tensor_init(&locals[r], &shape, err);
			}
			if (st == TPS_OK) {
				list[(*n)++] = (struct tps_transfer){
					tps_mesh_holder(mesh, r), r,
					locals[r].data, count, false};
			}
		}
	}
	return st;
}

bool tps_mesh_locals_meta(const struct tps_mesh *mesh,
			  const struct tps_tensor *locals)
{
	const struct tps_backend *b = mesh->backend;
	if (!b) {
		return locals[0].meta;
	}
	for (int r = b->first_rank; r < b->first_rank + b->ranks; r++) {
		if (!locals[r].meta) {
			return false;
		}
	}
	return true;
}

enum tps_status tps_backend_fetch(const struct tps_mesh *mesh,
				  struct tps_tensor *locals,
				  tps_backend_need_fn need, const void *ctx,
				  enum tps_traffic kind, struct tps_error *err)
{
	struct tps_backend *b = mesh->backend;
	struct tps_transfer *list;
	size_t n = 0;
	enum tps_status st;
	if (!b || tps_mesh_locals_meta(mesh, locals)) {
		/* A meta pass has no values to exchange. */
		return TPS_OK;
	}
	/* At most one transfer per (rank, process). */
	list = malloc((size_t)mesh->world_size * (size_t)b->processes *
		      sizeof *list);
	st = list ? fetch_list(mesh, locals, need, ctx, list, &n, err)
		  : tps_error_set(err, TPS_ERR_NOMEM,
				  "out of memory in an exchange");
	st = tps_backend_exchange(mesh, st, list, n, kind, err);
	if (st != TPS_OK) {
		tps_backend_drop(mesh, locals);
	}
	free(list);
	return st;
}

enum tps_status tps_backend_exchange(const struct tps_mesh *mesh,
				     enum tps_status st,
				     struct tps_transfer *list, size_t n,
				     enum tps_traffic kind,
				     struct tps_error *err)
{
	struct tps_backend *b = mesh->backend;
	st = agree(b, st, err);
	if (st == TPS_OK) {
		st = b->ops->exchange(b->impl, list, n, err);
	}
	for (size_t i = 0; st == TPS_OK && i < n; i++) {
		if (list[i].send) {
			b->bytes_sent[kind] +=
				list[i].count * (int64_t)sizeof(float);
		}
	}
	if (st != TPS_OK) {
		b->failed = true;
	}
	return st;
}

bool tps_backend_need_all(const void *ctx, const struct tps_mesh *mesh, int p,
			  int r)
{
	(void)ctx;
	(void)mesh;
	(void)p;
	(void)r;
	return true;
}

enum tps_status tps_backend_share(const struct tps_mesh *mesh, double *values,
				  struct tps_error *err)
{
	struct tps_tensor *one;
	/* A double's bits in two floats' room. */
	struct tps_shape scalar = tps_shape_make(1, (int64_t[]){2});
	enum tps_status st = TPS_OK;
	if (!mesh->backend) {
		return TPS_OK;
	}
	/* Each rank's value as a one-element buffer, meta off this
	 * process's ranks, fetched as any other. */
	one = calloc((size_t)mesh->world_size, sizeof *one);
	if (!one) {
		st = tps_error_set(err, TPS_ERR_NOMEM,
				   "out of memory in an exchange");
	}
	for (int r = 0; st == TPS_OK && r < mesh->world_size; r++) {
		one[r].shape = scalar;
		one[r].meta = true;
		if (tps_mesh_holds(mesh, r)) {
			st = tps_tensor_init(&one[r], &scalar, err);
			if (st == TPS_OK) {
				memcpy(one[r].data, &values[r],
				       sizeof values[r]);
			}
		}
	}
	/* The fetch agrees on st; a process that failed here agrees
	 * instead, at the same point. */
	st = st == TPS_OK ? tps_backend_fetch(mesh, one, tps_backend_need_all,
					      NULL, TPS_TRAFFIC_ASSEMBLE, err)
			  : agree(mesh->backend, st, err);
	for (int r = 0; one && r < mesh->world_size; r++) {
		if (st == TPS_OK) {
			memcpy(&values[r], one[r].data, sizeof values[r]);
		}
		tps_tensor_free(&one[r]);
	}
	free(one);
	return st;
}

enum tps_status tps_backend_finish(struct tps_backend *b, enum tps_status st,
				   struct tps_error *err)
{
	if (!b || b->failed || b->finished) {
		return st;
	}
	b->finished = true;
	return agree(b, st, err);
}

enum tps_status tps_backend_agree(const struct tps_mesh *mesh,
				  enum tps_status st, struct tps_error *err)
{
	if (!mesh->backend || mesh->backend->failed) {
		return st;
	}
	return agree(mesh->backend, st, err);
}
