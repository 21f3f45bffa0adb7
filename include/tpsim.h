/*
 * tpsim.h: tpsim as a library. The only installed header.
 *
 * tpsim simulates tensor parallelism deterministically in one process:
 * each rank of a device mesh is a struct in one address space, each
 * collective a plain sum or concatenation of their buffers, and each run
 * writes a JSON trace of every rank's shapes and values, checked against a
 * single-device reference of the same model (docs/design.md). This header
 * does what the `tpsim` command line does, for a C program (and, through
 * ctypes or cffi, for Python):
 *
 *   tpsim_config_load / _parse   a config, with --set's variables
 *   tpsim_run / _run_to_file     run it: the trace, and a result handle
 *   tpsim_trace_load / _parse    read a trace, iterate its events
 *   tpsim_check                  compare a trace with a fixture
 *   tpsim_trace_bounds           the error bounds of its values
 *   tpsim_explain, _picture_svg, _timeline, _view, _comm
 *                                what the verbs of the same names write
 *
 * A worked example: run the 2x4 example and print its verdict and the
 * per-rank output of its all_reduce (examples/embed/embed.c is this, whole).
 *
 *   #include <stdio.h>
 *   #include <stdlib.h>
 *   #include <string.h>
 *   #include <tpsim.h>
 *
 *   struct buf { char *data; size_t len; };
 *
 *   static int append(void *ctx, const char *data, size_t len)
 *   {
 *           struct buf *b = ctx;
 *           char *grown = realloc(b->data, b->len + len);
 *           if (!grown) return -1;
 *           memcpy(grown + b->len, data, len);
 *           b->data = grown;
 *           b->len += len;
 *           return 0;
 *   }
 *
 *   int main(void)
 *   {
 *           struct tpsim_config *cfg = NULL;
 *           struct tpsim_result *res = NULL;
 *           struct tpsim_trace *trace = NULL;
 *           struct tpsim_error *err = NULL;
 *           struct tpsim_run_options opts;
 *           struct buf b = {NULL, 0};
 *
 *           tpsim_run_options_init(&opts);
 *           if (tpsim_config_load("config.json", NULL, 0, &cfg, &err) ||
 *               tpsim_run(cfg, &opts, append, &b, &res, &err) ||
 *               tpsim_trace_parse(b.data, b.len, "trace", &trace, &err)) {
 *                   fprintf(stderr, "%s\n", tpsim_error_message(err));
 *                   return 2;   // (frees left out)
 *           }
 *           printf("%s\n", tpsim_result_verdict(res));
 *           for (size_t i = 0; i < tpsim_trace_event_count(trace); i++) {
 *               const struct tpsim_event *ev = tpsim_trace_event(trace, i);
 *               if (strcmp(tpsim_event_op(ev), "all_reduce") != 0)
 *                   continue;
 *               for (size_t r = 0; r < tpsim_event_rank_count(ev); r++) {
 *                   float v[64];
 *                   size_t n = 0;
 *                   tpsim_tensor_values(tpsim_event_rank(ev, r), v, 64,
 *                                       &n, NULL);
 *                   ...   // n values, row-major in the rank's shape
 *               }
 *           }
 *           tpsim_trace_free(trace);
 *           tpsim_result_free(res);
 *           tpsim_config_free(cfg);
 *           free(b.data);
 *           return 0;
 *   }
 *
 * Build with `cc embed.c $(pkg-config --cflags --libs tpsim)`.
 *
 * Conventions, for every function below:
 *  - Handles are opaque: struct tpsim_config, tpsim_result, tpsim_trace
 *    and tpsim_error are made by this library and freed by the caller with
 *    their _free function (x_free(NULL) is a no-op). Views (struct
 *    tpsim_event, tpsim_tensor, and every const char * returned) belong to
 *    the handle they came from and live as long as it does; never free
 *    them.
 *  - A function that can fail returns enum tpsim_status: TPSIM_OK (0), or
 *    the reason. On failure it sets *error, when error is not NULL, to a
 *    new error object the caller frees with tpsim_error_free, and leaves
 *    its other outputs untouched (a NULL handle). Pass error NULL to get
 *    the status alone.
 *  - NULL where a pointer is required is misuse of the API: the function
 *    returns TPSIM_ERR_MISUSE (with an error naming the argument), or, for
 *    an accessor that cannot fail, NULL, 0 or -1 as its comment says. It
 *    never crashes, asserts or exits on it. Bad user input (a config, a
 *    trace, a fixture) is never misuse: it is TPSIM_ERR_INPUT and the like,
 *    with the one-line message `tpsim` prints.
 *  - Output goes through a tpsim_write_fn, called as many times as it
 *    takes; the bytes are those the verb writes to its file or stdout.
 *  - No function prints, exits or installs a signal handler. Handles
 *    are not locked: use a handle from one thread at a time, except a
 *    config or a trace, which never change and may be used from several
 *    at once.
 *  - Strings are NUL-terminated UTF-8. Sizes are size_t, byte counts
 *    int64_t.
 *
 * Symbols: every function here is tpsim_ and exported with TPS_API; the
 * library exports nothing else (tests/api/ checks `nm -D` against this
 * header).
 */
#ifndef TPSIM_H
#define TPSIM_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define TPS_API __attribute__((visibility("default")))
#else
#define TPS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, errors, version ------------------------------------------ */

/* Why a call failed (the values of tpsim's exit code 2, "trouble", bar
 * TPSIM_ERR_MISUSE). */
enum tpsim_status {
	TPSIM_OK = 0,
	TPSIM_ERR_INPUT = 1,	   /* bad config, fixture or trace content */
	TPSIM_ERR_IO = 2,	   /* a file could not be read or written */
	TPSIM_ERR_SHAPE = 3,	   /* shapes do not fit together */
	TPSIM_ERR_LIMIT = 4,	   /* a size, memory or trace budget */
	TPSIM_ERR_NOMEM = 5,	   /* an allocation failed */
	TPSIM_ERR_NUMERIC = 6,	   /* a NaN or Inf was produced */
	TPSIM_ERR_UNSUPPORTED = 7, /* valid, but not done by this version */
	TPSIM_ERR_USAGE = 8,	   /* an option out of its range */
	TPSIM_ERR_MISUSE = 9,	   /* NULL where a pointer is required */
};

/* "0.3.0": the library's version (the same as `tpsim --version`'s). */
TPS_API const char *tpsim_version(void);

/* A status's short name ("ok", "bad input", "I/O error", ...; "unknown
 * status" for a value not in the enum). Never NULL; static. */
TPS_API const char *tpsim_status_name(enum tpsim_status status);

/* An error: made by a failing call (its `error` out-parameter), freed by
 * the caller. */
struct tpsim_error;

/* The status the call returned; TPSIM_ERR_MISUSE for NULL. */
TPS_API enum tpsim_status tpsim_error_status(const struct tpsim_error *e);

/* The one line `tpsim` prints after "tpsim: ", e.g.
 * "cfg.json: /model/0/in_features: expected 8, got 6"; "" for NULL. */
TPS_API const char *tpsim_error_message(const struct tpsim_error *e);

/*
 * Where the error is, when it is at a place in a JSON document (a config,
 * a trace, a fixture): the document's name as it was given (a path, or
 * the name passed with a buffer; not escaped) and the JSON Pointer of the
 * value (RFC 6901, not escaped: "" is the whole document, and the
 * message writes it "(root)"). NULL for an error at no such place (a
 * file that cannot be read, memory) and for NULL.
 */
TPS_API const char *tpsim_error_file(const struct tpsim_error *e);
TPS_API const char *tpsim_error_pointer(const struct tpsim_error *e);

/* What is wrong without the place: "expected 8, got 6"; the whole message
 * for an error at no place; "" for NULL. */
TPS_API const char *tpsim_error_what(const struct tpsim_error *e);

TPS_API void tpsim_error_free(struct tpsim_error *e);

/*
 * Receives output: len bytes at data (not NUL-terminated), in order.
 * Returns 0, or anything else to fail the call with TPSIM_ERR_IO (the
 * function then stops writing). ctx is passed through.
 */
typedef int (*tpsim_write_fn)(void *ctx, const char *data, size_t len);

/* ---- configs ---------------------------------------------------------- */

/* A config, read and validated (docs/config.md). Immutable: it may be run
 * any number of times, by several threads at once. */
struct tpsim_config;

/* A config variable set from outside, as `tpsim run --set NAME=VALUE`:
 * name must be one the config's "vars" defines; value finite. */
struct tpsim_var {
	const char *name;
	double value;
};

/*
 * Reads and validates the config file at path ("-" is standard input),
 * with n_vars variables set (vars may be NULL when n_vars is 0; a later
 * one of the same name wins). On success *config is a new config. On
 * error (TPSIM_ERR_IO, TPSIM_ERR_INPUT, TPSIM_ERR_LIMIT,
 * TPSIM_ERR_UNSUPPORTED, TPSIM_ERR_NOMEM) *config is untouched and the
 * error, for a bad config, has its file (path), pointer and what:
 * "c.json: /plan/fc2/style: unknown style \"rowise\" (expected one of
 * colwise, rowwise, ...)"; an unknown variable is reported at /vars.
 */
TPS_API enum tpsim_status
tpsim_config_load(const char *path, const struct tpsim_var *vars, size_t n_vars,
		  struct tpsim_config **config, struct tpsim_error **error);

/* The same from len bytes of text (copied; at most 16 MiB), named `name`
 * in messages and in the error's file. */
TPS_API enum tpsim_status
tpsim_config_parse(const char *text, size_t len, const char *name,
		   const struct tpsim_var *vars, size_t n_vars,
		   struct tpsim_config **config, struct tpsim_error **error);

TPS_API void tpsim_config_free(struct tpsim_config *config);

/* ---- runs ------------------------------------------------------------- */

/* How to run: `tpsim run`'s options. Set every field with
 * tpsim_run_options_init, then change what you need. */
struct tpsim_run_options {
	/* Threads the ranks and the reference run on; 0 (the default):
	 * the machine's cores. The trace is the same bytes for every
	 * count. At most 256. */
	int threads;
	/* Refuse a run whose tensors need more bytes (--max-memory;
	 * default 8 GiB), or whose trace would take more (--max-trace;
	 * default 1 GiB), with TPSIM_ERR_LIMIT and nothing written. */
	int64_t max_memory;
	int64_t max_trace;
	/* Nonzero: shapes, placements and collectives without values or
	 * reference (--symbolic; "compute": "symbolic"). */
	int symbolic;
};

/* The defaults: threads 0, max_memory 8 GiB, max_trace 1 GiB, symbolic 0.
 * options NULL is a no-op. */
TPS_API void tpsim_run_options_init(struct tpsim_run_options *options);

/* What a run concluded. */
struct tpsim_result;

/*
 * Runs config (options NULL: the defaults) and writes its trace
 * (docs/trace.md) through write(ctx, ...): the bytes `tpsim run -o` writes.
 * The trace is made in a temporary file first and handed to write only
 * when the whole run succeeded: on error write has not been called. On
 * success *result is a new result; a run that differs from its reference
 * succeeds too (tpsim_result_match says so). On error (TPSIM_ERR_INPUT, a
 * plan or shape the config cannot run; TPSIM_ERR_LIMIT, a budget;
 * TPSIM_ERR_NUMERIC; TPSIM_ERR_IO, the temporary file or write;
 * TPSIM_ERR_NOMEM; TPSIM_ERR_USAGE, options out of range) *result is
 * untouched.
 */
TPS_API enum tpsim_status tpsim_run(const struct tpsim_config *config,
				    const struct tpsim_run_options *options,
				    tpsim_write_fn write, void *ctx,
				    struct tpsim_result **result,
				    struct tpsim_error **error);

/*
 * The same, writing the trace to the file at path as `tpsim run -o PATH`
 * does: to PATH.tmp.XXXXXX beside it, renamed over PATH when whole (so a
 * failed run leaves no partial file and an existing file is replaced only
 * on success); a path that is not a regular file (/dev/null) is written
 * through a copy. A path that is the config's own file is refused
 * (TPSIM_ERR_USAGE). The library installs no signal handler: a process
 * killed mid-run may leave the temporary.
 */
TPS_API enum tpsim_status
tpsim_run_to_file(const struct tpsim_config *config,
		  const struct tpsim_run_options *options, const char *path,
		  struct tpsim_result **result, struct tpsim_error **error);

/* Nonzero when the run agreed with its reference (a symbolic run has none
 * to agree with: nonzero). A run that carried out an injected mistake
 * never matches. 0 for NULL. */
TPS_API int tpsim_result_match(const struct tpsim_result *result);

/* The largest |simulation - reference| over every compared tensor; +inf
 * when shapes differ or a shape error stopped the run; 0 for a symbolic
 * run and for NULL. */
TPS_API double tpsim_result_max_abs_diff(const struct tpsim_result *result);

/*
 * How the tensors were compared (docs/design.md section 3): each within
 * twice its error bound, what reordering the sums can explain
 * (docs/numerics.md), exactly where that bound is 0, and within the
 * tolerance where a tensor has no bound.
 */
enum tpsim_comparison {
	TPSIM_COMPARISON_NONE = 0,	/* symbolic, stopped, shapes, NULL */
	TPSIM_COMPARISON_EXACT = 1,	/* every tensor bit for bit */
	TPSIM_COMPARISON_TOLERANCE = 2, /* no tensor has a bound */
	/* some by their bounds (or exactly), the rest within tolerance */
	TPSIM_COMPARISON_MIXED = 3,
	TPSIM_COMPARISON_BOUND = 4, /* every tensor by its bound */
};
TPS_API enum tpsim_comparison
tpsim_result_comparison(const struct tpsim_result *result);

/* The tensors compared (output; in training every loss, gradient and
 * parameter after), how many of them exactly (bound 0), and how many by
 * a bound (the exact ones too). 0 for NULL. */
TPS_API int tpsim_result_compared(const struct tpsim_result *result);
TPS_API int tpsim_result_exact(const struct tpsim_result *result);
TPS_API int tpsim_result_bounded(const struct tpsim_result *result);

/* The most reordering the sums can explain of any compared difference:
 * the largest bound on |simulation - reference| (twice the error bound)
 * over the tensors that have one. 0 when there is none, and for NULL. */
TPS_API double tpsim_result_max_bound(const struct tpsim_result *result);

/*
 * Each compared tensor, i from 0 to tpsim_result_tensor_count - 1 in the
 * trace's order (result.bounds: the output, each step's loss, each
 * gradient, each parameter after the last step):
 *   _name        as the trace's events name it: "fc2.out", "loss",
 *                "fc1.weight.grad", "fc1.weight"
 *   _rule        "exact", "bound" or "tolerance" (no bound: _no_bound
 *                says why)
 *   _match       nonzero when every element is within what its rule
 *                allows (the injected-mistake rule aside)
 *   _max_abs_diff, _max_bound   the largest |difference|, and the largest
 *                bound of one: 2e, twice the error bound (tolerance:
 *                atol + rtol max |reference|)
 *   _ratio       the worst |difference| / bound of an element (+inf
 *                where the bound is 0 and the element differs; 0 when
 *                none differs)
 *   _worst       that element, "fc2.out[0][1]" ("" when none differs)
 * Out of range, and for NULL: 0, NaN, NULL or "" as the type has it.
 */
TPS_API size_t tpsim_result_tensor_count(const struct tpsim_result *result);
TPS_API const char *tpsim_result_tensor_name(const struct tpsim_result *result,
					     size_t i);
TPS_API const char *tpsim_result_tensor_rule(const struct tpsim_result *result,
					     size_t i);
TPS_API int tpsim_result_tensor_match(const struct tpsim_result *result,
				      size_t i);
TPS_API double
tpsim_result_tensor_max_abs_diff(const struct tpsim_result *result, size_t i);
TPS_API double
tpsim_result_tensor_max_bound(const struct tpsim_result *result, size_t i);
TPS_API double tpsim_result_tensor_ratio(const struct tpsim_result *result,
					 size_t i);
TPS_API const char *
tpsim_result_tensor_worst(const struct tpsim_result *result, size_t i);
TPS_API const char *
tpsim_result_tensor_no_bound(const struct tpsim_result *result, size_t i);

/* Training steps run (0 in inference, and for NULL), and each step's
 * loss, the simulation's and the reference's; NaN for a step out of
 * range, a symbolic run, a run a shape error stopped, and NULL. */
TPS_API size_t tpsim_result_steps(const struct tpsim_result *result);
TPS_API double tpsim_result_loss(const struct tpsim_result *result,
				 size_t step);
TPS_API double tpsim_result_reference_loss(const struct tpsim_result *result,
					   size_t step);

/* Nonzero for a symbolic run (no values, no reference). */
TPS_API int tpsim_result_symbolic(const struct tpsim_result *result);

/* The most bytes of tensor values the run held at once (`tpsim run
 * --stats`' "tensors at peak"): the run's own, whatever other runs share
 * the process. 0 for NULL. */
TPS_API int64_t
tpsim_result_tensor_peak_bytes(const struct tpsim_result *result);

/* The trace's events, its collectives, and their bytes per rank. */
TPS_API int64_t tpsim_result_events(const struct tpsim_result *result);
TPS_API int64_t tpsim_result_collectives(const struct tpsim_result *result);
TPS_API int64_t tpsim_result_bytes_per_rank(const struct tpsim_result *result);

/* The verdict, the line `tpsim run` prints after "tpsim: CONFIG: ":
 * "mesh tp=2 (world 2), 1 module, 6 events, 1 collective (16
 * bytes/rank), differs from the reference by at most 3.1e-06, within
 * what reordering the sums can explain (bound 8.4e-06)", or "... differs
 * by 2 at fc.out[0][1]; reordering can explain at most 8.5e-01: not
 * rounding". "" for NULL. */
TPS_API const char *tpsim_result_verdict(const struct tpsim_result *result);

/* With an injected mistake ("inject"): what it did, read from its
 * symptom, as the trace's result.diagnosis; and the shape error it
 * stopped the simulation at. NULL when there is none, and for NULL. */
TPS_API const char *tpsim_result_diagnosis(const struct tpsim_result *result);
TPS_API const char *tpsim_result_stopped(const struct tpsim_result *result);

/* The warnings (the trace's "warnings"; `tpsim run` prints them on
 * stderr): their count, and warning i (NULL out of range). */
TPS_API size_t tpsim_result_warning_count(const struct tpsim_result *result);
TPS_API const char *tpsim_result_warning(const struct tpsim_result *result,
					 size_t i);

TPS_API void tpsim_result_free(struct tpsim_result *result);

/* ---- traces ----------------------------------------------------------- */

/* A trace, read and checked whole against docs/trace.md (the one reader
 * every verb uses). Immutable. */
struct tpsim_trace;
/* One event of a trace, and a tensor (a rank's part of an event, or a
 * global tensor of the result): views into their trace. */
struct tpsim_event;
struct tpsim_tensor;

/* The most dims a tensor has. */
#define TPSIM_MAX_DIMS 4

/*
 * Reads the trace file at path ("-" is standard input; at most 1 GiB),
 * strictly, and checks all of it. On success *trace is a new trace. On
 * error (TPSIM_ERR_IO, TPSIM_ERR_LIMIT, TPSIM_ERR_INPUT with the file and
 * the JSON Pointer of the first problem, TPSIM_ERR_NOMEM) *trace is
 * untouched.
 */
TPS_API enum tpsim_status tpsim_trace_load(const char *path,
					   struct tpsim_trace **trace,
					   struct tpsim_error **error);

/* The same from len bytes of text (copied), named `name` in messages. */
TPS_API enum tpsim_status tpsim_trace_parse(const char *text, size_t len,
					    const char *name,
					    struct tpsim_trace **trace,
					    struct tpsim_error **error);

TPS_API void tpsim_trace_free(struct tpsim_trace *trace);

/* The text the trace was read from (not NUL-terminated; the bytes of the
 * file, or those passed to tpsim_trace_parse), its length in *len; for a
 * reader of its own (Python's json). NULL, and *len 0, for NULL. len may
 * be NULL. */
TPS_API const char *tpsim_trace_text(const struct tpsim_trace *trace,
				     size_t *len);

/* Its events, in order (seq i is event i); 0 for NULL. */
TPS_API size_t tpsim_trace_event_count(const struct tpsim_trace *trace);
/* Event i; NULL out of range and for NULL. */
TPS_API const struct tpsim_event *
tpsim_trace_event(const struct tpsim_trace *trace, size_t i);

/* The event's seq, and its step (-1 for a setup event, which has none);
 * -1 for NULL. */
TPS_API int64_t tpsim_event_seq(const struct tpsim_event *event);
TPS_API int64_t tpsim_event_step(const struct tpsim_event *event);

/* Its phase ("setup", "forward", "backward", "optimizer"), module, kind
 * ("compute", "collective", "layout"), op ("matmul", "all_reduce", ...),
 * tensor ("fc1.out", "fc1.weight.grad"), and the mesh dim of a collective
 * or a split ("tp", or "dp_cp" for flattened dims). NULL when the event
 * has none (mesh_dim of a compute event) and for NULL. */
TPS_API const char *tpsim_event_phase(const struct tpsim_event *event);
TPS_API const char *tpsim_event_module(const struct tpsim_event *event);
TPS_API const char *tpsim_event_kind(const struct tpsim_event *event);
TPS_API const char *tpsim_event_op(const struct tpsim_event *event);
TPS_API const char *tpsim_event_tensor(const struct tpsim_event *event);
TPS_API const char *tpsim_event_mesh_dim(const struct tpsim_event *event);

/* The groups of ranks a collective ran over: their count (0 without
 * "groups"), group g's size, and its k-th rank (-1 out of range). */
TPS_API size_t tpsim_event_group_count(const struct tpsim_event *event);
TPS_API size_t tpsim_event_group_size(const struct tpsim_event *event,
				      size_t g);
TPS_API int tpsim_event_group_rank(const struct tpsim_event *event, size_t g,
				   size_t k);

/* The tensor's placements, one per mesh dim ("replicate", "shard(0)",
 * "partial", "shard(1,block=4)", "shard(0,flat)"): count, and i (NULL out
 * of range). */
TPS_API size_t tpsim_event_placement_count(const struct tpsim_event *event);
TPS_API const char *tpsim_event_placement(const struct tpsim_event *event,
					  size_t i);

/* The tensor's global shape: its dims (0 to TPSIM_MAX_DIMS) written to
 * shape[0 .. ndim); returns ndim (0 for NULL). */
TPS_API size_t tpsim_event_global_shape(const struct tpsim_event *event,
					int64_t shape[TPSIM_MAX_DIMS]);

/* What each rank sends in a collective (docs/trace.md); 0 otherwise. */
TPS_API int64_t tpsim_event_bytes_per_rank(const struct tpsim_event *event);

/* Its ranks, in rank order: every rank of the mesh in a values trace,
 * none in a symbolic one; and rank r's local tensor (NULL out of range). */
TPS_API size_t tpsim_event_rank_count(const struct tpsim_event *event);
TPS_API const struct tpsim_tensor *
tpsim_event_rank(const struct tpsim_event *event, size_t r);

/* A tensor's shape (as tpsim_event_global_shape), its element count (the
 * product; 0 for NULL), and whether it has values (nonzero: a "full"
 * trace; a "summary" or "none" trace has none). */
TPS_API size_t tpsim_tensor_shape(const struct tpsim_tensor *tensor,
				  int64_t shape[TPSIM_MAX_DIMS]);
TPS_API size_t tpsim_tensor_numel(const struct tpsim_tensor *tensor);
TPS_API int tpsim_tensor_has_values(const struct tpsim_tensor *tensor);

/*
 * Copies the tensor's values, row-major, as float32 (each is the value
 * the trace's shortest decimal stands for in the tensor's dtype, bit for
 * bit: a bfloat16 or float16 event's values, and the result's of a config
 * whose "dtype" makes them so, are values of that dtype, docs/trace.md
 * "Dtypes") into values[0 .. numel), and sets *n to numel (1 for a
 * scalar, shape []). values may be NULL when capacity is 0
 * (to learn *n). On error *n is set and values untouched:
 * TPSIM_ERR_USAGE when capacity < numel, TPSIM_ERR_INPUT when the tensor
 * has no values.
 */
TPS_API enum tpsim_status tpsim_tensor_values(const struct tpsim_tensor *tensor,
					      float *values, size_t capacity,
					      size_t *n,
					      struct tpsim_error **error);

/*
 * The result's global tensors: section is "output", "reference_output",
 * "grads", "reference_grads", "params_after" or
 * "reference_params_after"; name NULL for the outputs, a parameter's name
 * ("fc1.weight", or "input" for the input's gradient) for the others.
 * NULL when the trace has no such tensor (inference has no grads) and for
 * NULL arguments.
 */
TPS_API const struct tpsim_tensor *
tpsim_trace_result_tensor(const struct tpsim_trace *trace, const char *section,
			  const char *name);

/* The names of a section's tensors, in the trace's order: count, and
 * name i (NULL out of range). 0 for "output" and the like. */
TPS_API size_t tpsim_trace_result_count(const struct tpsim_trace *trace,
					const char *section);
TPS_API const char *tpsim_trace_result_name(const struct tpsim_trace *trace,
					    const char *section, size_t i);

/* ---- error bounds of a trace's values --------------------------------- */

/* The error bounds of a trace's values (docs/numerics.md). */
struct tpsim_bounds;

/*
 * Traces do not carry per-element bounds (a full trace would double):
 * this makes them again, as `tpsim diff` does, by the bound pass of the
 * trace's embedded config (the reference run alone, with its bounds), on
 * threads threads (0: the machine's cores; the bounds are the same at
 * any count). It costs about one reference run. On success *bounds is
 * new; the caller frees it with tpsim_bounds_free, and it does not refer
 * to trace. On error (TPSIM_ERR_INPUT at /config/compute for a symbolic
 * trace, at /config/trace/values for one without every value, or at the
 * config's own pointers under /config; TPSIM_ERR_USAGE, threads out of 0
 * to 256; TPSIM_ERR_LIMIT, TPSIM_ERR_NOMEM) *bounds is untouched.
 */
TPS_API enum tpsim_status tpsim_trace_bounds(const struct tpsim_trace *trace,
					     int threads,
					     struct tpsim_bounds **bounds,
					     struct tpsim_error **error);

TPS_API void tpsim_bounds_free(struct tpsim_bounds *bounds);

/*
 * The bound of each element of rank's shard at event (an event of the
 * trace the bounds were made from), row-major in the shard's shape:
 * 2 e, twice the error bound of that element of the global tensor, what
 * computing the same sums in another order can explain between two
 * correct computations (the simulation and its reference, or a real run
 * and its trace); 0 where the value is exact. A dp run's backward
 * values and its loss are dp times the reference's (docs/trace.md), and
 * so are their bounds. Writes *n (numel) values, rounded up, into
 * values, and sets *n; values may be NULL when capacity is 0 (to learn
 * *n). On error values is untouched: TPSIM_ERR_USAGE when rank is out
 * of range or capacity < *n (then *n is set); TPSIM_ERR_INPUT, saying
 * why, when the event has no bound: a partial value (a rank's share of
 * a sum before its reduction), an event before the last of its tensor
 * in its step and phase (the bound is of the tensor's value there: an
 * all_reduce before its bias is added has none), a tensor the bound
 * pass does not bound, a bound that says nothing (docs/numerics.md), or
 * the batch rows of a DistributedSampler run (strided over dp).
 */
TPS_API enum tpsim_status tpsim_bounds_shard(const struct tpsim_bounds *bounds,
					     const struct tpsim_event *event,
					     size_t rank, float *values,
					     size_t capacity, size_t *n,
					     struct tpsim_error **error);

/* ---- checking a trace against a fixture ------------------------------- */

/* One mismatch (docs/design.md section 6); valid during the callback. */
struct tpsim_mismatch {
	/* The fixture's JSON Pointer (not escaped); NULL for the closing
	 * "... N more mismatches" after the first 100. */
	const char *pointer;
	/* The fixture's and the trace's values as the line writes them
	 * (numbers shortest, strings quoted, arrays cut at 60 characters);
	 * NULL when the mismatch is not two values: got is NULL for a key
	 * the trace lacks, both for an event or a rank it lacks. */
	const char *expected;
	const char *got;
	int64_t seq;	  /* the trace event's seq; -1 outside events */
	const char *what; /* "expected 70, got 71", "missing in trace" */
	/* The line `tpsim check` prints after "FIXTURE: ":
	 * "/events/3/ranks/1/values/0/1: expected 70, got 71 (trace event
	 * seq 5)". */
	const char *line;
};

typedef void (*tpsim_mismatch_fn)(void *ctx, const struct tpsim_mismatch *m);

/*
 * Compares trace with the fixture file at fixture_path (at most 16 MiB):
 * calls report (may be NULL) once per mismatch in fixture order, for the
 * first 100, then once more with the count of the rest; sets *mismatches
 * to their whole count (0: the trace matches). A fixture that is not one
 * (malformed, a config, bad "tolerance") is TPSIM_ERR_INPUT with its file
 * and pointer, not a mismatch; then report was not called and *mismatches
 * is untouched.
 */
TPS_API enum tpsim_status tpsim_check(const struct tpsim_trace *trace,
				      const char *fixture_path,
				      tpsim_mismatch_fn report, void *ctx,
				      size_t *mismatches,
				      struct tpsim_error **error);

/* The same with the fixture's text (len bytes), named `name`. */
TPS_API enum tpsim_status
tpsim_check_parse(const struct tpsim_trace *trace, const char *text, size_t len,
		  const char *name, tpsim_mismatch_fn report, void *ctx,
		  size_t *mismatches, struct tpsim_error **error);

/* ---- what the other verbs write --------------------------------------- */

/* `tpsim explain`'s options. Set every field with
 * tpsim_explain_options_init, then change what you need. */
struct tpsim_explain_options {
	int markdown;	    /* nonzero: --format md; 0: text */
	int64_t step;	    /* --step N; -1 (default): every step */
	const char *module; /* --module NAME; NULL: every module */
	const char *phase;  /* --phase P; NULL: every phase */
	/* --max-values N: more values than this are shown as the first and
	 * last N/2 around "..."; 0: all; default 16. */
	size_t max_values;
	int heading_level; /* --heading-level, 1 to 4, Markdown only */
	int pictures;	   /* nonzero: --pictures */
	/* nonzero: bold headings in text (what `tpsim explain` does on a
	 * terminal); default 0. */
	int color;
};

TPS_API void tpsim_explain_options_init(struct tpsim_explain_options *options);

/*
 * Writes `tpsim explain`: the trace step by step, every event and every
 * rank's shard (options NULL: the defaults). An option out of range
 * (step < -1, heading_level outside 1 to 4 or given without markdown, a
 * phase not of the four) is TPSIM_ERR_USAGE; a module the trace lacks is
 * TPSIM_ERR_INPUT naming the closest one. On error write has not been
 * called.
 */
TPS_API enum tpsim_status
tpsim_explain(const struct tpsim_trace *trace,
	      const struct tpsim_explain_options *options, tpsim_write_fn write,
	      void *ctx, struct tpsim_error **error);

/* Writes `tpsim picture --tensor TENSOR [--event SEQ]`'s SVG: which ranks
 * hold which block of the tensor, at the event with that seq (seq < 0:
 * the tensor's first event). A tensor no event produces, or an event of
 * another tensor, is TPSIM_ERR_INPUT. */
TPS_API enum tpsim_status tpsim_picture_svg(const struct tpsim_trace *trace,
					    const char *tensor, int64_t seq,
					    tpsim_write_fn write, void *ctx,
					    struct tpsim_error **error);

/* Writes `tpsim timeline`'s Chrome Trace Event JSON (docs/timeline.md). */
TPS_API enum tpsim_status tpsim_timeline(const struct tpsim_trace *trace,
					 tpsim_write_fn write, void *ctx,
					 struct tpsim_error **error);

/* Writes `tpsim view`'s self-contained HTML page of the trace. */
TPS_API enum tpsim_status tpsim_view(const struct tpsim_trace *trace,
				     tpsim_write_fn write, void *ctx,
				     struct tpsim_error **error);

/* tpsim comm's outputs (docs/comm.md). */
enum tpsim_comm_format {
	TPSIM_COMM_TABLES = 0,	/* each config's table, then the sweep's */
	TPSIM_COMM_SUMMARY = 1, /* --summary: the sweep's table alone */
	TPSIM_COMM_JSON = 2,	/* --json: "tpsim.comm" version 1 */
};

/*
 * Writes `tpsim comm` of n configs (each one point of the sweep; their
 * names are their files or the names they were parsed with): the
 * collectives and bytes per rank of one inference and one training step,
 * counted on meta tensors, and the alpha-beta step time. n is 1 to 4096.
 */
TPS_API enum tpsim_status tpsim_comm(const struct tpsim_config *const *configs,
				     size_t n, enum tpsim_comm_format format,
				     tpsim_write_fn write, void *ctx,
				     struct tpsim_error **error);

#ifdef __cplusplus
}
#endif

#endif
