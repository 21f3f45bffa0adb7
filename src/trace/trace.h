/*
 * The trace: a streaming JSON writer for "tpsim.trace" version 1
 * (docs/design.md section 5), and the event sink the model reports to.
 *
 * The trace is written as it happens, top-level keys in this order:
 * format, version, generator, config, mesh, warnings (only when there are
 * some), params, inputs, events, result, comm. Each top-level key and each
 * event is one line, so traces diff well. Tensor values are written by the
 * streaming writer (never through a cJSON tree), as the shortest float32
 * decimals (numfmt.h).
 *
 * Values mode:
 *   full     "values": nested arrays in the tensor's shape ([] when empty)
 *   summary  instead of "values": "min", "max", "mean" (omitted when
 *            empty) and "hash" (XXH3-64, seed 0, of the little-endian
 *            float32 bytes, 16 hex digits)
 *   none     shapes only
 *
 * Use: tps_trace_init, tps_trace_begin, tps_trace_write_params,
 * tps_trace_write_inputs, tps_trace_begin_events, events through
 * tps_trace_sink, tps_trace_end_events, tps_trace_write_result,
 * tps_trace_finish, tps_trace_free. The sink refuses an event holding a NaN
 * or Inf with TPS_ERR_NUMERIC naming the event.
 */
#ifndef TPSIM_TRACE_H
#define TPSIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "model.h"

#include "spec.h"

/* Collective counts and bytes per rank under one key ("all_reduce", "fc2",
 * "forward", "tp"), in first-seen order. */
struct tps_trace_tally {
	int section; /* 0 by op, 1 by phase, 2 module, 3 dim */
	char key[TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX]; /* fits any name */
	int64_t count;
	int64_t bytes_per_rank;
};

struct tps_trace {
	FILE *out; /* not owned */
	enum tps_trace_values values;
	const struct tps_mesh *mesh; /* not owned */
	int64_t next_seq;
	bool first_event;
	int64_t collectives;	/* events of kind "collective" */
	int64_t bytes_per_rank; /* their sum */
	struct tps_trace_tally *tallies;
	size_t n_tallies, cap_tallies;
	/* The first event an injected mistake made (result.diverged_at). */
	const char *first_mistake;
	int64_t first_mistake_seq;
	/* Each mask's "groups" array as JSON text, made at its first event
	 * (every event over the same dims lists the same groups). */
	char *groups_json[1u << TPS_MAX_MESH_DIMS];
	/* Estimating (tps_trace_init_estimate): the run is written from meta
	 * tensors. With as_values, as a values run would write it: every
	 * event lists its ranks, and each tensor's values (and each loss and
	 * max_abs_diff) are not written but counted as at most
	 * tps_trace_values_bound bytes, added up in bound_bytes. */
	bool estimate, as_values;
	int64_t bound_bytes;
	/* A budget (tps_trace_set_budget), and once an event took the
	 * trace past it, the stream the rest is counted into instead (in
	 * estimate mode), its bytes, and the position it took over at. */
	int64_t budget;
	FILE *counter;
	int64_t counted, counted_from;
	/* Every event's flops on its busiest rank times the world size. */
	int64_t flops;
	/* A pipeline's: the bytes per rank of each stage's collectives by
	 * phase (stage_bytes[stage * TPS_PHASE_COUNT + phase]), made at the
	 * first event with a stage; NULL before. A rank sends only its
	 * stage's. */
	int64_t *stage_bytes;
};

/* The bytes each rank sends over the trace's collectives: their sum, or
 * under a pipeline the busiest stage's (its ranks send only its
 * events'). */
int64_t tps_trace_bytes_per_rank(const struct tps_trace *t);

/* What the run concluded: the simulation's and the reference's outcomes
 * (global tensors), and their comparison. In training the gradients are
 * named after model's parameters, then "input". */
struct tps_trace_result {
	const struct tps_model *model;
	const struct tps_model_outcome *sim, *ref;
	float max_abs_diff;
	bool match;
	/* How each tensor compared (model.h); NULL when nothing was: the
	 * run stopped or is symbolic. */
	const struct tps_comparison *comparison;
	const char *verdict;   /* NULL, or the comparison in words */
	const char *diagnosis; /* NULL, or what an injected mistake did */
	/* NULL, or the shape error an injected mistake stopped the
	 * simulation at: then sim holds nothing. */
	const char *stopped;
	/* A symbolic run (meta tensors, no reference: ref is NULL): the
	 * result holds the output's shape and "symbolic", what each rank
	 * holds (tps_model_footprint) and sends by phase. */
	bool symbolic;
};

void tps_trace_init(struct tps_trace *t, FILE *out,
		    enum tps_trace_values values, const struct tps_mesh *mesh);
/* tps_trace_init for estimating a run's trace from a meta run (see
 * estimate above); as_values: the run has values (it is not symbolic). */
void tps_trace_init_estimate(struct tps_trace *t, FILE *out,
			     enum tps_trace_values values,
			     const struct tps_mesh *mesh, bool as_values);
/*
 * Makes the trace stop writing once it is larger than budget bytes: from
 * the event that takes it past, the rest is counted, not written (estimate
 * mode; values: the run has values, see tps_trace_init_estimate), so that
 * tps_trace_size still gives the whole size. For a run whose estimate
 * would cost as much as the run (a symbolic one of one or two steps).
 */
void tps_trace_set_budget(struct tps_trace *t, int64_t budget, bool values);
/* The trace's size: written so far, and counted past its budget. */
int64_t tps_trace_size(struct tps_trace *t);
/* A stream that writes nothing and adds the bytes it is given to *count
 * (after fflush); NULL without memory. The caller fcloses it. */
FILE *tps_trace_counter_open(int64_t *count);

/*
 * At most how many bytes a tensor of this shape takes where its values go
 * (after its "shape"), in this values mode: full, ',"values":' and nested
 * arrays of at most TPS_NUMFMT_FLOAT_LEN_MAX bytes a value (the brackets
 * and commas exactly); summary, its min, max and mean at that length and
 * its hash; none, 0. Saturates at INT64_MAX.
 */
int64_t tps_trace_values_bound(enum tps_trace_values values,
			       const struct tps_shape *shape);
void tps_trace_free(struct tps_trace *t);

/* format, version, generator, config (written as given) and mesh. */
enum tps_status tps_trace_begin(struct tps_trace *t, const cJSON *config,
				struct tps_error *err);
/* "warnings": an array of n sentences; nothing when n is 0. */
enum tps_status tps_trace_write_warnings(struct tps_trace *t,
					 const char *const *warnings, int n,
					 struct tps_error *err);
enum tps_status tps_trace_write_params(struct tps_trace *t,
				       const struct tps_model *model,
				       struct tps_error *err);
/* target may be NULL (inference). Their values are written in the dtypes
 * the spec gives them (tps_model_input_dtype, _target_dtype). */
enum tps_status tps_trace_write_inputs(struct tps_trace *t,
				       const struct tps_model_spec *spec,
				       const struct tps_tensor *input,
				       const struct tps_tensor *target,
				       struct tps_error *err);
enum tps_status tps_trace_begin_events(struct tps_trace *t,
				       struct tps_error *err);
struct tps_event_sink tps_trace_sink(struct tps_trace *t);
enum tps_status tps_trace_end_events(struct tps_trace *t,
				     struct tps_error *err);
enum tps_status tps_trace_write_result(struct tps_trace *t,
				       const struct tps_trace_result *r,
				       struct tps_error *err);
/* The collective bytes per rank emitted so far in one phase (the sum over
 * its events of each event's bytes_per_rank, as "comm"."by_phase"). */
int64_t tps_trace_phase_bytes(const struct tps_trace *t, enum tps_phase phase);
/* Writes "comm", closes the document and flushes; reports write errors. */
enum tps_status tps_trace_finish(struct tps_trace *t, struct tps_error *err);

/*
 * Reading a trace: what every verb that reads one shares (explain,
 * picture, timeline, view, and check's trace), so that none prints or
 * draws what a trace cannot hold.
 *
 * tps_trace_validate checks a parsed trace against docs/trace.md, in
 * document order, and reports the first problem at its JSON Pointer
 * ("t.json: /events/3/seq: expected 3 (events in order, each seq once),
 * got 2"), TPS_ERR_INPUT:
 *  - the header (tps_check_is_trace: a config or a fixture is named as
 *    such), then generator, config, mesh, params, inputs, events, result
 *    and comm present with their types; warnings, if any, sentences;
 *  - mesh: 1 to 4 sizes, names, world_size their product, and each dim's
 *    groups those of tpsim mesh;
 *  - every tensor (params, inputs, the result's): a shape of 0 to 4 sizes
 *    of at most 2^48 elements, and its values in that shape ("values"
 *    nested to the shape, finite numbers; [] when empty), or a summary's
 *    min, max, mean numbers and hash of 16 hex digits, or none; a
 *    parameter's placements as an event's;
 *  - events: event i has seq i; step a whole number; phase and kind of
 *    their names; module, op and tensor strings; mesh_dim a mesh dim's
 *    name (or dims' joined by '_') and groups of ranks of the mesh, each
 *    rank in one group; global_shape as a shape; one placement per mesh
 *    dim, valid for the global shape (a shard dim of it, blocks that
 *    divide); bytes_per_rank a whole number; ranks, when present (a
 *    symbolic trace has none), every rank of the mesh in rank order, each
 *    with the shape of the block its placements give it and values in
 *    it;
 *  - result: its tensors, losses, max_abs_diff, match, diverged_at (an
 *    event's seq) and symbolic figures (whole numbers, ranks of the mesh);
 *    comm: whole counts and bytes.
 * Keys it does not know are not refused. Never allocates more than a
 * fixed reader; about as fast as walking the tree once.
 */
enum tps_status tps_trace_validate(const cJSON *trace, const char *name,
				   struct tps_error *err);

/*
 * Reads the trace file at path ("-": stdin) for a verb: at most
 * TPS_JSON_MAX_TRACE_BYTES, strict JSON (jsonio.h), tps_trace_validate.
 * On success *tree (cJSON_Delete), and when text is not NULL the file's
 * bytes in *text (free) and *text_len (tpsim view embeds them). On error
 * TPS_ERR_IO, TPS_ERR_LIMIT, TPS_ERR_INPUT or TPS_ERR_NOMEM with a message
 * naming path, and the outputs untouched.
 */
enum tps_status tps_trace_read(const char *path, cJSON **tree, char **text,
			       size_t *text_len, struct tps_error *err);

/*
 * tps_trace_read for a verb that only checks that the file is a trace
 * (`tpsim view`): the numbers of its "values" are counted, not kept
 * (jsonio.h, tps_json_parse_counted), so the tree is small beside the
 * text whatever the values mode. The same errors as tps_trace_read's;
 * the tree's values must not be read. text is required.
 */
enum tps_status tps_trace_read_counted(const char *path, cJSON **tree,
				       char **text, size_t *text_len,
				       struct tps_error *err);

/*
 * tps_trace_read, its tree in an arena (jsonio.h, tps_json_parse_arena):
 * read-only, in about 4/5 of the memory, for a verb that only reads a
 * large trace (`tpsim timeline`). On success *arena (tps_json_arena_free)
 * and *tree, its root; errors as tps_trace_read's, outputs untouched.
 */
struct tps_json_arena;
enum tps_status tps_trace_read_arena(const char *path,
				     struct tps_json_arena **arena,
				     const cJSON **tree, struct tps_error *err);

/*
 * A trace's tensors (trace_global.c), for the verbs that compare traces
 * (tpsim diff, tpsim plot). The trace must have passed tps_trace_read.
 *
 * tps_trace_read_mesh: the mesh of its "mesh" (TPS_ERR_INPUT at the
 * pointer of what tps_mesh_init refuses).
 *
 * tps_trace_event_global: event `index`'s global value, assembled from
 * its ranks' blocks as the run assembles its outcome (dtensor.h,
 * tps_dtensor_full_tensor: shards at their regions, partial sums added in
 * ascending rank order, one replica of each replicate dim), its rows in
 * sample order where DistributedSampler strided them over dp. *out is new.
 * TPS_ERR_INPUT at the event's pointer when it has no values (a symbolic
 * trace's events, or a summary's or none's ranks); TPS_ERR_NOMEM. On
 * error *out is untouched.
 */
enum tps_status tps_trace_read_mesh(struct tps_mesh *mesh, const cJSON *trace,
				    const char *trace_name,
				    struct tps_error *err);
enum tps_status tps_trace_event_global(const cJSON *trace,
				       const char *trace_name,
				       const struct tps_mesh *mesh, int index,
				       struct tps_tensor *out,
				       struct tps_error *err);

/* How a run's tensors were compared with the reference (the trace's
 * result.comparison), for explain: "exact comparison" (all of them),
 * "error-bound comparison" (each within its bound, some maybe exactly),
 * "tolerance comparison" (no bound), or "error bounds for 5 of 9
 * tensors (2 exact), tolerance for the rest". */
void tps_trace_describe_comparison(int exact, int bounded, int compared,
				   char *buf, size_t size);

/* Writes the mesh's "shape", "dim_names", "world_size" and "groups" (per
 * dim name, every group) as members of an enclosing object. */
void tps_trace_write_mesh_fields(FILE *out, const struct tps_mesh *mesh);
/* Writes group g along the dims in mask as a JSON array of ranks. */
void tps_trace_write_group(FILE *out, const struct tps_mesh *mesh,
			   unsigned mask, int g);

#endif
