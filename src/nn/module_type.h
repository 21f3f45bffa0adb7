/*
 * The module types: one descriptor per enum tps_module_type, in one table
 * indexed by it (module_type.c), so that a type is described in one place.
 *
 * What a type computes is its ops table, in its own file (nn_linear.c,
 * ...). Everything else about it is its descriptor, and the rest of tpsim
 * reads that instead of switching on the type: the config reads, defaults,
 * checks and normalises a module's keys from `keys`, lists the types, keys
 * and styles in its messages from the table, and checks a plan's style
 * against `styles`; the width checks follow `width`; the schema check
 * (tests/schema_check.py) compares docs/tpsim-config.schema.json with a
 * dump of the table. docs/architecture.md, "Adding a module type", has the
 * steps.
 *
 *   tps_module_types[TPS_MODULE_LINEAR].name              -> "linear"
 *   tps_module_type_named("gelu")                         -> TPS_MODULE_GELU
 *   tps_module_types[TPS_MODULE_LAYERNORM].keys[0].name   -> "dim"
 *
 * The config's shorthands, transformer_block and repeat, are not types:
 * they expand into modules of these types (config_model.c), and nothing
 * past the config sees them.
 */
#ifndef TPSIM_MODULE_TYPE_H
#define TPSIM_MODULE_TYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn.h"

/* What a key of a module's config object holds. */
enum tps_key_kind {
	TPS_KEY_SIZE,	  /* an integer in [min, max], into an int64_t */
	TPS_KEY_POSITIVE, /* a finite number > 0, into a double */
	TPS_KEY_BOOL,	  /* true or false, into a bool */
	/* One of the strings `choices`, into an int: its index */
	TPS_KEY_CHOICE,
	/* A non-empty list of modules: the module's descendants (a
	 * residual's body), read after the module itself; no field. */
	TPS_KEY_MODULES,
	/* The name of an earlier module (a linear's "tie"), a string into
	 * a char[TPS_NAME_MAX]; optional, "" when absent. Which modules
	 * it may name is the config's rule (config_model.c, check_tie). */
	TPS_KEY_MODULE_NAME,
	/* a number in [0, 1), into a double (dropout's p) */
	TPS_KEY_UNIT,
};

/* One key of a module's config object, besides "name" and "type". */
struct tps_module_key {
	const char *name; /* "in_features" */
	enum tps_key_kind kind;
	bool required; /* else absent means `fallback` */
	/* Where the value goes: offsetof(struct tps_module_spec, field),
	 * the field of the kind's C type (the TPS_*_KEY macros check it). */
	size_t offset;
	int64_t min, max; /* TPS_KEY_SIZE */
	/* An optional key's value when absent (a bool's: 0 or 1), the
	 * normalised config's value then. */
	double fallback;
	/* TPS_KEY_SIZE: when set, the key is optional and its value when
	 * absent is that of this other key of the type (num_kv_heads:
	 * num_heads), read before it. */
	const char *same_as;
	/* TPS_KEY_SIZE, TPS_KEY_POSITIVE: optional with no default, absent
	 * meaning the feature is off: 0 in the field, no key in the
	 * normalised config, no default in the schema (rope_theta: no RoPE;
	 * make_vocab_size_divisible_by: no padding). */
	bool off_when_absent;
	/* Set: the key means something only with this other key of the
	 * type given (rope_style with rope_theta): given without it, an
	 * error; left out of the normalised config when it is absent. */
	const char *needs;
	/* TPS_KEY_CHOICE: the strings, as many as n_choices; `fallback`
	 * is the index of the default. */
	const char *const *choices;
	int n_choices;
};

/* offsetof(struct tps_module_spec, field), a compile error unless the
 * field is of C type `type`. */
#define TPS_MODULE_FIELD(field, type)                                          \
	_Generic(((struct tps_module_spec *)0)->field, type                    \
		 : offsetof(struct tps_module_spec, field))
/* A descriptor's keys: a required size, an optional positive number or
 * bool with its default, a list of modules. */
#define TPS_SIZE_KEY(key, field, lo, hi)                                       \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_SIZE, .required = true,         \
		.offset = TPS_MODULE_FIELD(field, int64_t), .min = (lo),       \
		.max = (hi)                                                    \
	}
/* An optional size whose value when absent is key `other`'s. */
#define TPS_SIZE_KEY_OR(key, field, lo, hi, other)                             \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_SIZE,                           \
		.offset = TPS_MODULE_FIELD(field, int64_t), .min = (lo),       \
		.max = (hi), .same_as = (other)                                \
	}
/* An optional size whose absence turns a feature off: 0 in the field. */
#define TPS_SIZE_KEY_OPTIONAL(key, field, lo, hi)                              \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_SIZE,                           \
		.offset = TPS_MODULE_FIELD(field, int64_t), .min = (lo),       \
		.max = (hi), .off_when_absent = true                           \
	}
#define TPS_POSITIVE_KEY(key, field, dflt)                                     \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_POSITIVE,                       \
		.offset = TPS_MODULE_FIELD(field, double), .fallback = (dflt)  \
	}
/* An optional positive number whose absence turns a feature off. */
#define TPS_POSITIVE_OR_OFF_KEY(key, field)                                    \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_POSITIVE,                       \
		.offset = TPS_MODULE_FIELD(field, double),                     \
		.off_when_absent = true                                        \
	}
/* An optional choice among `names` (n of them), default names[dflt],
 * given only with key `other`. */
#define TPS_CHOICE_KEY_WITH(key, field, names, n, dflt, other)                 \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_CHOICE,                         \
		.offset = TPS_MODULE_FIELD(field, int), .fallback = (dflt),    \
		.choices = (names), .n_choices = (n), .needs = (other)         \
	}
#define TPS_UNIT_KEY(key, field, dflt)                                         \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_UNIT,                           \
		.offset = TPS_MODULE_FIELD(field, double), .fallback = (dflt)  \
	}
#define TPS_BOOL_KEY(key, field, dflt)                                         \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_BOOL,                           \
		.offset = TPS_MODULE_FIELD(field, bool), .fallback = (dflt)    \
	}
/* An optional module name, "" when absent. */
#define TPS_MODULE_NAME_KEY(key, field)                                        \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_MODULE_NAME,                    \
		.offset = TPS_MODULE_FIELD(field, char *)                      \
	}
#define TPS_MODULES_KEY(key)                                                   \
	{                                                                      \
		.name = (key), .kind = TPS_KEY_MODULES, .required = true       \
	}

/*
 * How a type treats the width, the activations' last dim. The width a
 * module takes is its in_features, the width it gives its out_features
 * (struct tps_module_spec); the config checks that each module takes the
 * width the one before it gave.
 */
enum tps_width_rule {
	TPS_WIDTH_KEEPS, /* relu, gelu, residual: whatever arrives */
	/* linear: takes `in_key` (in_features), gives `out_key`
	 * (out_features) */
	TPS_WIDTH_CHANGES,
	/* layernorm, attention: takes `in_key` and gives it back; the key
	 * sets both in_features and out_features */
	TPS_WIDTH_NEEDS,
	/* embedding: takes token ids, so it is first in the model, and
	 * gives `out_key` (out_features) */
	TPS_WIDTH_MAKES,
};

#define TPS_STYLE_BIT(s)     (1u << (s))
#define TPS_MODULE_MAX_KEYS  8
#define TPS_MODULE_MAX_PARTS 4

struct tps_module_type_desc {
	const char *name; /* "type" in the config */
	/* Its keys in the config's order (and the normalised config's),
	 * up to the first without a name. */
	struct tps_module_key keys[TPS_MODULE_MAX_KEYS];
	enum tps_width_rule width;
	/* The keys its width is read from, as messages name them: NULL
	 * where the rule has none (see enum tps_width_rule). */
	const char *in_key, *out_key;
	unsigned styles; /* TPS_STYLE_BIT(enum tps_style) a plan may give */
	/* Why the other styles cannot apply, for the message. */
	const char *why_not;
	/* The modules it is made of, after it in the list, named
	 * "<name>.<part>" (an attention's linears q, k, v, o), each of
	 * part_type and as wide as it, with its bias: up to the first NULL.
	 * Its descendants then are these. */
	const char *parts[TPS_MODULE_MAX_PARTS + 1];
	enum tps_module_type part_type;
	const struct tps_module_ops *ops;
};

/* Indexed by enum tps_module_type; every entry filled (a static_assert
 * and test_nn check it). */
extern const struct tps_module_type_desc tps_module_types[];

/* The type called `name`, or -1. */
int tps_module_type_named(const char *name);

/* The key called `name` of type t, or NULL. */
const struct tps_module_key *tps_module_key_named(enum tps_module_type t,
						  const char *name);

/* The parts of type t (0 for a type not made of parts). */
int tps_module_part_count(enum tps_module_type t);

#endif
