/*
 * Sharding pictures: which rank holds which block of a tensor, read from
 * one event of a trace, as PyTorch's visualize_sharding and JAX's
 * visualize_array_sharding draw them, with partial sums told apart.
 *
 * A block is what the ranks with the same coordinate on every shard mesh
 * dim hold: the region tps_dtensor_local_region gives (the chunk rule,
 * chunk of a chunk when two mesh dims shard one tensor dim). Replicate and
 * partial mesh dims do not narrow it, so several ranks hold one block:
 * copies along replicate dims, addends along partial dims.
 *
 * Example: fc1.weight (4, 4), placements [replicate, shard(0)] on the mesh
 * (2, 2) named (dp, tp), ranks [[0, 1], [2, 3]]:
 *   A  rows 0-1, cols 0-3: ranks 0,2 (tp=0)
 *   B  rows 2-3, cols 0-3: ranks 1,3 (tp=1)
 *
 * Drawing rule for any number of dims: the last dim is the columns, the
 * one before it the rows; a 1-D tensor is one row, a 0-D one a single
 * cell. Dims before the last two ("leading" dims) are not drawn: each
 * distinct leading index range gets its own panel, named by it
 * ("dim0 0-1"), and every block's label starts with it.
 *
 * The writers produce the same bytes for the same picture: no locale, no
 * floating point, blocks in rank order of their first rank.
 */
#ifndef TPSIM_PICTURE_H
#define TPSIM_PICTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "dtensor.h"
#include "error.h"
#include "mesh.h"
#include "tensor.h"

/*
 * One colour scheme and one legend for every picture of a tensor's blocks:
 * the text and Markdown pictures (their legend lines), the SVG (fills,
 * borders, the legend's swatches), and tpsim view's block map, rank cards
 * and legend (src/trace/viewer/viewer.css and viewer.js hold the same colours
 * and words; test_picture checks that they do). A picture is of one kind:
 * partial when a mesh dim (of more than one rank) holds partial sums,
 * else shard when it has more than one block, else replicate. Its legend
 * has a line for each kind of placement it has, "<name> over <dims>:
 * <legend>."; partial blocks are hatched and dashed besides, so the kinds
 * differ without colour too.
 */
enum tps_picture_kind {
	TPS_PICTURE_SHARD,
	TPS_PICTURE_REPLICATE,
	TPS_PICTURE_PARTIAL,
};
#define TPS_PICTURE_KINDS 3

struct tps_picture_style {
	const char *name;   /* "shard", "replicate", "partial sum" */
	const char *fill;   /* "#e6eef8": a block's background */
	const char *line;   /* its border, and a partial block's hatching */
	const char *legend; /* what the kind means, one sentence */
};
extern const struct tps_picture_style tps_picture_styles[TPS_PICTURE_KINDS];

struct tps_picture_block {
	int64_t offset[TPS_MAX_DIMS]; /* the region of the global tensor */
	int64_t length[TPS_MAX_DIMS];
	/* Its coordinate on each shard mesh dim; -1 on the others. */
	int coord[TPS_MAX_MESH_DIMS];
	int first; /* its ranks: ranks[first .. first + n_ranks), ascending */
	int n_ranks;
	bool empty; /* some length is 0: nothing to draw, listed as empty */
	int panel;  /* index into panels; -1 when empty */
};

/* The leading-dims index range the blocks of one panel share. */
struct tps_picture_panel {
	int64_t offset[TPS_MAX_DIMS];
	int64_t length[TPS_MAX_DIMS];
};

struct tps_picture {
	char tensor[128]; /* the event's tensor ("fc1.weight") */
	long long seq;	  /* the event's seq */
	char op[64];	  /* the event's op ("distribute", "all_reduce") */
	struct tps_mesh mesh;
	struct tps_shape global;
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	/* The trace's config has "sampler": "distributed" and a mesh dim
	 * other than tp_dim shards dim 0: rows count positions in the
	 * sampler's order, not sample indices. */
	bool sampler_order;
	int n_blocks;
	struct tps_picture_block *blocks; /* owned, ascending first rank */
	int n_panels;
	struct tps_picture_panel *panels; /* owned, ascending offsets */
	int *ranks;			  /* owned, world_size entries */
};

/*
 * The picture of events[event_index] of `trace` (a parsed tpsim trace;
 * trace_name is its file name for messages). Reads mesh.shape,
 * mesh.dim_names, the event's tensor, seq, placements and global_shape,
 * and checks every rank's shape in the event against the block the
 * placements give it. On error (TPS_ERR_INPUT, naming the file and the
 * JSON Pointer, e.g. "t.json: /events/3/placements/0: expected replicate,
 * shard(d) or partial, got \"spread\""; TPS_ERR_NOMEM) *pic is untouched.
 * The caller frees a picture with tps_picture_free.
 */
enum tps_status tps_picture_from_event(struct tps_picture *pic,
				       const cJSON *trace,
				       const char *trace_name, int event_index,
				       struct tps_error *err);

/* Frees what pic owns; a zeroed picture is a no-op. */
void tps_picture_free(struct tps_picture *pic);

/* The index of the first event of `trace` whose tensor is `tensor`, or
 * -1. For a parameter this is its setup distribute event. */
int tps_picture_first_event(const cJSON *trace, const char *tensor);

/* The index of the event with that seq, or -1. */
int tps_picture_event_of_seq(const cJSON *trace, long long seq);

/*
 * The event `tpsim picture --tensor T [--event SEQ]` draws, into
 * *event_index: with seq < 0 the first event of the tensor, else the
 * event with that seq, which must produce the tensor. On error
 * (TPS_ERR_INPUT at /events or the event's tensor: "no event produces the
 * tensor \"x\"", "no event has seq 9 (--event)", "event 3 produces
 * \"fc1.out\", not \"x\" (--tensor)") *event_index is untouched.
 */
enum tps_status tps_picture_select(const cJSON *trace, const char *trace_name,
				   const char *tensor, long long seq,
				   int *event_index, struct tps_error *err);

/*
 * Text (md false, indented to sit under an explain event) or Markdown (md
 * true): "sharding of fc1.weight, 2 blocks:", a character map of each
 * panel where every cell shows its block's name (a partial block's name
 * ends in '+': "A+"), left out past 16 rows, 32 columns or 52 blocks; one
 * line per block, e.g.
 *   A   rows 0-1, cols 0-3: ranks 0,2 (tp=0; replicated over dp)
 * and a sentence for each of partial and replicate that the picture has.
 * Markdown puts the map in a fenced block and the lines in a list.
 */
void tps_picture_write_text(FILE *out, const struct tps_picture *pic, bool md);

/*
 * A standalone SVG 1.1 document: a <title>, one group per block (its own
 * <title> and a text label), panels side by side, the block list below,
 * and a legend of shard, replicate and partial. Integer coordinates only,
 * sized to its content.
 */
void tps_picture_write_svg(FILE *out, const struct tps_picture *pic);

#endif
