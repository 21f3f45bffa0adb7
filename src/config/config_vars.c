/*
 * Config variables and expressions, for sweeps (config.h).
 *
 * "vars" defines names; every other string value holding a '$' is an
 * expression, replaced by its value in a copy of the config before anything
 * is validated, so the validators see plain numbers and report a bad value
 * ("4.5" where a size is needed) as they would a literal.
 *
 *   expression := factor (('*' | '/') factor)*
 *   factor     := number | '$' name
 *
 * Spaces may surround every token. Evaluation is left to right in double:
 * "$h / 2 * 3" is ($h / 2) * 3.
 */
#include "config_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- "vars" and the overrides ----------------------------------------- */

/* [A-Za-z_] and [A-Za-z0-9_], in ASCII whatever the process's locale
 * (isalpha would take Latin-1's letters under an 8-bit locale). */
static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool valid_var_name(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len >= sizeof((struct tps_config_var *)0)->name ||
	    !name_start(name[0])) {
		return false;
	}
	for (const char *p = name; *p; p++) {
		if (!name_char(*p)) {
			return false;
		}
	}
	return true;
}

static int find_var(const struct tps_run_spec *run, const char *name)
{
	for (int i = 0; i < run->n_vars; i++) {
		if (strcmp(run->vars[i].name, name) == 0) {
			return i;
		}
	}
	return -1;
}

/* "(defined: batch, hidden)", names sorted so a long list is searchable,
 * or "(the config defines no \"vars\")". Returns buf. */
static const char *defined_vars(const struct tps_run_spec *run, char *buf,
				size_t size)
{
	const char *names[TPS_CONFIG_MAX_VARS + 1];
	char list[TPS_CONFIG_MAX_VARS * 66];
	int n = run->n_vars;

	if (n == 0) {
		snprintf(buf, size, "(the config defines no \"vars\")");
		return buf;
	}
	for (int i = 0; i < n; i++) {
		int j = i;
		while (j > 0 && strcmp(names[j - 1], run->vars[i].name) > 0) {
			names[j] = names[j - 1];
			j--;
		}
		names[j] = run->vars[i].name;
	}
	names[n] = NULL;
	snprintf(buf, size, "(defined: %s)",
		 cfg_join(names, ", ", list, sizeof list));
	return buf;
}

/* /vars/<name>. */
static void var_entry(struct cfg *c, const cJSON *v, void *ctx)
{
	struct tps_run_spec *run = ctx;
	struct tps_config_var *var = &run->vars[run->n_vars];
	char esc[96];

	if (!valid_var_name(v->string)) {
		cfg_fail(
			c, TPS_ERR_INPUT,
			"invalid variable name \"%s\" (expected a letter or "
			"'_', then letters, digits or '_', under %zu bytes)",
			tps_json_escape_for_message(v->string, esc, sizeof esc),
			sizeof var->name);
		return;
	}
	if (cfg_read_number(c, v, CFG_FINITE, &var->value)) {
		snprintf(var->name, sizeof var->name, "%s", v->string);
		run->n_vars++;
	}
}

static void vars_body(struct cfg *c, const cJSON *vars, void *ctx)
{
	int n = cJSON_GetArraySize(vars);
	if (n > TPS_CONFIG_MAX_VARS) {
		cfg_fail(c, TPS_ERR_LIMIT, "%d variables (at most %d)", n,
			 TPS_CONFIG_MAX_VARS);
	}
	cfg_each_member(c, vars, var_entry, ctx);
}

void cfg_parse_vars(struct cfg *c, const cJSON *root,
		    const struct tps_config_var *overrides, int n_overrides,
		    struct tps_run_spec *run)
{
	cfg_object(c, root, "vars", CFG_OPTIONAL, NULL, vars_body, run);
	for (int i = 0; i < n_overrides && cfg_ok(c); i++) {
		const struct tps_config_var *o = &overrides[i];
		char esc[96], defined[TPS_CONFIG_MAX_VARS * 66 + 32];
		/* The name may not be NUL-terminated within its array. */
		char name[sizeof o->name + 1];
		int k;

		memcpy(name, o->name, sizeof o->name);
		name[sizeof o->name] = '\0';
		k = find_var(run, name);
		if (k < 0) {
			cfg_fail_at(c, "vars", TPS_ERR_INPUT,
				    "no variable \"%s\" to set %s",
				    tps_json_escape_for_message(name, esc,
								sizeof esc),
				    defined_vars(run, defined, sizeof defined));
		} else if (!isfinite(o->value)) {
			cfg_fail_at(c, "vars", TPS_ERR_INPUT,
				    "the value set for \"%s\" is not a finite "
				    "number",
				    tps_json_escape_for_message(name, esc,
								sizeof esc));
		} else {
			run->vars[k].value = o->value;
		}
	}
}

/* ---- expressions ------------------------------------------------------ */

struct expr {
	struct cfg *c;
	const struct tps_run_spec *run;
	const char *text; /* the whole expression */
	const char *p;	  /* the next character */
};

static void skip_spaces(struct expr *e)
{
	while (*e->p == ' ') {
		e->p++;
	}
}

/* "<pointer>: bad expression \"...\": <what> at column N". */
static void syntax_error(struct expr *e, const char *what)
{
	char esc[160];
	cfg_fail(e->c, TPS_ERR_INPUT,
		 "bad expression \"%s\": %s at column %d (an expression is "
		 "numbers and $names joined by * and /)",
		 tps_json_escape_for_message(e->text, esc, sizeof esc), what,
		 (int)(e->p - e->text) + 1);
}

static bool factor(struct expr *e, double *out)
{
	char esc[96], defined[TPS_CONFIG_MAX_VARS * 66 + 32];
	size_t len = 0;

	skip_spaces(e);
	if (*e->p == '$') {
		char name[sizeof e->run->vars[0].name];
		const char *start = ++e->p;
		int k;
		while (name_char(*e->p)) {
			e->p++;
		}
		len = (size_t)(e->p - start);
		if (len == 0 ||
		    !name_start(*start)) {
			e->p = start;
			syntax_error(e, "expected a variable name after '$'");
			return false;
		}
		if (len >= sizeof name) {
			len = sizeof name - 1; /* too long to be defined */
		}
		memcpy(name, start, len);
		name[len] = '\0';
		k = find_var(e->run, name);
		if (k < 0) {
			cfg_fail(e->c, TPS_ERR_INPUT,
				 "unknown variable \"$%s\" %s",
				 tps_json_escape_for_message(name, esc,
							     sizeof esc),
				 defined_vars(e->run, defined, sizeof defined));
			return false;
		}
		*out = e->run->vars[k].value;
		return true;
	}
	/* The JSON reader's number grammar and conversion: "04", "+2",
	 * "2." and "0x10" are no more numbers here than in the file. */
	if (tps_json_scan_number(e->p, strlen(e->p), &len, out)) {
		e->p += len;
		return true;
	}
	if (digit(*e->p) ||
	    ((*e->p == '-' || *e->p == '+' || *e->p == '.') &&
	     digit(e->p[1]))) {
		syntax_error(e, "expected a number as JSON writes one");
		return false;
	}
	syntax_error(e, *e->p ? "expected a number or $name"
			      : "expected a number or $name, got the end");
	return false;
}

/* Evaluates e->text into *out, or fails at the current pointer. */
static bool evaluate(struct expr *e, double *out)
{
	char esc[160];
	double acc, x;

	if (!factor(e, &acc)) {
		return false;
	}
	for (;;) {
		char op;
		if (!isfinite(acc)) {
			cfg_fail(e->c, TPS_ERR_INPUT,
				 "expression \"%s\" is not finite (a value "
				 "beyond the double range)",
				 tps_json_escape_for_message(e->text, esc,
							     sizeof esc));
			return false;
		}
		skip_spaces(e);
		if (*e->p == '\0') {
			break;
		}
		op = *e->p;
		if (op != '*' && op != '/') {
			syntax_error(e, "expected * or /");
			return false;
		}
		e->p++;
		if (!factor(e, &x)) {
			return false;
		}
		if (op == '/' && x == 0) {
			cfg_fail(e->c, TPS_ERR_INPUT,
				 "expression \"%s\" divides by zero",
				 tps_json_escape_for_message(e->text, esc,
							     sizeof esc));
			return false;
		}
		acc = op == '*' ? acc * x : acc / x;
	}
	*out = acc;
	return true;
}

/* ---- the substituted copy --------------------------------------------- */

static bool has_expression(const cJSON *v)
{
	const cJSON *item;
	if (cJSON_IsString(v)) {
		return strchr(v->valuestring, '$') != NULL;
	}
	cJSON_ArrayForEach(item, v)
	{
		if (has_expression(item)) {
			return true;
		}
	}
	return false;
}

struct copy_ctx {
	const struct tps_run_spec *run;
	cJSON *into; /* the copy's object or array being filled */
	bool root;   /* into is the copy of the whole config */
};

static cJSON *copy_value(struct cfg *c, const cJSON *v,
			 const struct tps_run_spec *run, bool root);

/* Adds the copy of v to x->into (under v's key in an object). */
static void copy_into(struct cfg *c, const cJSON *v, struct copy_ctx *x)
{
	/* "vars" is read before substitution: its strings are errors
	 * already, and its copy needs no evaluation. */
	bool verbatim = x->root && strcmp(v->string, "vars") == 0;
	cJSON *copy = verbatim ? tps_json_duplicate(v)
			       : copy_value(c, v, x->run, false);
	bool added = false;

	if (!cfg_ok(c)) {
		cJSON_Delete(copy);
		return;
	}
	if (copy) {
		added = cJSON_IsArray(x->into)
				? cJSON_AddItemToArray(x->into, copy)
				: cJSON_AddItemToObject(x->into, v->string,
							copy);
	}
	if (!added) {
		cJSON_Delete(copy);
		cfg_nomem(c);
	}
}

static void copy_member(struct cfg *c, const cJSON *v, void *ctx)
{
	copy_into(c, v, ctx);
}

static void copy_item(struct cfg *c, const cJSON *item, int index, void *ctx)
{
	copy_into(c, item, ctx);
}

/* A copy of v with every expression replaced by its number; NULL after an
 * error (reported at the expression's pointer). */
static cJSON *copy_value(struct cfg *c, const cJSON *v,
			 const struct tps_run_spec *run, bool root)
{
	struct copy_ctx x = {run, NULL, root};
	cJSON *copy = NULL;
	double d;

	if (tps_json_is_packed(v)) {
		/* Numbers only: no expression in it. */
		copy = tps_json_duplicate(v);
	} else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		x.into = cJSON_IsObject(v) ? cJSON_CreateObject()
					   : cJSON_CreateArray();
		if (!x.into) {
			cfg_nomem(c);
			return NULL;
		}
		if (cJSON_IsObject(v)) {
			cfg_each_member(c, v, copy_member, &x);
		} else {
			cfg_each_item(c, v, copy_item, &x);
		}
		copy = x.into;
	} else if (cJSON_IsString(v) && strchr(v->valuestring, '$')) {
		struct expr e = {c, run, v->valuestring, v->valuestring};
		if (evaluate(&e, &d)) {
			copy = cJSON_CreateNumber(d);
		}
	} else {
		copy = cJSON_Duplicate(v, false);
	}
	if (!cfg_ok(c)) {
		cJSON_Delete(copy);
		return NULL;
	}
	if (!copy) {
		cfg_nomem(c);
	}
	return copy;
}

const cJSON *cfg_substitute(struct cfg *c, const cJSON *root,
			    const struct tps_run_spec *run, cJSON **copy)
{
	*copy = NULL;
	if (!cfg_ok(c)) {
		return NULL;
	}
	/* Most configs have no expression: read them in place. */
	if (!has_expression(root)) {
		return root;
	}
	*copy = copy_value(c, root, run, true);
	return *copy;
}
