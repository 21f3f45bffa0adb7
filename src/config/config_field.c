/* The config parser's field helpers (config_internal.h). */
#include "config_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "numfmt.h"

void cfg_init(struct cfg *c, const char *file, struct tps_error *err)
{
	memset(c, 0, sizeof *c);
	c->file = file;
	c->err = err ? err : &c->own;
	c->st = TPS_OK;
	tps_json_path_init(&c->path);
}

/* ---- the pointer ------------------------------------------------------ */

static size_t push_key(struct cfg *c, const char *key)
{
	size_t saved = c->path.len;
	tps_json_path_push_key(&c->path, key);
	return saved;
}

static size_t push_index(struct cfg *c, size_t index)
{
	size_t saved = c->path.len;
	tps_json_path_push_index(&c->path, index);
	return saved;
}

static void pop(struct cfg *c, size_t saved)
{
	tps_json_path_pop(&c->path, saved);
}

const char *cfg_pointer(const struct cfg *c)
{
	return tps_json_path_str(&c->path);
}

/* ---- failing ---------------------------------------------------------- */

static void vfail(struct cfg *c, enum tps_status st, const char *fmt,
		  va_list ap) __attribute__((format(printf, 3, 0)));
static void vfail(struct cfg *c, enum tps_status st, const char *fmt,
		  va_list ap)
{
	char msg[TPS_ERROR_MESSAGE_MAX];

	if (!cfg_ok(c)) {
		return;
	}
	/* Formatted apart first: fmt's arguments may point into c->err. */
	vsnprintf(msg, sizeof msg, fmt, ap);
	/* Keys may hold control characters: tps_error_set_at escapes them,
	 * so that the line stays one line. */
	c->st = tps_error_set_at(c->err, st, c->file, c->path.text, "%s", msg);
}

void cfg_fail(struct cfg *c, enum tps_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(c, st, fmt, ap);
	va_end(ap);
}

void cfg_fail_at_pointer(struct cfg *c, const char *pointer, enum tps_status st,
			 const char *fmt, ...)
{
	struct tps_json_path saved = c->path;
	va_list ap;
	snprintf(c->path.text, sizeof c->path.text, "%s", pointer);
	c->path.len = strlen(c->path.text);
	va_start(ap, fmt);
	vfail(c, st, fmt, ap);
	va_end(ap);
	c->path = saved;
}

void cfg_fail_at(struct cfg *c, const char *key, enum tps_status st,
		 const char *fmt, ...)
{
	size_t saved = push_key(c, key);
	va_list ap;
	va_start(ap, fmt);
	vfail(c, st, fmt, ap);
	va_end(ap);
	pop(c, saved);
}

void cfg_fail_at_item(struct cfg *c, const char *key, size_t index,
		      enum tps_status st, const char *fmt, ...)
{
	size_t saved = push_key(c, key);
	va_list ap;
	push_index(c, index);
	va_start(ap, fmt);
	vfail(c, st, fmt, ap);
	va_end(ap);
	pop(c, saved);
}

void cfg_fail_from(struct cfg *c, enum tps_status st,
		   const struct tps_error *sub)
{
	if (st != TPS_OK) {
		cfg_fail(c, st, "%s", sub->message);
	}
}

void cfg_nomem(struct cfg *c)
{
	if (cfg_ok(c)) {
		c->st = tps_error_set(c->err, TPS_ERR_NOMEM, "out of memory");
	}
}

void cfg_adopt(struct cfg *c, enum tps_status st, const struct tps_error *sub)
{
	if (cfg_ok(c) && st != TPS_OK) {
		/* The whole error: its place too, when it has one. */
		if (c->err != sub) {
			*c->err = *sub;
		}
		c->err->status = st;
		c->st = st;
	}
}

/* ---- message parts ---------------------------------------------------- */

const char *cfg_describe(const cJSON *v, char *buf, size_t size)
{
	char esc[64];
	if (cJSON_IsString(v)) {
		snprintf(buf, size, "string \"%s\"",
			 tps_json_escape_for_message(v->valuestring, esc,
						     sizeof esc));
	} else if (cJSON_IsNumber(v)) {
		char num[TPS_NUMFMT_MAX];
		if (isfinite(v->valuedouble)) {
			tps_format_double(v->valuedouble, num);
		} else {
			snprintf(num, sizeof num, "a number out of range");
		}
		snprintf(buf, size, "%s", num);
	} else if (cJSON_IsBool(v)) {
		snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
	} else if (cJSON_IsArray(v)) {
		snprintf(buf, size, "an array");
	} else if (cJSON_IsObject(v)) {
		snprintf(buf, size, "an object");
	} else {
		snprintf(buf, size, "null");
	}
	return buf;
}

const char *cfg_format_number(double d, char buf[TPS_NUMFMT_MAX])
{
	tps_format_double(d, buf);
	return buf;
}

const char *cfg_join(const char *const *names, const char *last, char *buf,
		     size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; names[i]; i++) {
		const char *sep = i == 0 ? "" : names[i + 1] ? ", " : last;
		int n = snprintf(buf + used, size - used, "%s%s", sep,
				 names[i]);
		if (n < 0 || (size_t)n >= size - used) {
			break; /* truncated, still NUL-terminated */
		}
		used += (size_t)n;
	}
	return buf;
}

/* ---- values at the current pointer ------------------------------------ */

bool cfg_expect(struct cfg *c, const cJSON *v, cJSON_bool (*is)(const cJSON *),
		const char *what)
{
	char got[96];
	if (!cfg_ok(c)) {
		return false;
	}
	if (is(v)) {
		return true;
	}
	cfg_fail(c, TPS_ERR_INPUT, "expected %s, got %s", what,
		 cfg_describe(v, got, sizeof got));
	return false;
}

bool cfg_check_keys(struct cfg *c, const cJSON *obj, const char *const *allowed)
{
	const cJSON *item;
	if (!cfg_ok(c)) {
		return false;
	}
	cJSON_ArrayForEach(item, obj)
	{
		if (tps_name_index(allowed, item->string) < 0) {
			char list[512], esc[96];
			cfg_fail_at(c, item->string, TPS_ERR_INPUT,
				    "unknown key \"%s\" (expected one of: %s)",
				    tps_json_escape_for_message(
					    item->string, esc, sizeof esc),
				    cfg_join(allowed, ", ", list, sizeof list));
			return false;
		}
	}
	return true;
}

bool cfg_read_int(struct cfg *c, const cJSON *v, int64_t lo, int64_t hi,
		  int64_t *out)
{
	char got[96];
	double d;
	if (!cfg_expect(c, v, cJSON_IsNumber, "an integer")) {
		return false;
	}
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d)) {
		cfg_fail(c, TPS_ERR_INPUT, "expected an integer, got %s",
			 cfg_describe(v, got, sizeof got));
		return false;
	}
	if (d < (double)lo || d > (double)hi) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "out of range (expected %lld to %lld, got %s)",
			 (long long)lo, (long long)hi,
			 cfg_describe(v, got, sizeof got));
		return false;
	}
	*out = (int64_t)d;
	return true;
}

bool cfg_read_number(struct cfg *c, const cJSON *v, enum cfg_range range,
		     double *out)
{
	char got[96];
	double d;
	bool ok = false;
	const char *what = "";
	if (!cfg_expect(c, v, cJSON_IsNumber, "a number")) {
		return false;
	}
	d = v->valuedouble;
	switch (range) {
	case CFG_FINITE:
		ok = isfinite(d);
		what = "a finite number";
		break;
	case CFG_NONNEG:
		ok = isfinite(d) && d >= 0;
		what = "a finite number >= 0";
		break;
	case CFG_POSITIVE:
		ok = isfinite(d) && d > 0;
		what = "a finite number > 0";
		break;
	case CFG_UNIT:
		ok = d >= 0 && d < 1;
		what = "a number in [0, 1)";
		break;
	}
	if (!ok) {
		cfg_fail(c, TPS_ERR_INPUT, "expected %s, got %s", what,
			 cfg_describe(v, got, sizeof got));
		return false;
	}
	*out = d;
	return true;
}

bool cfg_read_choice(struct cfg *c, const cJSON *v, const char *what,
		     const char *const *names, int *index)
{
	char list[256], esc[96];
	int i;
	if (!cfg_expect(c, v, cJSON_IsString, "a string")) {
		return false;
	}
	i = tps_name_index(names, v->valuestring);
	if (i < 0) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "unknown %s \"%s\" (expected one of %s)", what,
			 tps_json_escape_for_message(v->valuestring, esc,
						     sizeof esc),
			 cfg_join(names, ", ", list, sizeof list));
		return false;
	}
	*index = i;
	return true;
}

/* ---- obj[key] --------------------------------------------------------- */

const cJSON *cfg_get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const cJSON *cfg_require(struct cfg *c, const cJSON *obj, const char *key)
{
	const cJSON *v = cfg_get(obj, key);
	if (!cfg_ok(c)) {
		return NULL;
	}
	if (!v) {
		cfg_fail_at(c, key, TPS_ERR_INPUT, "missing");
	}
	return v;
}

/* obj[key] when present (pushing "/key" on *saved), NULL when absent
 * (failing if required) or after an error. */
static const cJSON *enter(struct cfg *c, const cJSON *obj, const char *key,
			  enum cfg_need need, size_t *saved)
{
	const cJSON *v = need == CFG_REQUIRED ? cfg_require(c, obj, key)
					      : cfg_get(obj, key);
	if (!cfg_ok(c) || !v) {
		return NULL;
	}
	*saved = push_key(c, key);
	return v;
}

bool cfg_int(struct cfg *c, const cJSON *obj, const char *key,
	     enum cfg_need need, int64_t lo, int64_t hi, int64_t *out)
{
	size_t saved;
	const cJSON *v = enter(c, obj, key, need, &saved);
	bool ok;
	if (!v) {
		return false;
	}
	ok = cfg_read_int(c, v, lo, hi, out);
	pop(c, saved);
	return ok;
}

bool cfg_number(struct cfg *c, const cJSON *obj, const char *key,
		enum cfg_need need, enum cfg_range range, double *out)
{
	size_t saved;
	const cJSON *v = enter(c, obj, key, need, &saved);
	bool ok;
	if (!v) {
		return false;
	}
	ok = cfg_read_number(c, v, range, out);
	pop(c, saved);
	return ok;
}

bool cfg_bool(struct cfg *c, const cJSON *obj, const char *key, bool *out)
{
	size_t saved;
	const cJSON *v = enter(c, obj, key, CFG_OPTIONAL, &saved);
	bool ok;
	if (!v) {
		return false;
	}
	ok = cfg_expect(c, v, cJSON_IsBool, "true or false");
	if (ok) {
		*out = cJSON_IsTrue(v);
	}
	pop(c, saved);
	return ok;
}

bool cfg_choice(struct cfg *c, const cJSON *obj, const char *key,
		const char *what, const char *const *names, int *index)
{
	size_t saved;
	const cJSON *v = enter(c, obj, key, CFG_OPTIONAL, &saved);
	bool ok;
	if (!v) {
		return false;
	}
	ok = cfg_read_choice(c, v, what, names, index);
	pop(c, saved);
	return ok;
}

void cfg_init_method(struct cfg *c, const cJSON *obj, const char *method_key,
		     struct tps_init_spec *init)
{
	int method = (int)init->method;
	int64_t seed = (int64_t)init->seed;
	cfg_choice(c, obj, method_key, "init method", tps_init_method_names,
		   &method);
	cfg_int(c, obj, "seed", CFG_OPTIONAL, 0, (int64_t)1 << 53, &seed);
	init->method = (enum tps_init_method)method;
	init->seed = (uint64_t)seed;
}

struct sizes_ctx {
	int64_t hi;
	int64_t *dims;
};

static void read_size(struct cfg *c, const cJSON *item, int index, void *ctx)
{
	struct sizes_ctx *s = ctx;
	cfg_read_int(c, item, 1, s->hi, &s->dims[index]);
}

bool cfg_sizes(struct cfg *c, const cJSON *obj, const char *key,
	       enum cfg_need need, const char *what, int max_dims, int64_t hi,
	       int64_t *dims, int *ndim)
{
	size_t saved;
	const cJSON *v = enter(c, obj, key, need, &saved);
	struct sizes_ctx s = {hi, dims};
	int n;
	if (!v) {
		return false;
	}
	if (cfg_expect(c, v, cJSON_IsArray, "an array of sizes")) {
		n = cJSON_GetArraySize(v);
		if (n < 1 || n > max_dims) {
			cfg_fail(c, TPS_ERR_LIMIT,
				 "%s has %d dims (expected 1 to %d)", what, n,
				 max_dims);
		}
		cfg_each_item(c, v, read_size, &s);
		if (cfg_ok(c)) {
			*ndim = n;
		}
	}
	pop(c, saved);
	return cfg_ok(c);
}

bool cfg_value(struct cfg *c, const cJSON *obj, const char *key,
	       enum cfg_need need, cfg_body_fn *fn, void *ctx)
{
	size_t saved;
	const cJSON *v = enter(c, obj, key, need, &saved);
	if (!v) {
		return false;
	}
	fn(c, v, ctx);
	pop(c, saved);
	return cfg_ok(c);
}

bool cfg_object(struct cfg *c, const cJSON *obj, const char *key,
		enum cfg_need need, const char *const *allowed, cfg_body_fn *fn,
		void *ctx)
{
	size_t saved;
	const cJSON *v = enter(c, obj, key, need, &saved);
	if (!v) {
		return false;
	}
	if (cfg_expect(c, v, cJSON_IsObject, "an object") &&
	    (!allowed || cfg_check_keys(c, v, allowed))) {
		fn(c, v, ctx);
	}
	pop(c, saved);
	return cfg_ok(c);
}

void cfg_each_item(struct cfg *c, const cJSON *array, cfg_item_fn *fn,
		   void *ctx)
{
	const cJSON *item;
	int i = 0;
	if (tps_json_is_packed(array)) {
		/* Each element as the node it would have been. */
		for (; i < tps_json_array_size(array) && cfg_ok(c); i++) {
			cJSON number;
			size_t saved = push_index(c, (size_t)i);
			tps_json_packed_item(array, i, &number);
			fn(c, &number, i, ctx);
			pop(c, saved);
		}
		return;
	}
	cJSON_ArrayForEach(item, array)
	{
		size_t saved;
		if (!cfg_ok(c)) {
			return;
		}
		saved = push_index(c, (size_t)i);
		fn(c, item, i, ctx);
		pop(c, saved);
		i++;
	}
}

void cfg_each_member(struct cfg *c, const cJSON *obj, cfg_body_fn *fn,
		     void *ctx)
{
	const cJSON *item;
	cJSON_ArrayForEach(item, obj)
	{
		size_t saved;
		if (!cfg_ok(c)) {
			return;
		}
		saved = push_key(c, item->string);
		fn(c, item, ctx);
		pop(c, saved);
	}
}
