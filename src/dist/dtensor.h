/*
 * A distributed tensor, as DTensor has it: one global tensor held as one
 * local tensor per rank, plus one placement per mesh dim.
 *
 *   replicate  every rank of the group holds the same values
 *   shard(d)   the group splits tensor dim d by the chunk rule (tensor.h),
 *              local rank i holding chunk i
 *   shard(d,block=b)
 *              the same in whole blocks of b elements (attention heads of
 *              head_dim b): dim d, a multiple of b, is chunked as d/b units
 *              (tps_chunk_range_blocks). 5 heads of 2 over 2 ranks: elements
 *              [0,6) and [6,10). shard(d) is block 1.
 *   partial    the global value is the sum over the group of the locals
 *   shard(d,flat)
 *              the mesh dims that carry it for the same d, flattened
 *              (row-major in mesh order, as mesh["dp", "cp"]._flatten()),
 *              split dim d as one chunk: the rank at index i of the
 *              flattened group of k ranks holds chunk i of k. 5 rows over
 *              (dp 2, cp 2): 2, 2, 1, 0, where shard(0) on each would give
 *              a chunk of a chunk, 2, 1, 1, 1. The batch over several dp
 *              dims is split so; only distribute makes it (redistribute
 *              refuses to change it).
 *
 *   shard(d,local), shard(d,flat,local)
 *              split after every other mesh dim, whatever the mesh order:
 *              each rank's chunk of its local tensor, as ZeRO and FSDP2
 *              shard a TP shard over dp (FSDP2's _StridedShard,
 *              docs/zero.md). Rank (dp i, tp j) of a colwise weight holds
 *              chunk i of tp chunk j. Only ZeRO makes one (redistribute
 *              refuses to change it).
 *
 * Several mesh dims may shard the same tensor dim: the split is applied mesh
 * dim by mesh dim in mesh order (DTensor's order), the local shards last,
 * so each rank's local region is a chunk of a chunk
 * (tps_dtensor_local_region); a flat group counts as one step, at its first
 * mesh dim.
 *
 * Redistribution (the algebra of docs/design.md section 2):
 *   partial  -> replicate   all_reduce (sum)
 *   partial  -> shard(d)    reduce_scatter along d
 *   shard(d) -> replicate   all_gather along d
 *   shard(d) -> shard(e)    all_to_all
 *   replicate -> shard(d)   local split, no communication
 * Mesh dims are changed one at a time: first every change that communicates,
 * from the last mesh dim to the first (inner shards are gathered before outer
 * ones), then the local splits from the first mesh dim to the last.
 */
#ifndef TPSIM_DTENSOR_H
#define TPSIM_DTENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "comm.h"
#include "mesh.h"
#include "tensor.h"

enum tps_placement_kind {
	TPS_PLACEMENT_REPLICATE,
	TPS_PLACEMENT_SHARD,
	TPS_PLACEMENT_PARTIAL,
};

struct tps_placement {
	enum tps_placement_kind kind;
	int dim; /* shard: the tensor dim, normalised to >= 0; else 0 */
	/* shard: the chunk rule's unit in elements along dim (1 = element-
	 * wise, head_dim for whole attention heads); 1 for the other kinds.
	 * Read it with tps_placement_block, which takes a 0 (a zeroed struct)
	 * as 1. */
	int64_t block;
	/* shard: one of a flattened group's mesh dims (shard(d,flat)); then
	 * block is 1. */
	bool flat;
	/* shard: split after every non-local mesh dim, whatever the mesh
	 * order (shard(d,local), or shard(d,flat,local) over a flattened
	 * group): a chunk of each rank's local tensor, as FSDP2's
	 * _StridedShard is of a TP shard (docs/zero.md); block 1. */
	bool local;
};

/* Every constructor gives block 1. */
struct tps_placement tps_placement_replicate(void);
struct tps_placement tps_placement_shard(int dim);
/* shard(dim) in whole blocks of `block` elements; block 0 is taken as 1,
 * a negative block is asserted against. */
struct tps_placement tps_placement_shard_blocks(int dim, int64_t block);
struct tps_placement tps_placement_partial(void);
/* shard(dim,flat): see the top of this file. */
struct tps_placement tps_placement_shard_flat(int dim);
/* shard(dim,local), or shard(dim,flat,local) with flat. */
struct tps_placement tps_placement_shard_local(int dim, bool flat);
/* A shard's block (>= 1); 1 for replicate and partial. */
int64_t tps_placement_block(struct tps_placement p);
/* Same kind; for shards also the same dim, block and flatness. */
bool tps_placement_equal(struct tps_placement a, struct tps_placement b);
/* "replicate", "shard(1)", "shard(1,block=2)" (block > 1 only),
 * "shard(0,flat)", "shard(0,local)", "shard(0,flat,local)", "partial" into
 * buf (32 bytes suffice). Returns buf. */
char *tps_placement_format(struct tps_placement p, char *buf, size_t size);
/*
 * Reads what tps_placement_format writes, for a tensor of ndim dims:
 * "replicate", "partial", "shard(d)", "shard(d,block=b)" and
 * "shard(d,flat)", "shard(d,local)", "shard(d,flat,local)" with d a dim
 * (negative counts from the end; normalised)
 * and b a whole number from 1 to 2^31, no spaces. Returns false, *p
 * untouched, on anything else.
 */
bool tps_placement_parse(const char *s, int ndim, struct tps_placement *p);
/* What tps_placement_parse reads, for the message of a reader that
 * refuses a placement string. */
#define TPS_PLACEMENT_FORMS                                                    \
	"replicate, partial or shard(d) (or shard(d,block=b), shard(d,flat), " \
	"shard(d,local), shard(d,flat,local)) with d a dim of the global "     \
	"shape"

struct tps_dtensor {
	const struct tps_mesh *mesh; /* not owned */
	struct tps_shape global;
	struct tps_placement placements[TPS_MAX_MESH_DIMS]; /* per mesh dim */
	struct tps_tensor *locals; /* world_size tensors, rank order; owned */
};

/*
 * The region of the global tensor that `rank` holds: offset[d] and length[d]
 * per tensor dim (partial and replicate dims do not narrow it). Asserts that
 * the placements are valid (tps_dtensor_check_placements).
 */
void tps_dtensor_local_region(const struct tps_mesh *mesh,
			      const struct tps_shape *global,
			      const struct tps_placement *placements, int rank,
			      int64_t *offset, int64_t *length);

/*
 * Whether the placements can lay out a tensor of shape `global` on mesh:
 * every shard dim is one of its dims, and every block divides the length it
 * chunks, on every rank and at every level of a chunk of a chunk (a dim of 5
 * cannot be shard(d,block=2)). TPS_ERR_SHAPE names the mesh dim, the
 * placement, the length and the block.
 */
enum tps_status tps_dtensor_check_placements(
	const struct tps_mesh *mesh, const struct tps_shape *global,
	const struct tps_placement *placements, struct tps_error *err);

/*
 * distribute_tensor: every rank gets its region of `global`. A partial mesh
 * dim puts the values on local rank 0 of each group and zeros elsewhere.
 * Invalid placements (tps_dtensor_check_placements) are TPS_ERR_SHAPE.
 * On error *dt is untouched.
 */
enum tps_status tps_dtensor_distribute(struct tps_dtensor *dt,
				       const struct tps_mesh *mesh,
				       const struct tps_tensor *global,
				       const struct tps_placement *placements,
				       struct tps_error *err);

/* tps_dtensor_distribute, each local a view of global's values where
 * its region is contiguous and not zeroed (tps_tensor_view_region), so a
 * colwise shard or a replica costs no memory: for values nobody writes
 * (an inference run's parameters), and global must outlive *dt. */
enum tps_status tps_dtensor_distribute_shared(
	struct tps_dtensor *dt, const struct tps_mesh *mesh,
	const struct tps_tensor *global, const struct tps_placement *placements,
	struct tps_error *err);

/* Takes ownership of `locals` (world_size tensors). Never fails. */
void tps_dtensor_wrap(struct tps_dtensor *dt, const struct tps_mesh *mesh,
		      const struct tps_shape *global,
		      const struct tps_placement *placements,
		      struct tps_tensor *locals);

/*
 * Assembles the global value for inspection (no collective is recorded):
 * shards are placed at their regions, partial groups summed in ascending
 * rank order into a zeroed buffer, replicas read from local rank 0.
 */
enum tps_status tps_dtensor_full_tensor(const struct tps_dtensor *dt,
					struct tps_tensor *out,
					struct tps_error *err);
/* The same for what only process 0 reads (an outcome, the trace's
 * parameters): under a backend (backend.h) process 0 assembles it and
 * every other process gets a meta tensor of its shape; without one, the
 * call above. */
enum tps_status tps_dtensor_full_tensor_on_writer(const struct tps_dtensor *dt,
						  struct tps_tensor *out,
						  struct tps_error *err);

void tps_dtensor_free(struct tps_dtensor *dt);

/* A copy of every rank's local tensor, with x's mesh, shape and
 * placements. On error *out is untouched. */
enum tps_status tps_dtensor_copy(struct tps_dtensor *out,
				 const struct tps_dtensor *x,
				 struct tps_error *err);

/* Makes rank `rank`'s local tensor in *out (untouched on error). */
typedef enum tps_status (*tps_local_fn)(void *ctx, int rank,
					struct tps_tensor *out,
					struct tps_error *err);

/*
 * A new dtensor whose locals[r] = fn(ctx, r) for every rank, run through
 * tps_mesh_for_each_rank, with the given global shape and placements.
 * On error every local made so far is freed and *out is untouched.
 */
enum tps_status tps_dtensor_map(struct tps_dtensor *out,
				const struct tps_mesh *mesh,
				const struct tps_shape *global,
				const struct tps_placement *placements,
				tps_local_fn fn, void *ctx,
				struct tps_error *err);

/*
 * out = a * b element-wise, rank by rank, with no collective: a and b must
 * have the same mesh, global shape and placements, and no partial one
 * ((a1 + a2)(b1 + b2) is not a1 b1 + a2 b2). Otherwise TPS_ERR_SHAPE,
 * naming the first mesh dim where they differ and both layouts; the
 * caller redistributes first. On error *out is untouched.
 */
enum tps_status tps_dtensor_mul(struct tps_dtensor *out,
				const struct tps_dtensor *a,
				const struct tps_dtensor *b,
				struct tps_error *err);

/*
 * Rotary position embeddings (tps_tensor_rope) on a dtensor of shape
 * (..., S, F), rank by rank with no collective: each rank's rows are the
 * global positions its region of dim -2 starts at (tps_dtensor_local_region),
 * so a sequence sharded over any mesh dims (sequence or context parallel
 * layouts, uneven chunks, a chunk of a chunk) turns by the positions of
 * the whole sequence, never by a shard's own row index. A partial tensor
 * stays partial (the rotation is linear). Each rank must hold whole heads
 * of head_dim features: otherwise TPS_ERR_SHAPE, naming the rank and its
 * features. On error *out is untouched.
 */
enum tps_status tps_dtensor_rope(struct tps_dtensor *out,
				 const struct tps_dtensor *x, int64_t head_dim,
				 double theta, enum tps_rope_style style,
				 int sign, struct tps_error *err);

/* One step of a redistribution, as the observer sees it. */
enum tps_redistribute_kind {
	TPS_REDISTRIBUTE_COLLECTIVE, /* report says which and what it moved */
	TPS_REDISTRIBUTE_SPLIT,	     /* replicate -> shard, local */
};

struct tps_redistribute_step {
	enum tps_redistribute_kind kind;
	int mesh_dim;
	struct tps_placement before, after; /* on that mesh dim */
	struct tps_comm_report report;	    /* collectives only */
};

/* Called after each step with the tensor as it now is. Returning an error
 * stops the redistribution (dt is then left at that step). */
typedef enum tps_status (*tps_redistribute_observer)(
	void *ctx, const struct tps_redistribute_step *step,
	const struct tps_dtensor *dt, struct tps_error *err);

/*
 * Changes dt's placements to target, one mesh dim at a time (see the top of
 * this file), calling observer (may be NULL) after every step that does
 * something. A shard target in blocks chunks in its blocks (reduce_scatter,
 * all_to_all and the local split alike). shard(d,block=b) -> shard(d,block=c)
 * on the same dim is two steps: all_gather to replicate, then the local
 * split. Steps on a mesh dim of size 1 relabel the placement only and are
 * not reported. TPS_ERR_UNSUPPORTED for replicate -> partial, for a step
 * on a tensor dim that an inner mesh dim keeps sharded (the nesting would be
 * wrong) and for a step from or to a flat shard; TPS_ERR_SHAPE for a block that
 * does not divide the length it chunks. On error dt holds the last completed
 * step. A partial dim's reduction sums in dtypes.sum and stores in
 * dtypes.store (comm.h; TPS_COMM_F32: float32).
 */
enum tps_status tps_dtensor_redistribute(struct tps_dtensor *dt,
					 const struct tps_placement *target,
					 struct tps_comm_dtypes dtypes,
					 tps_redistribute_observer observer,
					 void *ctx, struct tps_error *err);

#endif
