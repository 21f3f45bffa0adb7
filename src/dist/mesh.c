#include "mesh.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "jsonio.h"

enum tps_status tps_mesh_init(struct tps_mesh *mesh, int ndim, const int *shape,
			      const char *const *names, struct tps_error *err)
{
	struct tps_mesh m = {0};
	int64_t world = 1;

	if (ndim < 1 || ndim > TPS_MAX_MESH_DIMS) {
		return tps_error_set(err, TPS_ERR_LIMIT,
				     "mesh has %d dims (expected 1 to %d)",
				     ndim, TPS_MAX_MESH_DIMS);
	}
	m.ndim = ndim;
	for (int i = 0; i < ndim; i++) {
		size_t len = strlen(names[i]);
		if (shape[i] < 1) {
			return tps_error_set(
				err, TPS_ERR_INPUT,
				"mesh dim %d has size %d (expected >= 1)", i,
				shape[i]);
		}
		world *= shape[i];
		if (world > TPS_MAX_WORLD) {
			return tps_error_set(err, TPS_ERR_LIMIT,
					     "mesh world size exceeds %d",
					     TPS_MAX_WORLD);
		}
		if (len == 0 || len >= TPS_MESH_NAME_MAX) {
			return tps_error_set(
				err, TPS_ERR_INPUT,
				"mesh dim %d name has %zu bytes (expected 1 to "
				"%d)",
				i, len, TPS_MESH_NAME_MAX - 1);
		}
		for (int j = 0; j < i; j++) {
			char esc[96];
			if (strcmp(names[i], names[j]) == 0) {
				/* The name is user text: escaped. */
				return tps_error_set(
					err, TPS_ERR_INPUT,
					"mesh dims %d and %d are both named "
					"\"%s\"",
					j, i,
					tps_json_escape_for_message(
						names[i], esc, sizeof esc));
			}
		}
		m.shape[i] = shape[i];
		memcpy(m.dim_names[i], names[i], len + 1);
	}
	m.world_size = (int)world;
	*mesh = m;
	return TPS_OK;
}

int tps_mesh_dim_index(const struct tps_mesh *mesh, const char *name)
{
	for (int i = 0; i < mesh->ndim; i++) {
		if (strcmp(mesh->dim_names[i], name) == 0) {
			return i;
		}
	}
	return -1;
}

void tps_mesh_coord_of(const struct tps_mesh *mesh, int rank, int *coord)
{
	assert(rank >= 0 && rank < mesh->world_size);
	for (int i = mesh->ndim - 1; i >= 0; i--) {
		coord[i] = rank % mesh->shape[i];
		rank /= mesh->shape[i];
	}
}

int tps_mesh_rank_of(const struct tps_mesh *mesh, const int *coord)
{
	int rank = 0;
	for (int i = 0; i < mesh->ndim; i++) {
		assert(coord[i] >= 0 && coord[i] < mesh->shape[i]);
		rank = rank * mesh->shape[i] + coord[i];
	}
	return rank;
}

int tps_mesh_group_size(const struct tps_mesh *mesh, unsigned mask)
{
	int n = 1;
	for (int i = 0; i < mesh->ndim; i++) {
		if (mask & (1u << i)) {
			n *= mesh->shape[i];
		}
	}
	return n;
}

int tps_mesh_group_count(const struct tps_mesh *mesh, unsigned mask)
{
	return mesh->world_size / tps_mesh_group_size(mesh, mask);
}

/*
 * Splits a coordinate into the part inside the chosen dims (row-major index
 * = local rank) and the part outside them (row-major index = group index;
 * groups ordered this way are ordered by their lowest rank).
 */
static void split_coord(const struct tps_mesh *mesh, unsigned mask,
			const int *coord, int *group, int *local)
{
	*group = 0;
	*local = 0;
	for (int i = 0; i < mesh->ndim; i++) {
		if (mask & (1u << i)) {
			*local = *local * mesh->shape[i] + coord[i];
		} else {
			*group = *group * mesh->shape[i] + coord[i];
		}
	}
}

void tps_mesh_group_members(const struct tps_mesh *mesh, unsigned mask, int g,
			    int *ranks)
{
	int coord[TPS_MAX_MESH_DIMS];
	int size = tps_mesh_group_size(mesh, mask);
	assert(g >= 0 && g < tps_mesh_group_count(mesh, mask));
	for (int local = 0; local < size; local++) {
		int rest_g = g, rest_l = local;
		/* Decode g over the other dims and local over the chosen ones,
		 * both row-major (last dim fastest). */
		for (int i = mesh->ndim - 1; i >= 0; i--) {
			if (mask & (1u << i)) {
				coord[i] = rest_l % mesh->shape[i];
				rest_l /= mesh->shape[i];
			} else {
				coord[i] = rest_g % mesh->shape[i];
				rest_g /= mesh->shape[i];
			}
		}
		ranks[local] = tps_mesh_rank_of(mesh, coord);
	}
}

int tps_mesh_group_index(const struct tps_mesh *mesh, unsigned mask, int rank)
{
	int coord[TPS_MAX_MESH_DIMS], group, local;
	tps_mesh_coord_of(mesh, rank, coord);
	split_coord(mesh, mask, coord, &group, &local);
	return group;
}

int tps_mesh_local_rank(const struct tps_mesh *mesh, unsigned mask, int rank)
{
	int coord[TPS_MAX_MESH_DIMS], group, local;
	tps_mesh_coord_of(mesh, rank, coord);
	split_coord(mesh, mask, coord, &group, &local);
	return local;
}

char *tps_mesh_mask_name(const struct tps_mesh *mesh, unsigned mask, char *buf,
			 size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < mesh->ndim && used < size; i++) {
		int n;
		if (!(mask & (1u << i))) {
			continue;
		}
		n = snprintf(buf + used, size - used, "%s%s", used ? "_" : "",
			     mesh->dim_names[i]);
		used += n > 0 ? (size_t)n : 0;
	}
	return buf;
}

struct rank_job {
	tps_rank_fn fn;
	void *ctx;
};

static enum tps_status run_rank(void *opaque, int64_t r, struct tps_error *err)
{
	struct rank_job *job = opaque;
	return job->fn(job->ctx, (int)r, err);
}

enum tps_status tps_mesh_for_each_rank(const struct tps_mesh *mesh,
				       tps_rank_fn fn, void *ctx,
				       struct tps_error *err)
{
	struct rank_job job = {fn, ctx};
	return tps_pool_try(mesh->pool, mesh->world_size, run_rank, &job, err);
}
