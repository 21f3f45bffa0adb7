/* The arithmetic every error-bound rule shares (bound.h). */
#include "bound.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

double tps_bound_gamma(int64_t n, double u)
{
	double g;
	if (n <= 0) {
		return 0.0;
	}
	/* expm1(n log1p(u)) is (1 + u)^n - 1 to a few double ulps; the
	 * relative 2^-40 on top keeps it above the exact value. */
	g = expm1((double)n * log1p(u));
	return g * (1.0 + 0x1p-40);
}

float tps_bound_up(double v)
{
	float f;
	if (!(v == v) || v > FLT_MAX) {
		return INFINITY;
	}
	f = (float)v;
	if ((double)f < v) {
		f = nextafterf(f, INFINITY);
	}
	return f;
}

/* *b = zeros of shape, made by init (owned or read-only). */
static enum tps_status
zero_by(struct tps_bound *b, const struct tps_shape *shape,
	enum tps_status (*init)(struct tps_tensor *, const struct tps_shape *,
				struct tps_error *),
	struct tps_error *err)
{
	struct tps_tensor e;
	enum tps_status st = init(&e, shape, err);
	if (st != TPS_OK) {
		return st;
	}
	b->e = e;
	b->none[0] = '\0';
	return TPS_OK;
}

enum tps_status tps_bound_zero(struct tps_bound *b,
			       const struct tps_shape *shape,
			       struct tps_error *err)
{
	return zero_by(b, shape, tps_tensor_init, err);
}

enum tps_status tps_bound_zero_view(struct tps_bound *b,
				    const struct tps_shape *shape,
				    struct tps_error *err)
{
	return zero_by(b, shape, tps_tensor_init_zero_view, err);
}

void tps_bound_set_none(struct tps_bound *b, const char *fmt, ...)
{
	va_list ap;
	char reason[TPS_BOUND_REASON_MAX];
	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	tps_tensor_free(&b->e);
	/* A reason of "" would read as a bound. */
	snprintf(b->none, sizeof b->none, "%s",
		 reason[0] ? reason : "no bound");
}

void tps_bound_none_like(struct tps_bound *b, const struct tps_bound *a)
{
	char reason[TPS_BOUND_REASON_MAX];
	memcpy(reason, a->none, sizeof reason);
	tps_bound_set_none(b, "%s", reason);
}

enum tps_status tps_bound_copy(struct tps_bound *dst,
			       const struct tps_bound *src,
			       struct tps_error *err)
{
	struct tps_bound b = {0};
	memcpy(b.none, src->none, sizeof b.none);
	if (!src->none[0]) {
		enum tps_status st = tps_tensor_copy(&b.e, &src->e, err);
		if (st != TPS_OK) {
			return st;
		}
	}
	*dst = b;
	return TPS_OK;
}

void tps_bound_move(struct tps_bound *dst, struct tps_bound *src)
{
	tps_tensor_move(&dst->e, &src->e);
	memcpy(dst->none, src->none, sizeof dst->none);
	src->none[0] = '\0';
}

void tps_bound_free(struct tps_bound *b)
{
	if (!b) {
		return;
	}
	tps_tensor_free(&b->e);
	b->none[0] = '\0';
}

bool tps_bound_settle(struct tps_bound *b, const char *what)
{
	int64_t n = tps_tensor_numel(&b->e);
	if (tps_bound_is_none(b) || b->e.meta) {
		return !tps_bound_is_none(b);
	}
	for (int64_t i = 0; i < n; i++) {
		if (!(b->e.data[i] <= TPS_BOUND_MAX)) {
			tps_bound_set_none(b,
					   "%s: its error bound grew past "
					   "1e30",
					   what);
			return false;
		}
	}
	return true;
}

bool tps_bound_is_none(const struct tps_bound *b)
{
	return b->none[0] != '\0';
}

bool tps_bound_is_zero(const struct tps_bound *b)
{
	int64_t n = tps_tensor_numel(&b->e);
	if (tps_bound_is_none(b) || b->e.meta) {
		return false;
	}
	if (b->e.storage == TPS_STORAGE_ZEROS) {
		return true; /* read-only zeros: no need to look */
	}
	for (int64_t i = 0; i < n; i++) {
		if (b->e.data[i] != 0.0f) {
			return false;
		}
	}
	return true;
}

const struct tps_bound *tps_bound_first_none(const struct tps_bound *const *b,
					     int n)
{
	for (int i = 0; i < n; i++) {
		if (b[i] && tps_bound_is_none(b[i])) {
			return b[i];
		}
	}
	return NULL;
}

bool tps_tensor_integral(const struct tps_tensor *t)
{
	int64_t n = tps_tensor_numel(t);
	if (t->meta) {
		return false;
	}
	for (int64_t i = 0; i < n; i++) {
		float v = t->data[i];
		if (!(fabsf(v) < (float)TPS_BOUND_EXACT_LIMIT) ||
		    v != truncf(v)) {
			return false;
		}
	}
	return true;
}

enum tps_status tps_bound_magnitude(struct tps_tensor *out,
				    const struct tps_tensor *t,
				    const struct tps_tensor *e, float k,
				    struct tps_error *err)
{
	return tps_bound_combine(out, 1.0f, t, k, e, err);
}

enum tps_status tps_bound_combine(struct tps_tensor *out, float a,
				  const struct tps_tensor *t, float k,
				  const struct tps_tensor *e,
				  struct tps_error *err)
{
	struct tps_tensor r;
	int64_t n = tps_tensor_numel(t);
	enum tps_status st = tps_tensor_init(&r, &t->shape, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t i = 0; i < n; i++) {
		float v = a * fabsf(t->data[i]);
		r.data[i] = e ? v + k * e->data[i] : v;
	}
	*out = r;
	return TPS_OK;
}

void tps_bound_inflate(struct tps_bound *b, int64_t n, double u)
{
	float f = tps_bound_up(1.0 + 2.0 * tps_bound_gamma(n + 1, u));
	int64_t count = tps_tensor_numel(&b->e);
	if (tps_bound_is_none(b) || b->e.meta) {
		return;
	}
	for (int64_t i = 0; i < count; i++) {
		/* One more rounding of the product: up. */
		b->e.data[i] = tps_bound_up((double)b->e.data[i] * (double)f);
	}
}
