"""The C API of include/tpsim.h, loaded with cffi in ABI mode (no
compiler, no Python headers): the declarations below are the header's,
comments and TPS_API left out (python/tests/test_ffi.py checks them
against include/tpsim.h token for token, so they cannot drift).

Where the library is (docs/python.md, "Where the library comes from"):
  1. $TPSIM_LIBRARY, a path to libtpsim.so (meson test sets it to the
     build tree's);
  2. beside an installed package: _paths.py, which meson writes at
     install time, gives the library's directory relative to the
     package's prefix;
  3. the system's loader (ldconfig's paths, LD_LIBRARY_PATH).
"""
import os

import cffi

# The soname's version: tpsim 0.x makes no ABI promise from one minor
# version to the next (docs/api.md), so the package loads the library of
# its own version (an installed package: the one _paths.py names).
SONAME = "libtpsim.so.0.3"

CDEF = """
#define TPSIM_MAX_DIMS 4
enum tpsim_status {
	TPSIM_OK = 0,
	TPSIM_ERR_INPUT = 1,
	TPSIM_ERR_IO = 2,
	TPSIM_ERR_SHAPE = 3,
	TPSIM_ERR_LIMIT = 4,
	TPSIM_ERR_NOMEM = 5,
	TPSIM_ERR_NUMERIC = 6,
	TPSIM_ERR_UNSUPPORTED = 7,
	TPSIM_ERR_USAGE = 8,
	TPSIM_ERR_MISUSE = 9,
};

const char *tpsim_version(void);

const char *tpsim_status_name(enum tpsim_status status);

struct tpsim_error;

enum tpsim_status tpsim_error_status(const struct tpsim_error *e);

const char *tpsim_error_message(const struct tpsim_error *e);

const char *tpsim_error_file(const struct tpsim_error *e);
const char *tpsim_error_pointer(const struct tpsim_error *e);

const char *tpsim_error_what(const struct tpsim_error *e);

void tpsim_error_free(struct tpsim_error *e);

typedef int (*tpsim_write_fn)(void *ctx, const char *data, size_t len);

struct tpsim_config;

struct tpsim_var {
	const char *name;
	double value;
};

enum tpsim_status
tpsim_config_load(const char *path, const struct tpsim_var *vars, size_t n_vars,
		  struct tpsim_config **config, struct tpsim_error **error);

enum tpsim_status
tpsim_config_parse(const char *text, size_t len, const char *name,
		   const struct tpsim_var *vars, size_t n_vars,
		   struct tpsim_config **config, struct tpsim_error **error);

void tpsim_config_free(struct tpsim_config *config);

struct tpsim_run_options {

	int threads;

	int64_t max_memory;
	int64_t max_trace;

	int symbolic;
};

void tpsim_run_options_init(struct tpsim_run_options *options);

struct tpsim_result;

enum tpsim_status tpsim_run(const struct tpsim_config *config,
				    const struct tpsim_run_options *options,
				    tpsim_write_fn write, void *ctx,
				    struct tpsim_result **result,
				    struct tpsim_error **error);

enum tpsim_status
tpsim_run_to_file(const struct tpsim_config *config,
		  const struct tpsim_run_options *options, const char *path,
		  struct tpsim_result **result, struct tpsim_error **error);

int tpsim_result_match(const struct tpsim_result *result);

double tpsim_result_max_abs_diff(const struct tpsim_result *result);

enum tpsim_comparison {
	TPSIM_COMPARISON_NONE = 0,
	TPSIM_COMPARISON_EXACT = 1,
	TPSIM_COMPARISON_TOLERANCE = 2,

	TPSIM_COMPARISON_MIXED = 3,
	TPSIM_COMPARISON_BOUND = 4,
};
enum tpsim_comparison
tpsim_result_comparison(const struct tpsim_result *result);

int tpsim_result_compared(const struct tpsim_result *result);
int tpsim_result_exact(const struct tpsim_result *result);
int tpsim_result_bounded(const struct tpsim_result *result);

double tpsim_result_max_bound(const struct tpsim_result *result);

size_t tpsim_result_tensor_count(const struct tpsim_result *result);
const char *tpsim_result_tensor_name(const struct tpsim_result *result,
					     size_t i);
const char *tpsim_result_tensor_rule(const struct tpsim_result *result,
					     size_t i);
int tpsim_result_tensor_match(const struct tpsim_result *result,
				      size_t i);
double
tpsim_result_tensor_max_abs_diff(const struct tpsim_result *result, size_t i);
double
tpsim_result_tensor_max_bound(const struct tpsim_result *result, size_t i);
double tpsim_result_tensor_ratio(const struct tpsim_result *result,
					 size_t i);
const char *
tpsim_result_tensor_worst(const struct tpsim_result *result, size_t i);
const char *
tpsim_result_tensor_no_bound(const struct tpsim_result *result, size_t i);

size_t tpsim_result_steps(const struct tpsim_result *result);
double tpsim_result_loss(const struct tpsim_result *result,
				 size_t step);
double tpsim_result_reference_loss(const struct tpsim_result *result,
					   size_t step);

int tpsim_result_symbolic(const struct tpsim_result *result);

int64_t
tpsim_result_tensor_peak_bytes(const struct tpsim_result *result);

int64_t tpsim_result_events(const struct tpsim_result *result);
int64_t tpsim_result_collectives(const struct tpsim_result *result);
int64_t tpsim_result_bytes_per_rank(const struct tpsim_result *result);

const char *tpsim_result_verdict(const struct tpsim_result *result);

const char *tpsim_result_diagnosis(const struct tpsim_result *result);
const char *tpsim_result_stopped(const struct tpsim_result *result);

size_t tpsim_result_warning_count(const struct tpsim_result *result);
const char *tpsim_result_warning(const struct tpsim_result *result,
					 size_t i);

void tpsim_result_free(struct tpsim_result *result);

struct tpsim_trace;

struct tpsim_event;
struct tpsim_tensor;

enum tpsim_status tpsim_trace_load(const char *path,
					   struct tpsim_trace **trace,
					   struct tpsim_error **error);

enum tpsim_status tpsim_trace_parse(const char *text, size_t len,
					    const char *name,
					    struct tpsim_trace **trace,
					    struct tpsim_error **error);

void tpsim_trace_free(struct tpsim_trace *trace);

const char *tpsim_trace_text(const struct tpsim_trace *trace,
				     size_t *len);

size_t tpsim_trace_event_count(const struct tpsim_trace *trace);

const struct tpsim_event *
tpsim_trace_event(const struct tpsim_trace *trace, size_t i);

int64_t tpsim_event_seq(const struct tpsim_event *event);
int64_t tpsim_event_step(const struct tpsim_event *event);

const char *tpsim_event_phase(const struct tpsim_event *event);
const char *tpsim_event_module(const struct tpsim_event *event);
const char *tpsim_event_kind(const struct tpsim_event *event);
const char *tpsim_event_op(const struct tpsim_event *event);
const char *tpsim_event_tensor(const struct tpsim_event *event);
const char *tpsim_event_mesh_dim(const struct tpsim_event *event);

size_t tpsim_event_group_count(const struct tpsim_event *event);
size_t tpsim_event_group_size(const struct tpsim_event *event,
				      size_t g);
int tpsim_event_group_rank(const struct tpsim_event *event, size_t g,
				   size_t k);

size_t tpsim_event_placement_count(const struct tpsim_event *event);
const char *tpsim_event_placement(const struct tpsim_event *event,
					  size_t i);

size_t tpsim_event_global_shape(const struct tpsim_event *event,
					int64_t shape[TPSIM_MAX_DIMS]);

int64_t tpsim_event_bytes_per_rank(const struct tpsim_event *event);

size_t tpsim_event_rank_count(const struct tpsim_event *event);
const struct tpsim_tensor *
tpsim_event_rank(const struct tpsim_event *event, size_t r);

size_t tpsim_tensor_shape(const struct tpsim_tensor *tensor,
				  int64_t shape[TPSIM_MAX_DIMS]);
size_t tpsim_tensor_numel(const struct tpsim_tensor *tensor);
int tpsim_tensor_has_values(const struct tpsim_tensor *tensor);

enum tpsim_status tpsim_tensor_values(const struct tpsim_tensor *tensor,
					      float *values, size_t capacity,
					      size_t *n,
					      struct tpsim_error **error);

const struct tpsim_tensor *
tpsim_trace_result_tensor(const struct tpsim_trace *trace, const char *section,
			  const char *name);

size_t tpsim_trace_result_count(const struct tpsim_trace *trace,
					const char *section);
const char *tpsim_trace_result_name(const struct tpsim_trace *trace,
					    const char *section, size_t i);

struct tpsim_bounds;

enum tpsim_status tpsim_trace_bounds(const struct tpsim_trace *trace,
					     int threads,
					     struct tpsim_bounds **bounds,
					     struct tpsim_error **error);

void tpsim_bounds_free(struct tpsim_bounds *bounds);

enum tpsim_status tpsim_bounds_shard(const struct tpsim_bounds *bounds,
					     const struct tpsim_event *event,
					     size_t rank, float *values,
					     size_t capacity, size_t *n,
					     struct tpsim_error **error);

struct tpsim_mismatch {

	const char *pointer;

	const char *expected;
	const char *got;
	int64_t seq;
	const char *what;

	const char *line;
};

typedef void (*tpsim_mismatch_fn)(void *ctx, const struct tpsim_mismatch *m);

enum tpsim_status tpsim_check(const struct tpsim_trace *trace,
				      const char *fixture_path,
				      tpsim_mismatch_fn report, void *ctx,
				      size_t *mismatches,
				      struct tpsim_error **error);

enum tpsim_status
tpsim_check_parse(const struct tpsim_trace *trace, const char *text, size_t len,
		  const char *name, tpsim_mismatch_fn report, void *ctx,
		  size_t *mismatches, struct tpsim_error **error);

struct tpsim_explain_options {
	int markdown;
	int64_t step;
	const char *module;
	const char *phase;

	size_t max_values;
	int heading_level;
	int pictures;

	int color;
};

void tpsim_explain_options_init(struct tpsim_explain_options *options);

enum tpsim_status
tpsim_explain(const struct tpsim_trace *trace,
	      const struct tpsim_explain_options *options, tpsim_write_fn write,
	      void *ctx, struct tpsim_error **error);

enum tpsim_status tpsim_picture_svg(const struct tpsim_trace *trace,
					    const char *tensor, int64_t seq,
					    tpsim_write_fn write, void *ctx,
					    struct tpsim_error **error);

enum tpsim_status tpsim_timeline(const struct tpsim_trace *trace,
					 tpsim_write_fn write, void *ctx,
					 struct tpsim_error **error);

enum tpsim_status tpsim_view(const struct tpsim_trace *trace,
				     tpsim_write_fn write, void *ctx,
				     struct tpsim_error **error);

enum tpsim_comm_format {
	TPSIM_COMM_TABLES = 0,
	TPSIM_COMM_SUMMARY = 1,
	TPSIM_COMM_JSON = 2,
};

enum tpsim_status tpsim_comm(const struct tpsim_config *const *configs,
				     size_t n, enum tpsim_comm_format format,
				     tpsim_write_fn write, void *ctx,
				     struct tpsim_error **error);
"""

ffi = cffi.FFI()
ffi.cdef(CDEF)


def _installed_library():
    """The library beside an installed package, or None in a source or
    build tree (which has no _paths.py)."""
    try:
        from . import _paths
    except ImportError:
        return None
    libdir = _paths.LIBDIR
    if not os.path.isabs(libdir):
        if os.path.isabs(_paths.PURELIB):
            prefix = _paths.PREFIX
        else:
            # This file is PREFIX/PURELIB/tpsim/_ffi.py: climb to PREFIX,
            # wherever the tree was installed (DESTDIR) or moved to.
            prefix = os.path.dirname(os.path.abspath(__file__))
            for _ in range(len(_paths.PURELIB.strip("/").split("/")) + 1):
                prefix = os.path.dirname(prefix)
        libdir = os.path.join(prefix, libdir)
    return os.path.join(libdir, _paths.SONAME)


def _load():
    path = os.environ.get("TPSIM_LIBRARY") or _installed_library() or SONAME
    try:
        return ffi.dlopen(path), path
    except OSError as e:
        raise ImportError(
            "tpsim: cannot load the C library %s (%s): install tpsim with "
            "meson install, or set TPSIM_LIBRARY to a libtpsim.so"
            % (path, e)) from None


lib, LIBRARY_PATH = _load()
