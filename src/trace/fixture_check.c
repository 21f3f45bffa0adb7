/*
 * The fixture checker (docs/design.md section 6); the rules are in
 * check.h.
 *
 * Two passes: the trace header and the whole fixture are validated before
 * anything is compared, so trouble (exit 2) never comes after mismatch lines
 * already reported (exit 1), and on error the outputs stay untouched.
 * Nothing here allocates: lines and echoed values are built in bounded
 * buffers, so a huge mismatching value cannot fail or flood a line.
 */
#include "fixture_check.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "numfmt.h"

/* Objects and arrays echoed in a line are cut to this many characters. */
#define CHECK_CUT_CHARS 60
/* An echoed value; strings longer than this are cut by the escaper. */
#define CHECK_VALUE_MAX	 256
#define CHECK_NUMBER_MAX 40
#define CHECK_LINE_MAX	 4096

/* |trace - fixture| <= atol + rtol * |fixture| */
struct check_tol {
	double atol;
	double rtol;
};

/* Which reserved keys an object level has (see check.h). */
enum check_scope {
	CHECK_SCOPE_PLAIN, /* none: "match"/"tolerance" are ordinary keys */
	CHECK_SCOPE_TOP,   /* "tolerance", and "events" matched by content */
	CHECK_SCOPE_EVENT, /* "match" and "tolerance" */
};

struct checker {
	tps_check_report_fn report;
	void *ctx;
	size_t count;		   /* mismatches so far, reported or not */
	struct tps_json_path path; /* fixture pointer of the value compared */
	const cJSON *event;	   /* trace event being compared, or NULL */
	size_t event_index;	   /* its index in the trace's "events" */
	/* Its "dtype" (float32 when it has none): its numbers, and the
	 * fixture's, compare as values of it. */
	enum tps_dtype dtype;
};

/*
 * Shortest decimal that reads back to the same double: %.17g trimmed, so
 * with an exponent only where %.17g has one (70, not 7e+01). In the C
 * locale, whatever the process's (numfmt.h).
 */
static void format_number(double d, char *out, size_t out_size)
{
	char full[CHECK_NUMBER_MAX];
	bool exponent;
	struct tps_c_locale l;

	tps_c_locale_enter(&l);
	if (isnan(d)) {
		snprintf(out, out_size, "NaN");
	} else if (isinf(d)) {
		snprintf(out, out_size, "%s", d > 0 ? "Infinity" : "-Infinity");
	} else {
		snprintf(full, sizeof full, "%.17g", d);
		exponent = strchr(full, 'e') != NULL;
		snprintf(out, out_size, "%s", full);
		for (int prec = 1; prec < 17; prec++) {
			char tmp[CHECK_NUMBER_MAX];

			snprintf(tmp, sizeof tmp, "%.*g", prec, d);
			if (strtod(tmp, NULL) == d &&
			    (strchr(tmp, 'e') != NULL) == exponent) {
				snprintf(out, out_size, "%s", tmp);
				break;
			}
		}
	}
	tps_c_locale_leave(&l);
}

/* A bounded text buffer; text past `cap` is dropped and `cut` set. */
struct sbuf {
	char *buf;
	size_t cap; /* characters it may hold, excluding the NUL */
	size_t len;
	bool cut;
};

static void sb_put(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->cut) {
		return;
	}
	if (n > b->cap - b->len) {
		n = b->cap - b->len;
		/* Never end inside a UTF-8 sequence. */
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) {
			n--;
		}
		b->cut = true;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

static void sb_put_string(struct sbuf *b, const char *s)
{
	/* Enough for what survives the cut; longer text ends in "...". */
	char esc[CHECK_CUT_CHARS + 8];

	tps_json_escape_for_message(s ? s : "", esc, sizeof esc);
	sb_put(b, "\"");
	sb_put(b, esc);
	sb_put(b, "\"");
}

/* Compact JSON, stopping as soon as the buffer is full. */
static void sb_put_json(struct sbuf *b, const cJSON *v)
{
	char num[CHECK_NUMBER_MAX];
	const cJSON *child;

	if (b->cut) {
		return;
	}
	if (cJSON_IsNumber(v)) {
		format_number(v->valuedouble, num, sizeof num);
		sb_put(b, num);
	} else if (cJSON_IsString(v)) {
		sb_put_string(b, v->valuestring);
	} else if (cJSON_IsTrue(v)) {
		sb_put(b, "true");
	} else if (cJSON_IsFalse(v)) {
		sb_put(b, "false");
	} else if (cJSON_IsNull(v)) {
		sb_put(b, "null");
	} else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		bool object = cJSON_IsObject(v);

		sb_put(b, object ? "{" : "[");
		for (child = v->child; child && !b->cut; child = child->next) {
			if (child != v->child) {
				sb_put(b, ",");
			}
			if (object) {
				sb_put_string(b, child->string);
				sb_put(b, ":");
			}
			sb_put_json(b, child);
		}
		sb_put(b, object ? "}" : "]");
	} else {
		sb_put(b, "(invalid)");
	}
}

/*
 * A value as echoed in a line: numbers shortest round-trip, strings quoted
 * and escaped, objects and arrays compact JSON cut at CHECK_CUT_CHARS.
 */
static void format_value(const cJSON *v, char *out, size_t out_size)
{
	struct sbuf b = {out, out_size - 1, 0, false};

	assert(out_size > CHECK_CUT_CHARS + 4);
	out[0] = '\0';
	if (cJSON_IsString(v)) {
		size_t n;

		/* Room is kept for both quotes around the escaped text. */
		out[0] = '"';
		tps_json_escape_for_message(v->valuestring ? v->valuestring
							   : "",
					    out + 1, out_size - 2);
		n = strlen(out);
		out[n] = '"';
		out[n + 1] = '\0';
	} else {
		if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
			b.cap = CHECK_CUT_CHARS;
		}
		sb_put_json(&b, v);
		if (b.cut) {
			memcpy(out + b.len, "...", 4);
		}
	}
}

/* "seq 9", or where the event is when it has no numeric seq. */
static void describe_event(const cJSON *ev, size_t index, char *out,
			   size_t out_size)
{
	const cJSON *seq = NULL;
	char num[CHECK_NUMBER_MAX];

	if (cJSON_IsObject(ev)) {
		seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
	}
	if (cJSON_IsNumber(seq)) {
		format_number(seq->valuedouble, num, sizeof num);
		snprintf(out, out_size, "seq %s", num);
	} else {
		snprintf(out, out_size, "/events/%zu", index);
	}
}

/* Counts a mismatch; reports "<pointer>: <what>[ (trace event seq N)]",
 * and its parts: expected and got (NULL when it is not a difference of
 * two values) as the line writes them. */
static void emit_vals(struct checker *c, const char *expected,
		      const char *got, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void emit_vals(struct checker *c, const char *expected,
		      const char *got, const char *fmt, ...)
{
	char body[CHECK_LINE_MAX / 2];
	char ptr[CHECK_LINE_MAX / 4];
	char desc[CHECK_NUMBER_MAX + 16];
	char line[CHECK_LINE_MAX];
	struct tps_check_mismatch m = {0};
	const cJSON *seq;
	va_list ap;

	c->count++;
	/* Past the cap only the count matters. */
	if (c->count > TPS_CHECK_MAX_LINES || !c->report) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	/* Fixture keys are user text: keep the line one line. */
	tps_json_escape_for_message(tps_json_path_str(&c->path), ptr,
				    sizeof ptr);
	m.seq = -1;
	if (c->event) {
		describe_event(c->event, c->event_index, desc, sizeof desc);
		snprintf(line, sizeof line, "%s: %s (trace event %s)", ptr,
			 body, desc);
		seq = cJSON_IsObject(c->event)
			      ? cJSON_GetObjectItemCaseSensitive(c->event,
								 "seq")
			      : NULL;
		if (cJSON_IsNumber(seq) && seq->valuedouble >= 0 &&
		    seq->valuedouble < 9e15) {
			m.seq = (long long)seq->valuedouble;
		}
	} else {
		snprintf(line, sizeof line, "%s: %s", ptr, body);
	}
	m.pointer = c->path.text;
	m.expected = expected;
	m.got = got;
	m.what = body;
	m.line = line;
	c->report(c->ctx, &m);
}

#define emit(c, ...) emit_vals(c, NULL, NULL, __VA_ARGS__)

static void emit_values(struct checker *c, const cJSON *f, const cJSON *t)
{
	char fs[CHECK_VALUE_MAX + 8];
	char ts[CHECK_VALUE_MAX + 8];

	format_value(f, fs, sizeof fs);
	format_value(t, ts, sizeof ts);
	emit_vals(c, fs, ts, "expected %s, got %s", fs, ts);
}

static bool number_within(double f, double t, const struct check_tol *tol)
{
	bool ok = false;

	if (isnan(f) || isnan(t)) {
		ok = false;
	} else if (f == t) {
		/* Equal infinities too, where t - f would be NaN. */
		ok = true;
	} else {
		ok = fabs(t - f) <= tol->atol + tol->rtol * fabs(f);
	}
	return ok;
}

static size_t child_count(const cJSON *v)
{
	size_t n = 0;

	for (const cJSON *child = v->child; child; child = child->next) {
		n++;
	}
	return n;
}

static bool values_equal(const cJSON *f, const cJSON *t);

/* Every key of f is in t with an equal value (partial match). */
static bool object_contains(const cJSON *f, const cJSON *t)
{
	bool ok = true;

	for (const cJSON *fc = f->child; fc && ok; fc = fc->next) {
		const cJSON *tc = cJSON_GetObjectItemCaseSensitive(
			t, fc->string ? fc->string : "");

		ok = tc && values_equal(fc, tc);
	}
	return ok;
}

/* The comparison rules with zero tolerance, silently (for "match"). */
static bool values_equal(const cJSON *f, const cJSON *t)
{
	static const struct check_tol exact = {0.0, 0.0};
	bool ok = false;

	if (cJSON_IsNumber(f) && cJSON_IsNumber(t)) {
		ok = number_within(f->valuedouble, t->valuedouble, &exact);
	} else if (cJSON_IsBool(f) && cJSON_IsBool(t)) {
		ok = (cJSON_IsTrue(f) != 0) == (cJSON_IsTrue(t) != 0);
	} else if (cJSON_IsString(f) && cJSON_IsString(t)) {
		ok = strcmp(f->valuestring ? f->valuestring : "",
			    t->valuestring ? t->valuestring : "") == 0;
	} else if (cJSON_IsArray(f) && cJSON_IsArray(t)) {
		const cJSON *fc = f->child;
		const cJSON *tc = t->child;

		ok = child_count(f) == child_count(t);
		for (; ok && fc && tc; fc = fc->next, tc = tc->next) {
			ok = values_equal(fc, tc);
		}
	} else if (cJSON_IsObject(f) && cJSON_IsObject(t)) {
		ok = object_contains(f, t);
	} else {
		ok = cJSON_IsNull(f) && cJSON_IsNull(t);
	}
	return ok;
}

static void compare_value(struct checker *c, const cJSON *f, const cJSON *t,
			  const struct check_tol *tol);

static void compare_number(struct checker *c, double f, double t,
			   const struct check_tol *tol)
{
	char fs[CHECK_NUMBER_MAX];
	char ts[CHECK_NUMBER_MAX];
	char ds[CHECK_NUMBER_MAX];
	char as[CHECK_NUMBER_MAX];
	double diff;

	if (c->dtype != TPS_DTYPE_F32) {
		/* A bf16 trace writes 2^-8 as 0.0039, the shortest decimal
		 * that reads back to it in bf16; a fixture may write
		 * 0.00390625: both are read as bf16 values first. */
		f = tps_dtype_round_double(f, c->dtype);
		t = tps_dtype_round_double(t, c->dtype);
	}
	diff = fabs(t - f);
	if (number_within(f, t, tol)) {
		return;
	}
	format_number(f, fs, sizeof fs);
	format_number(t, ts, sizeof ts);
	if ((tol->atol > 0 || tol->rtol > 0) && isfinite(diff)) {
		/* With a tolerance in force, say by how much it was missed. */
		format_number(diff, ds, sizeof ds);
		format_number(tol->atol + tol->rtol * fabs(f), as, sizeof as);
		emit_vals(c, fs, ts,
			  "expected %s, got %s (|diff| %s > %s allowed)", fs,
			  ts, ds, as);
	} else {
		emit_vals(c, fs, ts, "expected %s, got %s", fs, ts);
	}
}

static void compare_array(struct checker *c, const cJSON *f, const cJSON *t,
			  const struct check_tol *tol)
{
	size_t nf = child_count(f);
	size_t nt = child_count(t);
	char fs[CHECK_VALUE_MAX];
	char ts[CHECK_VALUE_MAX];
	const cJSON *fc = f->child;
	const cJSON *tc = t->child;

	if (nf != nt) {
		format_value(f, fs, sizeof fs);
		format_value(t, ts, sizeof ts);
		emit_vals(c, fs, ts, "expected %zu element%s %s, got %zu %s",
			  nf, nf == 1 ? "" : "s", fs, nt, ts);
		return;
	}
	for (size_t i = 0; fc && tc; fc = fc->next, tc = tc->next, i++) {
		size_t saved = c->path.len;

		tps_json_path_push_index(&c->path, i);
		compare_value(c, fc, tc, tol);
		tps_json_path_pop(&c->path, saved);
	}
}

static void compare_events(struct checker *c, const cJSON *fev,
			   const cJSON *tev, const struct check_tol *tol);

static void apply_tolerance(const cJSON *j, struct check_tol *tol)
{
	const cJSON *atol = cJSON_GetObjectItemCaseSensitive(j, "atol");
	const cJSON *rtol = cJSON_GetObjectItemCaseSensitive(j, "rtol");

	/* Keys it lacks keep the tolerance already in force. */
	if (cJSON_IsNumber(atol)) {
		tol->atol = atol->valuedouble;
	}
	if (cJSON_IsNumber(rtol)) {
		tol->rtol = rtol->valuedouble;
	}
}

/* Whether every item of a fixture event's "ranks" names its rank: then
 * they are matched to the trace's by number, not by position, and may
 * list only some ranks. */
static bool ranks_by_number(const cJSON *f)
{
	const cJSON *e;
	if (!cJSON_IsArray(f) || !f->child) {
		return false;
	}
	cJSON_ArrayForEach(e, f)
	{
		if (!cJSON_IsNumber(
			    cJSON_GetObjectItemCaseSensitive(e, "rank"))) {
			return false;
		}
	}
	return true;
}

static const cJSON *trace_rank(const cJSON *t, double rank)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, t)
	{
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "rank");
		if (cJSON_IsNumber(r) && r->valuedouble == rank) {
			return e;
		}
	}
	return NULL;
}

static void compare_ranks_by_number(struct checker *c, const cJSON *f,
				    const cJSON *t, const struct check_tol *tol)
{
	const cJSON *fc;
	size_t i = 0;
	cJSON_ArrayForEach(fc, f)
	{
		double rank = cJSON_GetObjectItemCaseSensitive(fc, "rank")
				      ->valuedouble;
		const cJSON *tc = trace_rank(t, rank);
		size_t saved = c->path.len;
		char num[CHECK_NUMBER_MAX];

		tps_json_path_push_index(&c->path, i++);
		if (tc) {
			compare_value(c, fc, tc, tol);
		} else {
			format_number(rank, num, sizeof num);
			emit(c, "no rank %s in the trace event", num);
		}
		tps_json_path_pop(&c->path, saved);
	}
}

static bool is_reserved(const char *key, enum check_scope scope)
{
	bool reserved = false;

	if (scope == CHECK_SCOPE_TOP) {
		reserved = strcmp(key, "tolerance") == 0;
	} else if (scope == CHECK_SCOPE_EVENT) {
		reserved = strcmp(key, "tolerance") == 0 ||
			   strcmp(key, "match") == 0;
	}
	return reserved;
}

static void compare_members(struct checker *c, const cJSON *f, const cJSON *t,
			    const struct check_tol *tol, enum check_scope scope)
{
	for (const cJSON *fc = f->child; fc; fc = fc->next) {
		const char *key = fc->string ? fc->string : "";
		const cJSON *tc;
		size_t saved = c->path.len;

		if (is_reserved(key, scope)) {
			continue;
		}
		tc = cJSON_GetObjectItemCaseSensitive(t, key);
		tps_json_path_push_key(&c->path, key);
		if (!tc) {
			char fs[CHECK_VALUE_MAX];
			format_value(fc, fs, sizeof fs);
			emit_vals(c, fs, NULL, "missing in trace");
		} else if (scope == CHECK_SCOPE_TOP &&
			   strcmp(key, "events") == 0 && cJSON_IsArray(fc) &&
			   cJSON_IsArray(tc)) {
			compare_events(c, fc, tc, tol);
		} else if (scope == CHECK_SCOPE_EVENT &&
			   strcmp(key, "ranks") == 0 && ranks_by_number(fc) &&
			   cJSON_IsArray(tc)) {
			compare_ranks_by_number(c, fc, tc, tol);
		} else {
			compare_value(c, fc, tc, tol);
		}
		tps_json_path_pop(&c->path, saved);
	}
}

static void compare_value(struct checker *c, const cJSON *f, const cJSON *t,
			  const struct check_tol *tol)
{
	if (cJSON_IsNumber(f) && cJSON_IsNumber(t)) {
		compare_number(c, f->valuedouble, t->valuedouble, tol);
	} else if (cJSON_IsArray(f) && cJSON_IsArray(t)) {
		compare_array(c, f, t, tol);
	} else if (cJSON_IsObject(f) && cJSON_IsObject(t)) {
		compare_members(c, f, t, tol, CHECK_SCOPE_PLAIN);
	} else if (!values_equal(f, t)) {
		/* Strings, booleans, and any difference of type. */
		emit_values(c, f, t);
	}
}

static void report_unmatched(struct checker *c, const cJSON *match,
			     const cJSON *prev, size_t prev_index)
{
	char desc[CHECK_NUMBER_MAX + 16];
	char after[CHECK_NUMBER_MAX + 32] = "";
	char ms[CHECK_VALUE_MAX];

	if (prev) {
		describe_event(prev, prev_index, desc, sizeof desc);
		snprintf(after, sizeof after, " after %s", desc);
	}
	if (match) {
		format_value(match, ms, sizeof ms);
		emit(c, "no trace event%s matches %s", after, ms);
	} else {
		emit(c, "no trace event left%s to compare with", after);
	}
}

/* A trace event's "dtype" (the trace reader checked it), or float32. */
static enum tps_dtype dtype_of(const cJSON *ev)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "dtype");
	for (int i = 0; cJSON_IsString(d) && tps_dtype_names[i]; i++) {
		if (strcmp(d->valuestring, tps_dtype_names[i]) == 0) {
			return (enum tps_dtype)i;
		}
	}
	return TPS_DTYPE_F32;
}

/*
 * Each fixture event takes the first trace event after the last one taken
 * whose keys equal its "match" (or simply the next one); one that finds none
 * is a mismatch and takes nothing, so later fixture events still can.
 */
static void compare_events(struct checker *c, const cJSON *fev,
			   const cJSON *tev, const struct check_tol *tol)
{
	const cJSON *cursor = tev->child; /* first trace event not passed */
	size_t cursor_index = 0;
	const cJSON *prev = NULL;
	size_t prev_index = 0;
	size_t i = 0;

	for (const cJSON *fe = fev->child; fe; fe = fe->next, i++) {
		const cJSON *match =
			cJSON_GetObjectItemCaseSensitive(fe, "match");
		struct check_tol ev_tol = *tol;
		const cJSON *found = NULL;
		size_t found_index = cursor_index;
		size_t saved = c->path.len;

		apply_tolerance(
			cJSON_GetObjectItemCaseSensitive(fe, "tolerance"),
			&ev_tol);
		for (const cJSON *t = cursor; t; t = t->next, found_index++) {
			if (!match ||
			    (cJSON_IsObject(t) && object_contains(match, t))) {
				found = t;
				break;
			}
		}
		tps_json_path_push_index(&c->path, i);
		if (!found) {
			report_unmatched(c, match, prev, prev_index);
		} else {
			c->event = found;
			c->event_index = found_index;
			c->dtype = dtype_of(found);
			if (cJSON_IsObject(found)) {
				compare_members(c, fe, found, &ev_tol,
						CHECK_SCOPE_EVENT);
			} else {
				emit_values(c, fe, found);
			}
			c->event = NULL;
			c->dtype = TPS_DTYPE_F32;
			prev = found;
			prev_index = found_index;
			cursor = found->next;
			cursor_index = found_index + 1;
		}
		tps_json_path_pop(&c->path, saved);
	}
}

/* Sets err to "<name>: <pointer>: <what>" (TPS_ERR_INPUT). */
static enum tps_status input_error(struct tps_error *err, const char *name,
				   const struct tps_json_path *p,
				   const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static enum tps_status input_error(struct tps_error *err, const char *name,
				   const struct tps_json_path *p,
				   const char *fmt, ...)
{
	char body[TPS_ERROR_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	return tps_error_set_at(err, TPS_ERR_INPUT, name, p->text, "%s", body);
}

/* A config or a fixture where a trace belongs: what it is, and what to do
 * with it. TPS_OK for anything else. */
static enum tps_status refuse_other_kinds(const cJSON *trace, const char *name,
					  struct tps_error *err)
{
	struct tps_json_path p;
	switch (tps_json_file_kind(trace, &p)) {
	case TPS_FILE_CONFIG:
		return input_error(err, name, &p,
				   "expected a tpsim trace (\"format\": "
				   "\"tpsim.trace\"), got a tpsim config: "
				   "tpsim run CONFIG -o TRACE makes its trace");
	case TPS_FILE_FIXTURE:
		return input_error(err, name, &p,
				   "expected a tpsim trace, got a tpsim "
				   "fixture: tpsim check TRACE FIXTURE takes "
				   "the fixture second");
	case TPS_FILE_OTHER:
	case TPS_FILE_TRACE: break;
	}
	return TPS_OK;
}

enum tps_status tps_check_is_trace(const cJSON *trace, const char *name,
				   struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	struct tps_json_path p;
	const cJSON *format;
	const cJSON *version;
	char got[CHECK_VALUE_MAX];

	tps_json_path_init(&p);
	if (!cJSON_IsObject(trace)) {
		format_value(trace, got, sizeof got);
		st = input_error(err, name, &p,
				 "not a tpsim trace: expected an object, "
				 "got %s",
				 got);
		goto out;
	}
	st = refuse_other_kinds(trace, name, err);
	if (st != TPS_OK) {
		goto out;
	}
	format = cJSON_GetObjectItemCaseSensitive(trace, "format");
	version = cJSON_GetObjectItemCaseSensitive(trace, "version");
	tps_json_path_push_key(&p, "format");
	if (!format) {
		st = input_error(err, name, &p,
				 "missing, expected \"tpsim.trace\" "
				 "(not a tpsim trace)");
		goto out;
	}
	if (!cJSON_IsString(format) || !format->valuestring ||
	    strcmp(format->valuestring, "tpsim.trace") != 0) {
		format_value(format, got, sizeof got);
		st = input_error(err, name, &p,
				 "expected \"tpsim.trace\", got %s", got);
		goto out;
	}
	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "version");
	if (!version) {
		st = input_error(err, name, &p, "missing, expected 1");
		goto out;
	}
	if (!cJSON_IsNumber(version) || version->valuedouble != 1.0) {
		format_value(version, got, sizeof got);
		st = input_error(err, name, &p,
				 "expected 1, got %s (unsupported trace "
				 "version)",
				 got);
		goto out;
	}
out:
	return st;
}

/* `tol` is the value at pointer p: {"atol": a, "rtol": r}, finite, >= 0. */
static enum tps_status validate_tolerance(const cJSON *tol,
					  struct tps_json_path *p,
					  const char *name,
					  struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	size_t saved = p->len;
	const cJSON *item;
	char got[CHECK_VALUE_MAX];

	if (!cJSON_IsObject(tol)) {
		format_value(tol, got, sizeof got);
		st = input_error(err, name, p,
				 "expected an object {\"atol\": a, "
				 "\"rtol\": r}, got %s",
				 got);
		goto out;
	}
	cJSON_ArrayForEach(item, tol)
	{
		const char *key = item->string ? item->string : "";

		tps_json_path_push_key(p, key);
		if (strcmp(key, "atol") != 0 && strcmp(key, "rtol") != 0) {
			st = input_error(err, name, p,
					 "unknown tolerance key (expected "
					 "\"atol\" or \"rtol\")");
			goto out;
		}
		if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble) ||
		    item->valuedouble < 0) {
			format_value(item, got, sizeof got);
			st = input_error(err, name, p,
					 "expected a finite number >= 0, "
					 "got %s",
					 got);
			goto out;
		}
		tps_json_path_pop(p, saved);
	}
out:
	tps_json_path_pop(p, saved);
	return st;
}

static enum tps_status validate_event(const cJSON *ev, struct tps_json_path *p,
				      const char *name, struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	size_t saved = p->len;
	const cJSON *match;
	const cJSON *tol;
	char got[CHECK_VALUE_MAX];

	if (!cJSON_IsObject(ev)) {
		format_value(ev, got, sizeof got);
		st = input_error(err, name, p,
				 "expected an event object, got %s", got);
		goto out;
	}
	match = cJSON_GetObjectItemCaseSensitive(ev, "match");
	if (match && !cJSON_IsObject(match)) {
		tps_json_path_push_key(p, "match");
		format_value(match, got, sizeof got);
		st = input_error(err, name, p,
				 "expected an object of keys to match, "
				 "got %s",
				 got);
		goto out;
	}
	tol = cJSON_GetObjectItemCaseSensitive(ev, "tolerance");
	if (tol) {
		tps_json_path_push_key(p, "tolerance");
		st = validate_tolerance(tol, p, name, err);
	}
out:
	tps_json_path_pop(p, saved);
	return st;
}

static enum tps_status validate_fixture(const cJSON *fixture, const char *name,
					struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	struct tps_json_path p;
	const cJSON *tol;
	const cJSON *events;
	const cJSON *ev;
	size_t i = 0;
	char got[CHECK_VALUE_MAX];

	tps_json_path_init(&p);
	if (!cJSON_IsObject(fixture)) {
		format_value(fixture, got, sizeof got);
		st = input_error(err, name, &p,
				 "expected an object (a partial trace), "
				 "got %s",
				 got);
		goto out;
	}
	if (tps_json_file_kind(fixture, &p) == TPS_FILE_CONFIG) {
		/* Every key of a config would be "missing in trace": a
		 * mismatch, exit 1, where the mistake is the file. */
		st = input_error(err, name, &p,
				 "expected a fixture (a partial trace), got a "
				 "tpsim config: tpsim check TRACE FIXTURE "
				 "compares a trace with a fixture, and tpsim "
				 "run CONFIG -o TRACE makes the trace");
		goto out;
	}
	tps_json_path_init(&p);
	tol = cJSON_GetObjectItemCaseSensitive(fixture, "tolerance");
	if (tol) {
		tps_json_path_push_key(&p, "tolerance");
		st = validate_tolerance(tol, &p, name, err);
		if (st != TPS_OK) {
			goto out;
		}
		tps_json_path_init(&p);
	}
	events = cJSON_GetObjectItemCaseSensitive(fixture, "events");
	if (!events) {
		goto out;
	}
	tps_json_path_push_key(&p, "events");
	if (!cJSON_IsArray(events)) {
		format_value(events, got, sizeof got);
		st = input_error(err, name, &p,
				 "expected an array of events, got %s", got);
		goto out;
	}
	cJSON_ArrayForEach(ev, events)
	{
		size_t saved = p.len;

		tps_json_path_push_index(&p, i);
		st = validate_event(ev, &p, name, err);
		if (st != TPS_OK) {
			goto out;
		}
		tps_json_path_pop(&p, saved);
		i++;
	}
out:
	return st;
}

enum tps_status tps_check_fixture(const cJSON *trace, const char *trace_name,
				  const cJSON *fixture,
				  const char *fixture_name,
				  tps_check_report_fn report, void *ctx,
				  size_t *mismatches, struct tps_error *err)
{
	enum tps_status st;
	struct checker c;
	struct check_tol tol = {0.0, 0.0};
	char line[64];

	assert(trace && trace_name && fixture && fixture_name && mismatches);
	st = tps_check_is_trace(trace, trace_name, err);
	if (st != TPS_OK) {
		goto out;
	}
	st = validate_fixture(fixture, fixture_name, err);
	if (st != TPS_OK) {
		goto out;
	}
	memset(&c, 0, sizeof c);
	c.report = report;
	c.ctx = ctx;
	tps_json_path_init(&c.path);
	apply_tolerance(cJSON_GetObjectItemCaseSensitive(fixture, "tolerance"),
			&tol);
	compare_members(&c, fixture, trace, &tol, CHECK_SCOPE_TOP);
	if (c.count > TPS_CHECK_MAX_LINES && report) {
		size_t more = c.count - TPS_CHECK_MAX_LINES;
		struct tps_check_mismatch m = {0};

		snprintf(line, sizeof line, "... %zu more mismatch%s", more,
			 more == 1 ? "" : "es");
		m.seq = -1;
		m.what = line;
		m.line = line;
		report(ctx, &m);
	}
	*mismatches = c.count;
out:
	return st;
}
