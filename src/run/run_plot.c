/*
 * tpsim plot (run_plot.h): loss curves and the band reordering allows,
 * as an SVG whose bytes depend on the traces alone.
 */
#include "run_plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "run.h"
#include "run_diff.h"
#include "svg.h"

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* ---- reading ----------------------------------------------------------- */

/* The losses of a band's bound pass: the reference's value and bound of
 * "loss" at each step. */
struct loss_collector {
	struct tps_plot_band *band;
};

static enum tps_status collect_loss(void *ctx, const struct tps_bound_event *ev,
				    struct tps_error *err)
{
	struct tps_plot_band *b = ((struct loss_collector *)ctx)->band;
	(void)err;
	if (ev->phase != TPS_PHASE_FORWARD || strcmp(ev->tensor, "loss") != 0 ||
	    ev->step < 0 || ev->step >= b->steps) {
		return TPS_OK;
	}
	b->center[ev->step] = (double)ev->value->data[0];
	if (tps_bound_is_none(ev->bound)) {
		b->half[ev->step] = -1.0;
		if (!b->none[0]) {
			snprintf(b->none, sizeof b->none, "%s",
				 ev->bound->none);
		}
	} else {
		b->half[ev->step] = 2.0 * (double)ev->bound->e.data[0];
	}
	return TPS_OK;
}

/* What groups traces under one band: the config's "dtype" as it is
 * (compact JSON; "" when it has none: every role float32). */
static void dtype_key(const cJSON *trace, char *buf, size_t size)
{
	const cJSON *dtype = member(member(trace, "config"), "dtype");
	char *text = dtype ? cJSON_PrintUnformatted(dtype) : NULL;
	snprintf(buf, size, "%s", text ? text : "");
	free(text);
}

static void free_plot(struct tps_plot *p)
{
	for (int i = 0; i < p->n_curves; i++) {
		free(p->curves[i].loss);
	}
	for (int i = 0; i < p->n_bands; i++) {
		free(p->bands[i].center);
		free(p->bands[i].half);
	}
	memset(p, 0, sizeof *p);
}

void tps_plot_free(struct tps_plot *p)
{
	if (p) {
		free_plot(p);
	}
}

static enum tps_status read_curve(struct tps_plot_curve *c, const cJSON *trace,
				  const char *name, const char *label,
				  struct tps_error *err)
{
	const cJSON *config = member(trace, "config");
	const cJSON *mode = member(config, "mode");
	const cJSON *compute = member(config, "compute");
	const cJSON *loss = member(member(trace, "result"), "loss"), *v;
	int s = 0;
	if (!cJSON_IsString(mode) ||
	    strcmp(mode->valuestring, "training") != 0) {
		return tps_error_set_at(err, TPS_ERR_INPUT, name,
					"/config/mode",
					"expected a training trace (tpsim plot "
					"draws the loss per step), got an "
					"inference trace");
	}
	if (cJSON_IsString(compute) &&
	    strcmp(compute->valuestring, "symbolic") == 0) {
		return tps_error_set_at(err, TPS_ERR_INPUT, name,
					"/config/compute",
					"expected a trace with values, got a "
					"symbolic one (its run had no loss)");
	}
	if (!cJSON_IsArray(loss) || !loss->child) {
		return tps_error_set_at(err, TPS_ERR_INPUT, name,
					"/result/loss",
					"expected the loss at each step, got "
					"none (the run stopped before its "
					"first loss)");
	}
	c->steps = cJSON_GetArraySize(loss);
	c->loss = calloc((size_t)c->steps, sizeof *c->loss);
	if (!c->loss) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	cJSON_ArrayForEach(v, loss)
	{
		c->loss[s++] = v->valuedouble; /* validated: finite */
	}
	if (label) {
		snprintf(c->label, sizeof c->label, "%s", label);
	} else {
		tps_diff_trace_label(trace, true, c->label, sizeof c->label);
	}
	c->outside = -1;
	return TPS_OK;
}

static enum tps_status make_band(struct tps_plot_band *b, const cJSON *trace,
				 const char *name, int threads,
				 struct tps_error *err)
{
	struct tps_run_spec spec = {0};
	struct loss_collector c = {b};
	struct tps_bound_sink sink = {collect_loss, &c};
	enum tps_status st = tps_run_trace_spec(trace, name, false, &spec, err);
	if (st != TPS_OK) {
		return st;
	}
	b->steps = spec.model.steps;
	b->center = calloc((size_t)b->steps, sizeof *b->center);
	b->half = calloc((size_t)b->steps, sizeof *b->half);
	if (!b->center || !b->half) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int s = 0; s < b->steps && st == TPS_OK; s++) {
		b->half[s] = -1.0;
	}
	if (st == TPS_OK) {
		st = tps_run_bound_pass(&spec, threads, sink, NULL, err);
		if (st != TPS_OK) {
			char esc[256];
			tps_error_prefix(err,
					 "%s: the bound pass of its config",
					 tps_json_escape_for_message(
						 name, esc, sizeof esc));
		}
	}
	tps_run_spec_free(&spec);
	return st;
}

enum tps_status tps_plot_build(struct tps_plot *p, const cJSON *const *traces,
			       const char *const *names,
			       const char *const *labels, int n, int threads,
			       struct tps_error *err)
{
	struct tps_plot q;
	char keys[TPS_PLOT_MAX_TRACES][256];
	enum tps_status st = TPS_OK;

	memset(&q, 0, sizeof q);
	if (n < 1 || n > TPS_PLOT_MAX_TRACES) {
		return tps_error_set(err, TPS_ERR_USAGE,
				     "plot: expected 1 to %d traces, got %d",
				     TPS_PLOT_MAX_TRACES, n);
	}
	for (int i = 0; i < n && st == TPS_OK; i++) {
		struct tps_plot_curve *c = &q.curves[i];
		int b = 0;
		st = read_curve(c, traces[i], names[i],
				labels ? labels[i] : NULL, err);
		if (st != TPS_OK) {
			break;
		}
		q.n_curves++;
		dtype_key(traces[i], keys[i], sizeof keys[i]);
		while (b < q.n_bands &&
		       strcmp(keys[q.bands[b].curve], keys[i]) != 0) {
			b++;
		}
		if (b == q.n_bands) {
			struct tps_plot_band *band = &q.bands[b];
			tps_diff_dtype_label(traces[i], band->dtype,
					     sizeof band->dtype);
			band->curve = i;
			q.n_bands++;
			st = make_band(band, traces[i], names[i], threads, err);
		}
		c->band = b;
	}
	if (st != TPS_OK) {
		free_plot(&q);
		return st;
	}
	for (int i = 0; i < q.n_curves; i++) {
		struct tps_plot_curve *c = &q.curves[i];
		const struct tps_plot_band *b = &q.bands[c->band];
		for (int s = 0; s < c->steps && s < b->steps; s++) {
			if (b->half[s] >= 0.0 &&
			    fabs(c->loss[s] - b->center[s]) > b->half[s]) {
				c->outside = s;
				break;
			}
		}
	}
	*p = q;
	return TPS_OK;
}

/* ---- numbers for people and for the SVG -------------------------------- */

/* A pixel coordinate in whole tenths: "123.4", "-0.5". */
static void put_px(FILE *out, double v)
{
	long long t = llround(v * 10.0);
	long long a = t < 0 ? -t : t;
	fprintf(out, "%s%lld.%lld", t < 0 ? "-" : "", a / 10, a % 10);
}

/* m x 10^k as people write it: "250", "0.0025", "12.5", "2.5e-06". */
static void format_scaled(long long m, int k, char *buf, size_t size)
{
	char digits[32];
	bool neg = m < 0;
	int len;
	if (m == 0) {
		snprintf(buf, size, "0");
		return;
	}
	m = neg ? -m : m;
	while (m % 10 == 0) {
		m /= 10;
		k++;
	}
	len = snprintf(digits, sizeof digits, "%lld", m);
	if (k >= 0 && len + k <= 7) {
		snprintf(buf, size, "%s%s%.*s", neg ? "-" : "", digits, k,
			 "0000000");
	} else if (k < 0 && -k < len) {
		snprintf(buf, size, "%s%.*s.%s", neg ? "-" : "", len + k,
			 digits, digits + len + k);
	} else if (k < 0 && -k - len <= 2) {
		snprintf(buf, size, "%s0.%.*s%s", neg ? "-" : "", -k - len,
			 "00", digits);
	} else {
		int e = k + len - 1;
		snprintf(buf, size, "%s%c%s%s%se%c%02d", neg ? "-" : "",
			 digits[0], len > 1 ? "." : "", digits + 1, "",
			 e < 0 ? '-' : '+', e < 0 ? -e : e);
	}
}

/* A tick spacing of 1, 2 or 5 times a power of ten, about range / 5:
 * *mant and *exp say which, and the spacing is returned. Basic
 * arithmetic only, so every build gets the same ticks. */
static double nice_step(double range, int *mant, int *exp)
{
	double raw = range / 5.0, p = 1.0;
	int k = 0;
	if (!(raw > 0.0)) {
		raw = 1.0;
	}
	while (p * 10.0 <= raw) {
		p *= 10.0;
		k++;
	}
	while (p > raw) {
		p /= 10.0;
		k--;
	}
	*exp = k;
	if (raw / p < 1.5) {
		*mant = 1;
	} else if (raw / p < 3.5) {
		*mant = 2;
	} else if (raw / p < 7.5) {
		*mant = 5;
	} else {
		*mant = 1;
		*exp = k + 1;
		return p * 10.0;
	}
	return p * *mant;
}

/*
 * log10(x) for x > 0 from basic arithmetic alone, so that every build and
 * libm places the log panel's points alike: x = m 2^e exactly (frexp),
 * ln m = 2 atanh((m - 1) / (m + 1)) by its series (|z| <= 1/3: 24 terms
 * reach double precision).
 */
static double det_log10(double x)
{
	int e;
	double m = frexp(x, &e), z = (m - 1.0) / (m + 1.0), z2 = z * z;
	double term = z, sum = 0.0;
	for (int k = 0; k < 24; k++) {
		sum += term / (double)(2 * k + 1);
		term *= z2;
	}
	return (2.0 * sum + (double)e * 0.69314718055994530942) /
	       2.30258509299404568402;
}

/* ---- drawing ----------------------------------------------------------- */

#define PLOT_LEFT   96
#define PLOT_RIGHT  24
#define PLOT_TOP1   56
#define PLOT_H1	    220
#define PLOT_TOP2   (PLOT_TOP1 + PLOT_H1 + 64)
#define PLOT_H2	    200
#define PLOT_LEGEND (PLOT_TOP2 + PLOT_H2 + 60)
#define PLOT_LINE_H 20
#define PLOT_MIN_W  760
/* The log panel spans at most this many decades below its top. */
#define PLOT_DECADES 12

static const char *const curve_colors[] = {
	"#0072b2", "#d55e00", "#009e73", "#cc79a7",
	"#e69f00", "#56b4e9", "#000000", "#999999",
};
static const char *const curve_dashes[] = {"", "8 4", "3 3", "10 3 2 3"};
static const char *const band_colors[] = {"#bdbdbd", "#f6c89f", "#b9dcf2",
					  "#c7e9c0"};
#define N_COLORS (sizeof curve_colors / sizeof curve_colors[0])
#define N_DASHES (sizeof curve_dashes / sizeof curve_dashes[0])
#define N_BANDS	 (sizeof band_colors / sizeof band_colors[0])

/*
 * One panel: the loss itself (linear), or the gap, |value - the first
 * band's reference loss| on a log scale from 10^lo to 10^hi (a gap
 * below, 0 included, lies on the bottom edge).
 */
struct axes {
	bool gap;
	const struct tps_plot_band *ref; /* gap: what it is measured from */
	double x0, x1;			 /* steps */
	double lo, hi;			 /* values, or decades */
	double left, width, top, height;
};

static double px_x(const struct axes *a, double step)
{
	return a->left + (step - a->x0) / (a->x1 - a->x0) * a->width;
}

/* The panel's y of a value (gap: of a gap). */
static double px_y(const struct axes *a, double v)
{
	if (a->gap) {
		double l = v > 0.0 ? det_log10(v) : a->lo;
		l = l < a->lo ? a->lo : l;
		return a->top + (a->hi - l) / (a->hi - a->lo) * a->height;
	}
	/* Clipped by the panel anyway: a band that outgrows every loss
	 * stops a panel's height past its edges (not 1e16 pixels). */
	return a->top + fmin(fmax((a->hi - v) / (a->hi - a->lo), -1.0), 2.0) *
				 a->height;
}

/* What a panel draws of a value at step s: itself, or its gap. */
static double value_at(const struct axes *a, double v, int s)
{
	if (!a->gap) {
		return v;
	}
	return fabs(v - (s < a->ref->steps ? a->ref->center[s] : v));
}

static void put_tick(FILE *out, const struct axes *a, double y,
		     const char *label)
{
	fprintf(out, "<line x1=\"%d\" x2=\"%d\" y1=\"", (int)a->left,
		(int)(a->left + a->width));
	put_px(out, y);
	fputs("\" y2=\"", out);
	put_px(out, y);
	fputs("\" stroke=\"#e0e0e0\"/>\n", out);
	fprintf(out, "<text x=\"%d\" y=\"", (int)a->left - 6);
	put_px(out, y + 4.0);
	fputs("\" text-anchor=\"end\">", out);
	tps_svg_put_xml(out, label);
	fputs("</text>\n", out);
}

/* The frame, the ticks and their labels, the grid. */
static void draw_axes(FILE *out, const struct axes *a, const char *clip)
{
	int xmant, xexp;
	double xstep = nice_step(a->x1 - a->x0, &xmant, &xexp);
	char label[48];

	fprintf(out, "<clipPath id=\"%s\"><rect x=\"%d\" y=\"", clip,
		(int)a->left);
	put_px(out, a->top);
	fprintf(out, "\" width=\"%d\" height=\"", (int)a->width);
	put_px(out, a->height);
	fputs("\"/></clipPath>\n", out);
	if (a->gap) {
		/* A tick a decade, or every second or third one. */
		int every = a->hi - a->lo > 8 ? 3 : a->hi - a->lo > 4 ? 2 : 1;
		for (int k = (int)a->hi; k >= (int)a->lo; k -= every) {
			format_scaled(1, k, label, sizeof label);
			put_tick(out, a,
				 a->top + (a->hi - k) / (a->hi - a->lo) *
						  a->height,
				 label);
		}
	} else {
		int mant, exp;
		double step = nice_step(a->hi - a->lo, &mant, &exp);
		double first = ceil(a->lo / step), last = floor(a->hi / step);
		for (double m = first; m <= last; m += 1.0) {
			format_scaled((long long)m * mant, exp, label,
				      sizeof label);
			put_tick(out, a, px_y(a, m * step), label);
		}
	}
	if (xstep < 1.0) {
		xstep = 1.0;
		xmant = 1;
		xexp = 0;
	}
	for (double m = ceil(a->x0 / xstep); m * xstep <= a->x1; m += 1.0) {
		double x = px_x(a, m * xstep);
		fputs("<line x1=\"", out);
		put_px(out, x);
		fputs("\" x2=\"", out);
		put_px(out, x);
		fprintf(out, "\" y1=\"%d\" y2=\"%d\" stroke=\"#e0e0e0\"/>\n",
			(int)a->top, (int)(a->top + a->height));
		format_scaled((long long)m * xmant, xexp, label, sizeof label);
		fputs("<text x=\"", out);
		put_px(out, x);
		fprintf(out, "\" y=\"%d\" text-anchor=\"middle\">",
			(int)(a->top + a->height) + 16);
		tps_svg_put_xml(out, label);
		fputs("</text>\n", out);
	}
	fprintf(out,
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		"fill=\"none\" stroke=\"#333333\"/>\n",
		(int)a->left, (int)a->top, (int)a->width, (int)a->height);
}

/* The band's edges at step k as the panel draws them: center -+ half, or
 * in the gap panel the gaps of those two edges' range (from 0 when it
 * holds the first reference). */
static void band_edges(const struct axes *a, const struct tps_plot_band *b,
		       int k, double *low, double *high)
{
	double c = b->center[k], h = b->half[k];
	if (!a->gap) {
		*low = c - h;
		*high = c + h;
		return;
	}
	c = value_at(a, c, k);
	*low = c > h ? c - h : 0.0;
	*high = c + h;
}

/* The band as polygons over each run of steps that have a bound. */
static void draw_band(FILE *out, const struct axes *a,
		      const struct tps_plot_band *b, const char *color,
		      const char *clip)
{
	for (int s = 0; s < b->steps;) {
		int e = s;
		double w = 0.0;
		if (b->half[s] < 0.0) {
			s++;
			continue;
		}
		while (e + 1 < b->steps && b->half[e + 1] >= 0.0) {
			e++;
		}
		/* A single step is drawn 6 px wide. */
		w = s == e ? 3.0 : 0.0;
		fprintf(out,
			"<polygon clip-path=\"url(#%s)\" fill=\"%s\" "
			"fill-opacity=\"0.7\" stroke=\"%s\" points=\"",
			clip, color, color);
		for (int k = s; k <= e; k++) {
			double low, high;
			band_edges(a, b, k, &low, &high);
			put_px(out, px_x(a, k) - w);
			fputc(',', out);
			put_px(out, px_y(a, high));
			fputc(' ', out);
			if (w > 0.0) {
				put_px(out, px_x(a, k) + w);
				fputc(',', out);
				put_px(out, px_y(a, high));
				fputc(' ', out);
			}
		}
		for (int k = e; k >= s; k--) {
			double low, high;
			band_edges(a, b, k, &low, &high);
			if (w > 0.0) {
				put_px(out, px_x(a, k) + w);
				fputc(',', out);
				put_px(out, px_y(a, low));
				fputc(' ', out);
			}
			put_px(out, px_x(a, k) - w);
			fputc(',', out);
			put_px(out, px_y(a, low));
			fputc(k > s ? ' ' : '"', out);
		}
		fputs("/>\n", out);
		s = e + 1;
	}
}

static void draw_curve(FILE *out, const struct axes *a,
		       const struct tps_plot_curve *c, int i, const char *clip)
{
	const char *dash = curve_dashes[(size_t)i / N_COLORS % N_DASHES];
	/* Later curves thinner, so that curves on top of each other all
	 * show. */
	int w10 = 30 - 4 * i < 10 ? 10 : 30 - 4 * i;
	fprintf(out,
		"<polyline clip-path=\"url(#%s)\" fill=\"none\" stroke=\"%s\" "
		"stroke-width=\"%d.%d\"%s%s%s points=\"",
		clip, curve_colors[(size_t)i % N_COLORS], w10 / 10, w10 % 10,
		dash[0] ? " stroke-dasharray=\"" : "", dash,
		dash[0] ? "\"" : "");
	for (int s = 0; s < c->steps; s++) {
		put_px(out, px_x(a, s));
		fputc(',', out);
		put_px(out, px_y(a, value_at(a, c->loss[s], s)));
		fputc(s + 1 < c->steps ? ' ' : '"', out);
	}
	fputs("/>\n", out);
	if (c->steps == 1) {
		fputs("<circle r=\"4\" cx=\"", out);
		put_px(out, px_x(a, 0));
		fputs("\" cy=\"", out);
		put_px(out, px_y(a, value_at(a, c->loss[0], 0)));
		fprintf(out, "\" fill=\"%s\"/>\n",
			curve_colors[(size_t)i % N_COLORS]);
	}
}

/* The legend's line of curve i or of band b. */
static void curve_line(const struct tps_plot *p, int i, char *buf, size_t size)
{
	const struct tps_plot_curve *c = &p->curves[i];
	const struct tps_plot_band *b = &p->bands[c->band];
	int judged = 0;
	for (int s = 0; s < c->steps && s < b->steps; s++) {
		judged += b->half[s] >= 0.0;
	}
	if (c->outside >= 0) {
		snprintf(buf, size, "%s: outside the band from step %d",
			 c->label, c->outside);
	} else if (judged < c->steps) {
		snprintf(buf, size,
			 "%s: inside the band at the %d step%s it has a "
			 "bound",
			 c->label, judged, judged == 1 ? "" : "s");
	} else {
		snprintf(buf, size, "%s: inside the band", c->label);
	}
}

static void band_line(const struct tps_plot *p, int b, char *buf, size_t size)
{
	const struct tps_plot_band *band = &p->bands[b];
	int n = snprintf(buf, size,
			 "%s band: the reference loss of %s \u00b1 2e, what "
			 "reordering the sums can explain",
			 band->dtype, p->curves[band->curve].label);
	if (band->none[0] && n > 0 && (size_t)n < size) {
		snprintf(buf + n, size - (size_t)n, " (none at some steps: %s)",
			 band->none);
	}
}

/* The loss panel's range: every curve, 5% spare each side. The band is
 * drawn within it (clipped): its edges can outgrow any loss. */
static void loss_range(const struct tps_plot *p, struct axes *a)
{
	a->lo = INFINITY;
	a->hi = -INFINITY;
	for (int i = 0; i < p->n_curves; i++) {
		for (int s = 0; s < p->curves[i].steps; s++) {
			a->lo = fmin(a->lo, p->curves[i].loss[s]);
			a->hi = fmax(a->hi, p->curves[i].loss[s]);
		}
	}
	if (a->hi - a->lo > 0.0) {
		double pad = (a->hi - a->lo) * 0.05;
		a->lo -= pad;
		a->hi += pad;
	} else {
		double pad = a->hi != 0.0 ? fabs(a->hi) * 0.1 : 1.0;
		a->lo -= pad;
		a->hi += pad;
	}
}

/* The gap panel's decades: from the smallest gap or band edge above 0 up
 * to the largest gap, or the bands' top but no more than 3 decades over
 * the largest gap (a bound can outgrow every value: it is clipped), in
 * whole decades, at most PLOT_DECADES. */
static void gap_range(const struct tps_plot *p, struct axes *a)
{
	double small = INFINITY, gaps = 0.0, bands = 0.0, large;
	for (int i = 0; i < p->n_curves; i++) {
		for (int s = 0; s < p->curves[i].steps; s++) {
			double g = value_at(a, p->curves[i].loss[s], s);
			if (g > 0.0) {
				small = fmin(small, g);
				gaps = fmax(gaps, g);
			}
		}
	}
	for (int b = 0; b < p->n_bands; b++) {
		for (int s = 0; s < p->bands[b].steps; s++) {
			double low, high;
			if (p->bands[b].half[s] < 0.0) {
				continue;
			}
			band_edges(a, &p->bands[b], s, &low, &high);
			if (high > 0.0) {
				small = fmin(small, high);
				bands = fmax(bands, high);
			}
		}
	}
	large = gaps > 0.0 ? fmax(gaps, fmin(bands, 1000.0 * gaps)) : bands;
	if (!(large > 0.0)) {
		a->lo = -9.0;
		a->hi = -8.0;
		return;
	}
	a->hi = ceil(det_log10(large));
	a->lo = floor(det_log10(small));
	if (a->lo >= a->hi) {
		a->lo = a->hi - 1.0;
	}
	if (a->hi - a->lo > PLOT_DECADES) {
		a->lo = a->hi - PLOT_DECADES;
	}
}

static void widen(int *width, const char *line)
{
	int64_t w = 60 + tps_svg_text_width(line, TPS_SVG_CHAR_W);
	if (w > *width) {
		*width = (int)w;
	}
}

void tps_plot_write_svg(FILE *out, const struct tps_plot *p)
{
	struct axes top = {0}, bottom = {0};
	const struct tps_plot_band *ref = &p->bands[0];
	char line[512];
	int steps = 1, width = PLOT_MIN_W, height;

	for (int i = 0; i < p->n_curves; i++) {
		steps = p->curves[i].steps > steps ? p->curves[i].steps : steps;
		curve_line(p, i, line, sizeof line);
		widen(&width, line);
	}
	for (int b = 0; b < p->n_bands; b++) {
		band_line(p, b, line, sizeof line);
		widen(&width, line);
	}
	height = PLOT_LEGEND + PLOT_LINE_H * (p->n_curves + p->n_bands + 1) + 8;
	top.left = bottom.left = PLOT_LEFT;
	top.width = bottom.width = width - PLOT_LEFT - PLOT_RIGHT;
	top.x0 = bottom.x0 = steps > 1 ? 0.0 : -0.5;
	top.x1 = bottom.x1 = steps > 1 ? (double)(steps - 1) : 0.5;
	top.top = PLOT_TOP1;
	top.height = PLOT_H1;
	bottom.top = PLOT_TOP2;
	bottom.height = PLOT_H2;
	bottom.gap = true;
	bottom.ref = ref;
	loss_range(p, &top);
	gap_range(p, &bottom);

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"monospace\" font-size=\"12\">\n"
		"<title>Loss per step</title>\n"
		"<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
		width, height, width, height, width, height);
	tps_svg_text(out, 16, 24, " font-size=\"14\" font-weight=\"bold\"",
		     "Loss per step");
	tps_svg_text(out, PLOT_LEFT, PLOT_TOP1 - 10, "", "loss");
	snprintf(line, sizeof line,
		 "|loss - the reference loss of %s|, log scale",
		 p->curves[ref->curve].label);
	tps_svg_text(out, PLOT_LEFT, PLOT_TOP2 - 10, "", line);
	tps_svg_text(out, PLOT_LEFT + (int)bottom.width / 2,
		     PLOT_TOP2 + PLOT_H2 + 36, " text-anchor=\"middle\"",
		     "step");
	draw_axes(out, &top, "loss");
	draw_axes(out, &bottom, "gap");
	for (int b = 0; b < p->n_bands; b++) {
		const char *color = band_colors[(size_t)b % N_BANDS];
		draw_band(out, &top, &p->bands[b], color, "loss");
		draw_band(out, &bottom, &p->bands[b], color, "gap");
	}
	for (int i = 0; i < p->n_curves; i++) {
		draw_curve(out, &top, &p->curves[i], i, "loss");
		draw_curve(out, &bottom, &p->curves[i], i, "gap");
	}
	for (int i = 0; i < p->n_curves; i++) {
		int y = PLOT_LEGEND + PLOT_LINE_H * i;
		const char *dash =
			curve_dashes[(size_t)i / N_COLORS % N_DASHES];
		fprintf(out,
			"<line x1=\"16\" x2=\"48\" y1=\"%d\" y2=\"%d\" "
			"stroke=\"%s\" stroke-width=\"3\"%s%s%s/>\n",
			y - 4, y - 4, curve_colors[(size_t)i % N_COLORS],
			dash[0] ? " stroke-dasharray=\"" : "", dash,
			dash[0] ? "\"" : "");
		curve_line(p, i, line, sizeof line);
		tps_svg_text(out, 56, y, "", line);
	}
	for (int b = 0; b < p->n_bands; b++) {
		int y = PLOT_LEGEND + PLOT_LINE_H * (p->n_curves + b);
		fprintf(out,
			"<rect x=\"16\" y=\"%d\" width=\"32\" height=\"10\" "
			"fill=\"%s\" fill-opacity=\"0.7\"/>\n",
			y - 9, band_colors[(size_t)b % N_BANDS]);
		band_line(p, b, line, sizeof line);
		tps_svg_text(out, 56, y, "", line);
	}
	tps_svg_text(out, 16,
		     PLOT_LEGEND + PLOT_LINE_H * (p->n_curves + p->n_bands), "",
		     "In the log panel a gap of 0 (the same bits) lies on the "
		     "bottom edge.");
	fputs("</svg>\n", out);
}
