/*
 * The JSON config ("tpsim": 1, docs/design.md section 4) -> a validated run
 * spec.
 *
 * Every error names the file and the JSON Pointer of the offending value:
 *   "cfg.json: /plan/fc2/style: unknown style \"rowise\" (expected one of
 *    colwise, rowwise, replicate)"
 *   "cfg.json: /tpsim: missing"
 *   "cfg.json: /model/2/in_features: expected 8, the out_features of
 *    /model/0, got 6"
 * A cross-field error is reported at the later field, naming the earlier.
 *
 * Besides the spec, parsing produces the normalised config the trace
 * records: the same settings with every default filled in, keys in a fixed
 * order, plan entries in object form. docs/config.md lists the keys.
 *
 * Variables, for sweeps: "vars": {"hidden": 1024} defines $hidden, and any
 * string value holding a '$' ("4*$hidden", "$hidden / 2") is an expression
 * of numbers and $names joined by '*' and '/', evaluated left to right in
 * double before anything else is validated. tps_config_parse_with sets
 * variables from outside (the CLI's --set), as if "vars" said so:
 *
 *   struct tps_config_var set[] = {{"hidden", 4096}};
 *   tps_config_load_with("mlp.json", set, 1, &spec, &err);
 */
#ifndef TPSIM_CONFIG_H
#define TPSIM_CONFIG_H

#include <cjson/cJSON.h>

#include "model.h"

/* Default memory budget of a run (docs/design.md section 8). */
#define TPS_DEFAULT_MAX_MEMORY ((int64_t)8 << 30)

/* At most this many config variables. */
#define TPS_CONFIG_MAX_VARS 32

/* A config variable: one of "vars", or a value set for one from outside. */
struct tps_config_var {
	char name[64]; /* [A-Za-z_][A-Za-z0-9_]*, NUL-terminated */
	double value;  /* finite */
};

struct tps_run_spec {
	struct tps_model_spec model;
	struct tps_cost_spec cost; /* "links", "device": for `tpsim comm` */
	/* "vars" after the overrides, in definition order; the rest of the
	 * spec already holds their values. */
	struct tps_config_var vars[TPS_CONFIG_MAX_VARS];
	int n_vars;
	enum tps_trace_values values;
	/* "compute": symbolic runs on meta tensors, writes no values and has
	 * no reference (then values is TPS_TRACE_VALUES_NONE). */
	enum tps_compute compute;
	/* Whether the config wrote /trace/values; and in a symbolic run, the
	 * values mode it asked for there ("full" or "summary") that was
	 * replaced by none, for the run to warn about (NONE: nothing was). */
	bool values_given;
	enum tps_trace_values values_ignored;
	/* TP vs reference: the tolerance's atol and rtol (1e-5 each by
	 * default), and whether the config gave each: only what it gave
	 * adds slack to the error bounds, and only that is normalised. */
	double atol, rtol;
	bool atol_given, rtol_given;
	cJSON *normalized; /* owned; the trace's "config" */
	/* "--no-reference": no single-device reference is run, nothing is
	 * compared (a command-line choice, not the config's). */
	bool no_reference;
};

/* The key whose arrays a config's text is parsed with packed
 * (tps_json_parse_strict_packed): explicit values, read straight into
 * tensors, without a cJSON node per number. */
#define TPS_CONFIG_PACK_KEY "params"

/*
 * Validates a parsed config, its "params" packed or not (TPS_CONFIG_PACK_KEY;
 * the same spec, the same messages). `file` names it in messages. On success
 * *spec is filled (free with tps_run_spec_free). On error: TPS_ERR_INPUT,
 * TPS_ERR_LIMIT or TPS_ERR_UNSUPPORTED with the message above, *spec
 * untouched.
 */
enum tps_status tps_config_parse(const cJSON *root, const char *file,
				 struct tps_run_spec *spec,
				 struct tps_error *err);

/*
 * The same, with n_overrides variables set from outside (NULL when 0):
 * each must name a variable "vars" defines, and replaces its value; a later
 * override of the same name wins. On error (an unknown name is reported at
 * /vars), *spec untouched. The tree at root is not changed.
 */
enum tps_status tps_config_parse_with(const cJSON *root, const char *file,
				      const struct tps_config_var *overrides,
				      int n_overrides,
				      struct tps_run_spec *spec,
				      struct tps_error *err);

/* Reads (strictly, at most 16 MiB; "-" is stdin; TPS_CONFIG_PACK_KEY
 * packed) and parses a config file. */
enum tps_status tps_config_load(const char *path, struct tps_run_spec *spec,
				struct tps_error *err);
enum tps_status tps_config_load_with(const char *path,
				     const struct tps_config_var *overrides,
				     int n_overrides, struct tps_run_spec *spec,
				     struct tps_error *err);

/*
 * Makes a parsed spec symbolic (`tpsim run --symbolic`), as if the config
 * said "compute": "symbolic": trace values none, and the normalised config
 * says so. The rule for /trace/values is the config's own: "full" or
 * "summary" written there becomes none, recorded in values_ignored. A spec
 * that injects a mistake cannot be (a mistake is diagnosed from values):
 * TPS_ERR_INPUT. On error *spec is untouched.
 */
enum tps_status tps_config_make_symbolic(struct tps_run_spec *spec,
					 struct tps_error *err);

/*
 * Sets the spec's ZeRO (docs/zero.md) to z, as `tpsim comm --zero` does
 * to count one config at several stages (z.stage 0: plain DDP, whatever
 * the config's own "zero" said). z is checked as the config's "zero" key
 * is: a stage needs a dp_dim to shard over, and stage 3 refuses a tied
 * weight. `option` names the setting in messages ("--zero 3"). An
 * inference config takes it too: comm trains it (costs.h), and only
 * training reads ZeRO. Only spec->model changes: the normalised config
 * keeps what the file said (comm writes no trace). On error
 * (TPS_ERR_INPUT, naming `file` and /dp_dim or the tie's pointer) spec is
 * untouched.
 */
enum tps_status tps_config_set_zero(struct tps_run_spec *spec, const char *file,
				    struct tps_zero_spec z, const char *option,
				    struct tps_error *err);

void tps_run_spec_free(struct tps_run_spec *spec);

#endif
