/*
 * The public API's configs, runs and results (include/tpsim.h): a config
 * is its text and its validated spec; a run is tps_run on that text; a
 * result is the run's summary behind a handle.
 */
#include "api_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "pool.h"
#include "run.h"

struct tpsim_result {
	struct tps_run_summary summary;
	char *verdict;
	/* Per compared tensor (summary.comparison.n): its worst element's
	 * name, "" when none differs. */
	char (*worst)[TPS_NAME_MAX + 80];
};

/* The variables, checked and copied into c. */
static enum tps_status copy_vars(struct tpsim_config *c,
				 const struct tpsim_var *vars, size_t n_vars,
				 struct tps_error *err)
{
	if (n_vars > TPS_CONFIG_MAX_VARS) {
		return tps_error_set(err, TPS_ERR_USAGE,
				     "%zu variables set, at most %d", n_vars,
				     TPS_CONFIG_MAX_VARS);
	}
	for (size_t i = 0; i < n_vars; i++) {
		char esc[96];
		if (!vars[i].name) {
			return tps_error_set(err, TPS_ERR_USAGE,
					     "variable %zu has no name", i);
		}
		if (strlen(vars[i].name) >= sizeof c->vars[0].name ||
		    !isfinite(vars[i].value)) {
			return tps_error_set(
				err, TPS_ERR_USAGE,
				"variable '%s': expected a name of at most %zu "
				"characters and a finite value",
				tps_json_escape_for_message(vars[i].name, esc,
							    sizeof esc),
				sizeof c->vars[0].name - 1);
		}
		snprintf(c->vars[i].name, sizeof c->vars[0].name, "%s",
			 vars[i].name);
		c->vars[i].value = vars[i].value;
	}
	c->n_vars = (int)n_vars;
	return TPS_OK;
}

/* Takes text (owned from here on), parses and validates it into a new
 * config. */
static enum tpsim_status
make_config(char *text, size_t len, const char *name, bool from_file,
	    const struct tpsim_var *vars, size_t n_vars,
	    struct tpsim_config **config, struct tpsim_error **error)
{
	struct tps_error err = {0};
	struct tpsim_config *c = calloc(1, sizeof *c);
	cJSON *root = NULL;
	enum tps_status st = TPS_OK;

	if (!c || !(c->name = tps_api_strdup(name))) {
		st = tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	c->text = text;
	c->len = len;
	text = NULL;
	c->from_file = from_file;
	st = copy_vars(c, vars, n_vars, &err);
	if (st == TPS_OK) {
		st = tps_json_parse_strict_packed(name, c->text, c->len,
						  TPS_CONFIG_PACK_KEY, &root,
						  &err);
	}
	if (st == TPS_OK) {
		st = tps_config_parse_with(root, name, c->vars, c->n_vars,
					   &c->spec, &err);
	}
out:
	cJSON_Delete(root);
	free(text);
	if (st != TPS_OK) {
		tpsim_config_free(c);
		return tps_api_fail(error, &err);
	}
	*config = c;
	return TPSIM_OK;
}

enum tpsim_status tpsim_config_load(const char *path,
				    const struct tpsim_var *vars, size_t n_vars,
				    struct tpsim_config **config,
				    struct tpsim_error **error)
{
	struct tps_error err = {0};
	char *text = NULL;
	size_t len = 0;

	if (!path || !config || (!vars && n_vars)) {
		return tps_api_misuse(error, "tpsim_config_load",
				      !path	? "path"
				      : !config ? "config"
						: "vars");
	}
	if (tps_json_read_file(path, TPS_JSON_MAX_INPUT_BYTES, &text, &len,
			       &err) != TPS_OK) {
		return tps_api_fail(error, &err);
	}
	return make_config(text, len, path, true, vars, n_vars, config, error);
}

enum tpsim_status
tpsim_config_parse(const char *text, size_t len, const char *name,
		   const struct tpsim_var *vars, size_t n_vars,
		   struct tpsim_config **config, struct tpsim_error **error)
{
	struct tps_error err = {0};
	char *copy;

	if (!text || !name || !config || (!vars && n_vars)) {
		return tps_api_misuse(error, "tpsim_config_parse",
				      !text	? "text"
				      : !name	? "name"
				      : !config ? "config"
						: "vars");
	}
	if (len > TPS_JSON_MAX_INPUT_BYTES) {
		char esc[256];
		tps_error_set(
			&err, TPS_ERR_LIMIT,
			"%s: %zu bytes, over the limit of 16 MiB for a "
			"config",
			tps_json_escape_for_message(name, esc, sizeof esc),
			len);
		return tps_api_fail(error, &err);
	}
	copy = malloc(len ? len : 1);
	if (!copy) {
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	memcpy(copy, text, len);
	return make_config(copy, len, name, false, vars, n_vars, config, error);
}

void tpsim_config_free(struct tpsim_config *config)
{
	if (!config) {
		return;
	}
	tps_run_spec_free(&config->spec);
	free(config->name);
	free(config->text);
	free(config);
}

/* ---- runs ------------------------------------------------------------- */

void tpsim_run_options_init(struct tpsim_run_options *options)
{
	if (!options) {
		return;
	}
	memset(options, 0, sizeof *options);
	options->threads = 0;
	options->max_memory = TPS_DEFAULT_MAX_MEMORY;
	options->max_trace = TPS_DEFAULT_MAX_TRACE;
	options->symbolic = 0;
}

/* The run, to path or (path NULL) to stream. */
static enum tpsim_status run(const struct tpsim_config *config,
			     const struct tpsim_run_options *options,
			     const char *path, FILE *stream,
			     struct tpsim_result **result,
			     struct tpsim_error **error)
{
	struct tpsim_run_options defaults;
	struct tps_run_options opts = {0};
	struct tps_error err = {0};
	struct tpsim_result *r = calloc(1, sizeof *r);
	char *verdict = NULL;
	size_t verdict_len = 0;
	FILE *mem;
	bool made;

	if (!r) {
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	if (!options) {
		tpsim_run_options_init(&defaults);
		options = &defaults;
	}
	if (options->threads < 0 || options->threads > TPS_POOL_MAX_THREADS ||
	    options->max_memory < 0 || options->max_trace < 0) {
		free(r);
		tps_error_set(&err, TPS_ERR_USAGE,
			      "run options: threads %d (expected 0 to %d), "
			      "max_memory and max_trace at least 0",
			      options->threads, TPS_POOL_MAX_THREADS);
		return tps_api_fail(error, &err);
	}
	opts.config_path = config->name;
	opts.config_text = config->text;
	opts.config_len = config->len;
	opts.config_read_from_path = config->from_file;
	opts.output_path = path;
	opts.max_memory = options->max_memory;
	opts.max_trace = options->max_trace;
	opts.overrides = config->vars;
	opts.n_overrides = config->n_vars;
	opts.threads = options->threads;
	opts.symbolic = options->symbolic != 0;
	opts.keep_losses = true;
	opts.keep_comparison = true;
	if (tps_run(&opts, stream, &r->summary, &err) != TPS_OK) {
		free(r);
		return tps_api_fail(error, &err);
	}
	mem = open_memstream(&verdict, &verdict_len);
	if (mem) {
		tps_run_write_verdict(mem, &r->summary);
		made = !ferror(mem);
		made = fclose(mem) == 0 && made;
	} else {
		made = false;
	}
	if (!made) {
		free(verdict);
		tpsim_result_free(r);
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	r->verdict = verdict;
	made = true;
	if (r->summary.comparison.n > 0) {
		const struct tps_comparison *c = &r->summary.comparison;
		r->worst = calloc((size_t)c->n, sizeof *r->worst);
		made = r->worst != NULL;
		for (int i = 0; made && i < c->n; i++) {
			if (c->t[i].at >= 0) {
				tps_run_element_name(&c->t[i], c->t[i].at,
						     r->worst[i],
						     sizeof r->worst[i]);
			}
		}
	}
	if (!made) {
		tpsim_result_free(r);
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	*result = r;
	return TPSIM_OK;
}

enum tpsim_status tpsim_run(const struct tpsim_config *config,
			    const struct tpsim_run_options *options,
			    tpsim_write_fn write, void *ctx,
			    struct tpsim_result **result,
			    struct tpsim_error **error)
{
	struct tps_error err = {0};
	enum tpsim_status st;
	FILE *stream;

	if (!config || !write || !result) {
		return tps_api_misuse(error, "tpsim_run",
				      !config  ? "config"
				      : !write ? "write"
					       : "result");
	}
	stream = tps_api_stream(write, ctx);
	if (!stream) {
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	st = run(config, options, NULL, stream, result, error);
	/* The trace was copied out and flushed on success; closing only
	 * frees. */
	fclose(stream);
	return st;
}

enum tpsim_status tpsim_run_to_file(const struct tpsim_config *config,
				    const struct tpsim_run_options *options,
				    const char *path,
				    struct tpsim_result **result,
				    struct tpsim_error **error)
{
	if (!config || !path || !result) {
		return tps_api_misuse(error, "tpsim_run_to_file",
				      !config ? "config"
				      : !path ? "path"
					      : "result");
	}
	return run(config, options, path, NULL, result, error);
}

/* ---- results ---------------------------------------------------------- */

int tpsim_result_match(const struct tpsim_result *result)
{
	return result && result->summary.match;
}

double tpsim_result_max_abs_diff(const struct tpsim_result *result)
{
	if (!result || result->summary.symbolic) {
		return 0.0;
	}
	return result->summary.max_abs_diff;
}

enum tpsim_comparison tpsim_result_comparison(const struct tpsim_result *result)
{
	const struct tps_run_summary *s = result ? &result->summary : NULL;
	if (!s || s->symbolic || s->stopped[0] || s->compared == 0 ||
	    !isfinite(s->max_abs_diff)) {
		return TPSIM_COMPARISON_NONE;
	}
	if (s->exact == s->compared) {
		return TPSIM_COMPARISON_EXACT;
	}
	if (s->bounded == s->compared) {
		return TPSIM_COMPARISON_BOUND;
	}
	return s->bounded == 0 ? TPSIM_COMPARISON_TOLERANCE
			       : TPSIM_COMPARISON_MIXED;
}

int tpsim_result_bounded(const struct tpsim_result *result)
{
	return result ? result->summary.bounded : 0;
}

double tpsim_result_max_bound(const struct tpsim_result *result)
{
	return result ? result->summary.comparison.max_bound : 0.0;
}

/* Compared tensor i, or NULL. */
static const struct tps_compare_tensor *
tensor_at(const struct tpsim_result *result, size_t i)
{
	if (!result || i >= tpsim_result_tensor_count(result)) {
		return NULL;
	}
	return &result->summary.comparison.t[i];
}

size_t tpsim_result_tensor_count(const struct tpsim_result *result)
{
	return result && result->summary.comparison.n > 0
		       ? (size_t)result->summary.comparison.n
		       : 0;
}

const char *tpsim_result_tensor_name(const struct tpsim_result *result,
				     size_t i)
{
	const struct tps_compare_tensor *t = tensor_at(result, i);
	return t ? t->name : NULL;
}

const char *tpsim_result_tensor_rule(const struct tpsim_result *result,
				     size_t i)
{
	const struct tps_compare_tensor *t = tensor_at(result, i);
	return t ? tps_compare_rule_names[t->rule] : NULL;
}

int tpsim_result_tensor_match(const struct tpsim_result *result, size_t i)
{
	const struct tps_compare_tensor *t = tensor_at(result, i);
	return t && t->match;
}

double tpsim_result_tensor_max_abs_diff(const struct tpsim_result *result,
					size_t i)
{
	const struct tps_compare_tensor *t = tensor_at(result, i);
	return t ? t->max_abs_diff : NAN;
}

double tpsim_result_tensor_max_bound(const struct tpsim_result *result,
				     size_t i)
{
	const struct tps_compare_tensor *t = tensor_at(result, i);
	return t ? t->max_bound : NAN;
}

double tpsim_result_tensor_ratio(const struct tpsim_result *result, size_t i)
{
	const struct tps_compare_tensor *t = tensor_at(result, i);
	return t ? t->ratio : NAN;
}

const char *tpsim_result_tensor_worst(const struct tpsim_result *result,
				      size_t i)
{
	return tensor_at(result, i) ? result->worst[i] : "";
}

const char *tpsim_result_tensor_no_bound(const struct tpsim_result *result,
					 size_t i)
{
	const struct tps_compare_tensor *t = tensor_at(result, i);
	return t && t->rule == TPS_COMPARE_TOLERANCE ? t->none : NULL;
}

int tpsim_result_compared(const struct tpsim_result *result)
{
	return result ? result->summary.compared : 0;
}

int tpsim_result_exact(const struct tpsim_result *result)
{
	return result ? result->summary.exact : 0;
}

size_t tpsim_result_steps(const struct tpsim_result *result)
{
	return result && result->summary.steps > 0
		       ? (size_t)result->summary.steps
		       : 0;
}

/* A step's loss from one side, NaN when there is none. */
static double loss_at(const struct tpsim_result *result, const float *losses,
		      size_t step)
{
	if (!result || !losses || step >= tpsim_result_steps(result)) {
		return NAN;
	}
	return losses[step];
}

double tpsim_result_loss(const struct tpsim_result *result, size_t step)
{
	return loss_at(result, result ? result->summary.losses : NULL, step);
}

double tpsim_result_reference_loss(const struct tpsim_result *result,
				   size_t step)
{
	return loss_at(result, result ? result->summary.reference_losses : NULL,
		       step);
}

int tpsim_result_symbolic(const struct tpsim_result *result)
{
	return result && result->summary.symbolic;
}

int64_t tpsim_result_events(const struct tpsim_result *result)
{
	return result ? result->summary.events : 0;
}

int64_t tpsim_result_collectives(const struct tpsim_result *result)
{
	return result ? result->summary.collectives : 0;
}

int64_t tpsim_result_bytes_per_rank(const struct tpsim_result *result)
{
	return result ? result->summary.bytes_per_rank : 0;
}

int64_t tpsim_result_tensor_peak_bytes(const struct tpsim_result *result)
{
	return result ? result->summary.stats.tensor_peak_bytes : 0;
}

const char *tpsim_result_verdict(const struct tpsim_result *result)
{
	return result ? result->verdict : "";
}

const char *tpsim_result_diagnosis(const struct tpsim_result *result)
{
	return result && result->summary.diagnosis[0]
		       ? result->summary.diagnosis
		       : NULL;
}

const char *tpsim_result_stopped(const struct tpsim_result *result)
{
	return result && result->summary.stopped[0] ? result->summary.stopped
						    : NULL;
}

size_t tpsim_result_warning_count(const struct tpsim_result *result)
{
	return result ? (size_t)result->summary.n_warnings : 0;
}

const char *tpsim_result_warning(const struct tpsim_result *result, size_t i)
{
	return i < tpsim_result_warning_count(result)
		       ? result->summary.warnings[i]
		       : NULL;
}

void tpsim_result_free(struct tpsim_result *result)
{
	if (!result) {
		return;
	}
	tps_run_summary_free(&result->summary);
	free(result->verdict);
	free(result->worst);
	free(result);
}
