/*
 * The collectives, over the groups of one mesh dim (or several flattened).
 *
 * Every collective works on `locals`: one tensor per rank of the mesh, in rank
 * order (locals[r] is rank r's buffer). It runs independently in every group
 * along the dims in `mask` (see mesh.h), replaces the buffers in place, and
 * fills a report of what it moved. On error every buffer is left untouched.
 *
 * Order of arithmetic (the numerics contract): a sum across ranks starts from
 * a zeroed buffer and adds the members in ascending group order (local rank
 * 0, 1, ...); avg is that sum divided by the group size; max starts from local
 * rank 0's buffer.
 *
 * Dtypes (struct tps_comm_dtypes, dtype.h): a sum runs in the `sum` dtype
 * and its result is stored in the `store` dtype. Each member's value is
 * rounded to `sum` (a no-op when it is stored in it already), and the
 * running sum is rounded to `sum` after each member's addition, in the
 * order above, as NCCL adds a bf16 all_reduce in bf16; avg divides that
 * sum and rounds to `sum` again; the result is then rounded once to
 * `store`. With 3 members in bfloat16, acc = bf16(bf16(x0 + x1) + x2):
 * with x = (1, 2^-8, 2^-8), bf16(1 + 2^-8) is 1 (a tie, to even) and so is
 * the result, where float32 gives 1 + 2^-7 (fixtures/bf16_all_reduce_3_ranks
 * works it out). {F32, F32} is the float32 sum, unchanged. max only
 * picks a member's value: it is exact in any dtype.
 *
 * Bytes per rank, as a ring implementation sends them (docs/design.md
 * section 5),
 * with n the group size, S the full buffer in elements and c a chunk in bytes:
 *   all_gather      (n-1) c, c = the largest shard (uneven shards padded)
 *   reduce_scatter  (n-1) c, c = the largest chunk of S (padded)
 *   all_reduce     2(n-1) c, c = ceil(S / n) elements
 *   all_to_all      (n-1) c, c = the largest block a rank sends one peer
 *   scatter         (n-1) c at the root, c = the largest chunk
 *   broadcast       S (each rank but the last forwards the whole buffer)
 * Where groups differ, the largest. A group of size 1 moves nothing: bytes 0.
 */
#ifndef TPSIM_COMM_H
#define TPSIM_COMM_H

#include <stdint.h>

#include "dtype.h"
#include "mesh.h"
#include "tensor.h"

enum tps_comm_op {
	TPS_COMM_ALL_GATHER,
	TPS_COMM_ALL_REDUCE,
	TPS_COMM_REDUCE_SCATTER,
	TPS_COMM_BROADCAST,
	TPS_COMM_SCATTER,
	TPS_COMM_ALL_TO_ALL,
};
#define TPS_COMM_OP_COUNT 6

enum tps_reduce_op {
	TPS_REDUCE_SUM,
	TPS_REDUCE_AVG,
	TPS_REDUCE_MAX,
};

/* The dtype a reduction sums in and the dtype its result is stored in
 * (the top of this file). */
struct tps_comm_dtypes {
	enum tps_dtype sum, store;
};
/* float32 throughout: the plain float32 sum. */
#define TPS_COMM_F32 ((struct tps_comm_dtypes){TPS_DTYPE_F32, TPS_DTYPE_F32})

struct tps_comm_report {
	enum tps_comm_op op;
	unsigned mask; /* the mesh dims the groups run along */
	int group_size;
	int64_t bytes_per_rank;
};

/* "all_gather", "all_reduce", ... as in the trace. */
const char *tps_comm_op_name(enum tps_comm_op op);
const char *tps_reduce_op_name(enum tps_reduce_op op);

/* Each member gets the concatenation along tensor_dim of its group's buffers,
 * in local-rank order. Other dims must agree. */
enum tps_status tps_comm_all_gather(const struct tps_mesh *mesh, unsigned mask,
				    struct tps_tensor *locals, int tensor_dim,
				    struct tps_comm_report *report,
				    struct tps_error *err);

/* Each member gets the reduction of its group's (equal-shaped) buffers, in
 * the dtypes dt (the top of this file). */
enum tps_status tps_comm_all_reduce(const struct tps_mesh *mesh, unsigned mask,
				    struct tps_tensor *locals,
				    enum tps_reduce_op op,
				    struct tps_comm_dtypes dt,
				    struct tps_comm_report *report,
				    struct tps_error *err);

/* Reduces as all_reduce, then local rank i keeps chunk i along tensor_dim
 * (the tps_chunk_range rule). */
enum tps_status
tps_comm_reduce_scatter(const struct tps_mesh *mesh, unsigned mask,
			struct tps_tensor *locals, enum tps_reduce_op op,
			struct tps_comm_dtypes dt, int tensor_dim,
			struct tps_comm_report *report, struct tps_error *err);
/* The same with the chunks in whole blocks of `block` elements along
 * tensor_dim (tps_chunk_range_blocks: shard(d,block=b)); block 1 is the call
 * above. TPS_ERR_SHAPE when the dim is not a multiple of block. */
enum tps_status tps_comm_reduce_scatter_blocks(
	const struct tps_mesh *mesh, unsigned mask, struct tps_tensor *locals,
	enum tps_reduce_op op, struct tps_comm_dtypes dt, int tensor_dim,
	int64_t block, struct tps_comm_report *report, struct tps_error *err);

/* Each member gets a copy of local rank `root`'s buffer. */
enum tps_status tps_comm_broadcast(const struct tps_mesh *mesh, unsigned mask,
				   struct tps_tensor *locals, int root,
				   struct tps_comm_report *report,
				   struct tps_error *err);

/* Local rank i gets chunk i (along tensor_dim) of local rank root's buffer. */
enum tps_status tps_comm_scatter(const struct tps_mesh *mesh, unsigned mask,
				 struct tps_tensor *locals, int root,
				 int tensor_dim, struct tps_comm_report *report,
				 struct tps_error *err);
/* The same in whole blocks of `block` elements (see reduce_scatter_blocks). */
enum tps_status tps_comm_scatter_blocks(const struct tps_mesh *mesh,
					unsigned mask,
					struct tps_tensor *locals, int root,
					int tensor_dim, int64_t block,
					struct tps_comm_report *report,
					struct tps_error *err);

/* Every member splits its buffer into n chunks along split_dim and sends
 * chunk j to local rank j; each member concatenates what it receives along
 * concat_dim in local-rank order. Turns shard(concat_dim) into
 * shard(split_dim). */
enum tps_status tps_comm_all_to_all(const struct tps_mesh *mesh, unsigned mask,
				    struct tps_tensor *locals, int split_dim,
				    int concat_dim,
				    struct tps_comm_report *report,
				    struct tps_error *err);
/* The same with the split in whole blocks of split_block elements along
 * split_dim: turns shard(concat_dim, any block) into
 * shard(split_dim,block=split_block). TPS_ERR_SHAPE when a member's
 * split_dim is not a multiple of split_block. The concatenation needs no
 * block: it puts back whatever the members hold, in order. */
enum tps_status tps_comm_all_to_all_blocks(
	const struct tps_mesh *mesh, unsigned mask, struct tps_tensor *locals,
	int split_dim, int64_t split_block, int concat_dim,
	struct tps_comm_report *report, struct tps_error *err);

#endif
