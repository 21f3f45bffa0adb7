/*
 * Internals of the config parser (src/config*.c): the parsing state and the
 * field helpers every part of the parser reads with.
 *
 * The state carries a sticky status, like a stdio stream's error flag: the
 * first error is kept, and every helper called after it does nothing and
 * returns false (or NULL). A parser therefore reads straight down, field
 * after field, and whoever started it looks at c->st once, at the end:
 *
 *	cfg_int(c, m, "in_features", CFG_REQUIRED, 1, hi, &ms->in_features);
 *	cfg_int(c, m, "out_features", CFG_REQUIRED, 1, hi, &ms->out_features);
 *	if (cfg_ok(c) && too_big(ms))
 *		cfg_fail_at(c, "out_features", TPS_ERR_LIMIT, "...");
 *
 * The helpers that read obj[key] push "/key" on the JSON Pointer and pop it
 * again themselves, so every message names the value it is about and a
 * caller never balances pushes by hand: a value of any other shape is read
 * by a callback at its own pointer (cfg_value, cfg_each_item), and an error
 * about a value deeper than one key is reported with cfg_fail_at_item.
 *
 * Messages are "<file>: <pointer>: <what>" (config.h); user text quoted in
 * <what> goes through tps_json_escape_for_message.
 */
#ifndef TPSIM_CONFIG_INTERNAL_H
#define TPSIM_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "error.h"
#include "jsonio.h"
#include "numfmt.h"

struct cfg {
	const char *file;	   /* named in every message */
	struct tps_json_path path; /* the pointer of the value being read */
	/* Never NULL: the caller's error, or `own` when the caller passed
	 * none, so helpers may always write and read a message. */
	struct tps_error *err;
	struct tps_error own;
	enum tps_status st; /* sticky: TPS_OK until the first error */
};

enum cfg_need {
	CFG_OPTIONAL, /* absent: the output keeps its default */
	CFG_REQUIRED, /* absent: "<pointer>/<key>: missing" */
};

/* What cfg_number accepts (and says it expected). Never NaN or Inf: the
 * JSON reader refuses NaN, but 1e400 reads as inf. */
enum cfg_range {
	CFG_FINITE,   /* any finite number */
	CFG_NONNEG,   /* finite, >= 0 */
	CFG_POSITIVE, /* finite, > 0 */
	CFG_UNIT,     /* in [0, 1), as Adam's betas */
};

/* ---- state and failing ------------------------------------------------ */

void cfg_init(struct cfg *c, const char *file, struct tps_error *err);

static inline bool cfg_ok(const struct cfg *c)
{
	return c->st == TPS_OK;
}

/* Fails with "<file>: <pointer>: <message>" at the current pointer; a no-op
 * once an error is set, so the first error is the one reported. */
void cfg_fail(struct cfg *c, enum tps_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same at a pointer recorded earlier (an already-escaped JSON
 * Pointer, "/model/2"): for a check made after the value was read. */
void cfg_fail_at_pointer(struct cfg *c, const char *pointer, enum tps_status st,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same at <pointer>/<key>. */
void cfg_fail_at(struct cfg *c, const char *key, enum tps_status st,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same at <pointer>/<key>/<index>. */
void cfg_fail_at_item(struct cfg *c, const char *key, size_t index,
		      enum tps_status st, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A lower module (mesh, tensor) failed with st and its own message in sub:
 * reports that message at the current pointer. */
void cfg_fail_from(struct cfg *c, enum tps_status st,
		   const struct tps_error *sub);
/* "out of memory", without file or pointer: it is not the config's fault. */
void cfg_nomem(struct cfg *c);
/* Takes a lower module's error as it is, without file or pointer. */
void cfg_adopt(struct cfg *c, enum tps_status st, const struct tps_error *sub);

/* The current pointer as text ("/plan/fc*"); "(root)" when empty. */
const char *cfg_pointer(const struct cfg *c);

/* ---- message parts ---------------------------------------------------- */

/* "string \"abc\"", "an array", "2.5", "a number out of range" for the
 * "got ..." part of a message. Returns buf. */
const char *cfg_describe(const cJSON *v, char *buf, size_t size);
/* The shortest decimal that reads back to d (finite). Returns buf. */
const char *cfg_format_number(double d, char buf[TPS_NUMFMT_MAX]);
/* Joins a NULL-terminated name list: "a, b, c", with `last` before the
 * final name instead of ", " ("linear, relu or gelu"). Returns buf. */
const char *cfg_join(const char *const *names, const char *last, char *buf,
		     size_t size);

/* ---- values at the current pointer ------------------------------------ */

/* v must satisfy is (cJSON_IsObject, ...); else "expected <what>, got ...". */
bool cfg_expect(struct cfg *c, const cJSON *v, cJSON_bool (*is)(const cJSON *),
		const char *what);
/* Every key of obj must be in allowed (NULL-terminated); an unknown key is
 * reported at its own pointer, listing the allowed ones. */
bool cfg_check_keys(struct cfg *c, const cJSON *obj,
		    const char *const *allowed);
/* An integral number in [lo, hi]; 2.0 is 2. */
bool cfg_read_int(struct cfg *c, const cJSON *v, int64_t lo, int64_t hi,
		  int64_t *out);
bool cfg_read_number(struct cfg *c, const cJSON *v, enum cfg_range range,
		     double *out);
/* A string among names (a spec.h name table); *index gets its position.
 * `what` names the kind in "unknown <what> \"x\"". */
bool cfg_read_choice(struct cfg *c, const cJSON *v, const char *what,
		     const char *const *names, int *index);

/* ---- obj[key]: each pushes "/key" while it reads ---------------------- */

const cJSON *cfg_get(const cJSON *obj, const char *key);
/* obj[key], or NULL after failing with "<pointer>/<key>: missing". */
const cJSON *cfg_require(struct cfg *c, const cJSON *obj, const char *key);

/* These return true when the value was there and valid; an absent optional
 * value leaves *out (or *index) as it was. */
bool cfg_int(struct cfg *c, const cJSON *obj, const char *key,
	     enum cfg_need need, int64_t lo, int64_t hi, int64_t *out);
bool cfg_number(struct cfg *c, const cJSON *obj, const char *key,
		enum cfg_need need, enum cfg_range range, double *out);
bool cfg_bool(struct cfg *c, const cJSON *obj, const char *key, bool *out);
bool cfg_choice(struct cfg *c, const cJSON *obj, const char *key,
		const char *what, const char *const *names, int *index);
/* An array of 1..max_dims sizes, each an integer in [1, hi]; `what` names
 * the owner in the dim-count message ("the input has 5 dims"). */
bool cfg_sizes(struct cfg *c, const cJSON *obj, const char *key,
	       enum cfg_need need, const char *what, int max_dims, int64_t hi,
	       int64_t *dims, int *ndim);

/* {"<method_key>": init method, "seed": n} inside obj, each optional:
 * the input's and the target's own keys, or the "init" object. */
void cfg_init_method(struct cfg *c, const cJSON *obj, const char *method_key,
		     struct tps_init_spec *init);

/* The body of an object, an array item or an object member, read at its
 * own pointer. */
typedef void cfg_body_fn(struct cfg *c, const cJSON *v, void *ctx);
typedef void cfg_item_fn(struct cfg *c, const cJSON *item, int index,
			 void *ctx);

/* obj[key], of any type, read by fn at "<pointer>/<key>". */
bool cfg_value(struct cfg *c, const cJSON *obj, const char *key,
	       enum cfg_need need, cfg_body_fn *fn, void *ctx);
/* obj[key] must be an object whose keys are all in allowed (NULL: any);
 * then fn reads its body. */
bool cfg_object(struct cfg *c, const cJSON *obj, const char *key,
		enum cfg_need need, const char *const *allowed, cfg_body_fn *fn,
		void *ctx);
/* fn for each item of an array, at "<pointer>/<index>", until an error. */
void cfg_each_item(struct cfg *c, const cJSON *array, cfg_item_fn *fn,
		   void *ctx);
/* fn for each member of an object, at "<pointer>/<key>" (the member's
 * ->string), until an error. */
void cfg_each_member(struct cfg *c, const cJSON *obj, cfg_body_fn *fn,
		     void *ctx);

/* ---- the parts of the config, one per file ---------------------------- */

/* config_model.c: "model", "plan", "params". */
void cfg_parse_model(struct cfg *c, const cJSON *root,
		     struct tps_model_spec *spec);
void cfg_parse_plan(struct cfg *c, const cJSON *root,
		    struct tps_model_spec *spec);
/* The module types a config may write, in the order its messages list
 * them: every enum tps_module_type (module_type.h's descriptors), then the
 * shorthands (transformer_block), which expand into modules of those
 * types. cfg_module_type_name returns row i's name (NULL past the end)
 * and sets *type to its enum tps_module_type, or -1 for a shorthand;
 * cfg_shorthand_keys, a shorthand's keys (NULL-terminated; NULL for a
 * type, whose descriptor lists its keys). */
size_t cfg_module_type_count(void);
const char *cfg_module_type_name(size_t i, int *type);
const char *const *cfg_shorthand_keys(size_t i);
void cfg_parse_params(struct cfg *c, const cJSON *root,
		      struct tps_model_spec *spec);
/* Explicit values, nested arrays in shape, each a finite float32, read at
 * the current pointer into *out (allocated when all are valid). `owner`
 * names whose shape in the size message ("the input's"). */
void cfg_read_tensor(struct cfg *c, const cJSON *v,
		     const struct tps_shape *shape, const char *owner,
		     struct tps_tensor *out);

/* config_vars.c: "vars", then the overrides set from outside, into
 * run->vars; read before anything else. */
void cfg_parse_vars(struct cfg *c, const cJSON *root,
		    const struct tps_config_var *overrides, int n_overrides,
		    struct tps_run_spec *run);
/* The config to validate: root itself when it holds no expression, else a
 * copy (in *copy, the caller deletes it) with each expression replaced by
 * its number. NULL after an error. */
const cJSON *cfg_substitute(struct cfg *c, const cJSON *root,
			    const struct tps_run_spec *run, cJSON **copy);

/* config_training.c: the training keys, into spec (which has its mode, its
 * model and its input); with mode inference, each is an error. */
void cfg_parse_training(struct cfg *c, const cJSON *root,
			struct tps_model_spec *spec);
/* obj[key] present under mode inference: an error naming the key. */
void cfg_training_only(struct cfg *c, const cJSON *obj, const char *key,
		       enum tps_mode mode);
/* "sampler": "distributed" needs the batch divisible by the dp size. */
void cfg_check_sampler(struct cfg *c, const struct tps_model_spec *spec);

/* config_pipeline.c: "pipeline" (docs/pipeline.md), in training, after
 * the other training keys (its split reads "recompute"). */
void cfg_parse_pipeline(struct cfg *c, const cJSON *root,
			struct tps_model_spec *spec);
/* More than one microbatch with a dropout of p > 0: refused in a values
 * run (its masks follow each element's place in the whole batch); a
 * symbolic run draws no mask, and the caller skips the check. */
void cfg_check_pipeline_dropout(struct cfg *c,
				const struct tps_model_spec *spec);

/* config_cost.c: "links" and "device", defaults by mesh position. */
void cfg_parse_cost(struct cfg *c, const cJSON *root,
		    const struct tps_mesh *mesh, struct tps_cost_spec *cost);

/* config_normalize.c: the normalised config the trace records; NULL when
 * out of memory. `root` is the config the spec was read from. `spare` is
 * NULL, or root itself when the caller deletes root afterwards: then its
 * "params" are moved into the result (and out of root), not copied. */
cJSON *cfg_normalize(const cJSON *root, cJSON *spare,
		     const struct tps_run_spec *run);

#endif
