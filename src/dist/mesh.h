/*
 * The N-D device mesh, as PyTorch's init_device_mesh lays it out.
 *
 * Ranks are laid out row-major: on a (3, 2) mesh rank = r * 2 + c, i.e.
 * [[0, 1], [2, 3], [4, 5]].
 *
 * The group along a set of dims holds the ranks whose coordinates differ only
 * in those dims (PyTorch's mesh["name"], or mesh["dp", "cp"]._flatten()).
 * On the (3, 2) mesh named (row, col):
 *   along row (dim 0, size 3): [0, 2, 4], [1, 3, 5]
 *   along col (dim 1, size 2): [0, 1], [2, 3], [4, 5]
 * Flattening (dp, cp) of a (2, 2, 2) mesh (dp, cp, tp): [0, 2, 4, 6],
 * [1, 3, 5, 7].
 * Members of a group are ordered by their coordinates in the chosen dims,
 * row-major; that order is each member's local rank. Groups are ordered by
 * their first (lowest) rank.
 *
 * Dims are chosen with a bit mask: bit i selects mesh dim i.
 */
#ifndef TPSIM_MESH_H
#define TPSIM_MESH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "pool.h"

struct tps_backend;

#define TPS_MAX_MESH_DIMS 4
#define TPS_MAX_WORLD	  4096
#define TPS_MESH_NAME_MAX 64

struct tps_mesh {
	int ndim;		      /* 1..TPS_MAX_MESH_DIMS */
	int shape[TPS_MAX_MESH_DIMS]; /* sizes, each >= 1 */
	char dim_names[TPS_MAX_MESH_DIMS][TPS_MESH_NAME_MAX];
	int world_size; /* product of shape */
	/* The threads the simulated ranks run on (not owned; NULL: one
	 * after another on the caller's thread). It changes how fast a run
	 * goes, never what it computes. */
	struct tps_pool *pool;
	/* Where the ranks live (backend.h; not owned): NULL, all in this
	 * process. */
	struct tps_backend *backend;
};

/*
 * Initialises a mesh. Names must be non-empty, distinct and shorter than
 * TPS_MESH_NAME_MAX; sizes >= 1; the world size at most TPS_MAX_WORLD.
 * On error (TPS_ERR_INPUT / TPS_ERR_LIMIT) *mesh is untouched.
 */
enum tps_status tps_mesh_init(struct tps_mesh *mesh, int ndim, const int *shape,
			      const char *const *names, struct tps_error *err);

/* Index of the dim called name, or -1. */
int tps_mesh_dim_index(const struct tps_mesh *mesh, const char *name);

/* coord[0..ndim) of rank; rank of coord. */
void tps_mesh_coord_of(const struct tps_mesh *mesh, int rank, int *coord);
int tps_mesh_rank_of(const struct tps_mesh *mesh, const int *coord);

/* Ranks per group along the dims in mask (product of their sizes; 1 for an
 * empty mask) and the number of such groups. */
int tps_mesh_group_size(const struct tps_mesh *mesh, unsigned mask);
int tps_mesh_group_count(const struct tps_mesh *mesh, unsigned mask);

/* Writes the group_size ranks of group g (0 <= g < group_count) in local-rank
 * order into ranks. */
void tps_mesh_group_members(const struct tps_mesh *mesh, unsigned mask, int g,
			    int *ranks);
/* The index of rank's group, and rank's local rank within it. */
int tps_mesh_group_index(const struct tps_mesh *mesh, unsigned mask, int rank);
int tps_mesh_local_rank(const struct tps_mesh *mesh, unsigned mask, int rank);

/* One rank's share of some work. */
typedef enum tps_status (*tps_rank_fn)(void *ctx, int rank,
				       struct tps_error *err);

/*
 * Calls fn(ctx, r, err) for r = 0, 1, ..., world_size - 1, concurrently on
 * mesh->pool's threads. This is the one loop that does per-rank work: fn
 * must touch only rank r's data (and read shared data), so the result is
 * the same bytes for any thread count. On failure the error of the lowest
 * failing rank is returned, as a loop in rank order that stops at the first
 * error would return it; ranks after it may or may not have run.
 */
enum tps_status tps_mesh_for_each_rank(const struct tps_mesh *mesh,
				       tps_rank_fn fn, void *ctx,
				       struct tps_error *err);

/* The name of the group along the dims in mask: the dim's name for one dim,
 * the names joined by '_' for several, as PyTorch's _flatten() names them
 * ("dp_cp"). Written into buf (always NUL-terminated); returns buf. */
char *tps_mesh_mask_name(const struct tps_mesh *mesh, unsigned mask, char *buf,
			 size_t size);

#endif
