/* tpsim comm's points and their tables (run_comm.h). */
#include "run_comm.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "jsonio.h"
#include "numfmt.h"
#include "trace.h"

const struct tps_comm_zero_setting tps_comm_zero_settings[] = {
	[TPS_COMM_ZERO_DDP] = {"ddp", "DDP", {0, true, false}},
	[TPS_COMM_ZERO_STAGE1] = {"1", "stage 1", {1, true, false}},
	[TPS_COMM_ZERO_DISTRIBUTED_OPTIMIZER] = {"distributed_optimizer",
						 "distributed optimizer",
						 {1, true, true}},
	[TPS_COMM_ZERO_STAGE2] = {"2", "stage 2", {2, true, false}},
	[TPS_COMM_ZERO_STAGE3] = {"3", "stage 3 (FSDP)", {3, true, false}},
};
_Static_assert(sizeof tps_comm_zero_settings /
			       sizeof tps_comm_zero_settings[0] ==
		       TPS_COMM_ZERO_COUNT,
	       "a --zero setting per enum tps_comm_zero member");

/* ---- a text table, aligned ------------------------------------------ */

#define CELL 320 /* fits a module path (128) and a group name (256) */

struct table {
	int cols, rows, cap;
	char (*cells)[CELL]; /* rows * cols */
	const char *right;   /* per column: 'r' right-aligned, else left */
};

static bool table_row(struct table *t)
{
	if (t->rows == t->cap) {
		int cap = t->cap ? 2 * t->cap : 16;
		char(*grown)[CELL] =
			realloc(t->cells, (size_t)cap * (size_t)t->cols * CELL);
		if (!grown) {
			return false;
		}
		t->cells = grown;
		t->cap = cap;
	}
	memset(t->cells + (size_t)t->rows * (size_t)t->cols, 0,
	       (size_t)t->cols * CELL);
	t->rows++;
	return true;
}

static char *cell(const struct table *t, int row, int col)
{
	return t->cells[(size_t)row * (size_t)t->cols + (size_t)col];
}

static void table_print(FILE *out, const struct table *t)
{
	int width[16] = {0};
	for (int r = 0; r < t->rows; r++) {
		for (int c = 0; c < t->cols; c++) {
			int w = (int)strlen(cell(t, r, c));
			width[c] = w > width[c] ? w : width[c];
		}
	}
	for (int r = 0; r < t->rows; r++) {
		char line[16 * (CELL + 2) + 1];
		int used = 0;
		for (int c = 0; c < t->cols; c++) {
			const char *s = cell(t, r, c);
			used += snprintf(
				line + used, sizeof line - (size_t)used,
				t->right[c] == 'r' ? "%s%*s" : "%s%-*s",
				c ? "  " : "", width[c], s);
		}
		/* No trailing blanks: left-aligned last cells pad. */
		while (used > 0 && line[used - 1] == ' ') {
			line[--used] = '\0';
		}
		fprintf(out, "%s\n", line);
	}
}

/* ---- numbers -------------------------------------------------------- */

/* Seconds as "2.56 ns", "6.1 us", "0.213 ms", "1.2 s": three significant
 * digits. */
static void format_time(double seconds, char *buf, size_t size)
{
	if (seconds < 1e-6) {
		snprintf(buf, size, "%.3g ns", seconds * 1e9);
	} else if (seconds < 1e-3) {
		snprintf(buf, size, "%.3g us", seconds * 1e6);
	} else if (seconds < 1.0) {
		snprintf(buf, size, "%.3g ms", seconds * 1e3);
	} else {
		snprintf(buf, size, "%.3g s", seconds);
	}
}

/* The training / inference ratio of bytes, or "-" when inference moves
 * nothing. */
static void format_ratio(const struct tps_cost_report *r, char *buf,
			 size_t size)
{
	int64_t inf = r->total[TPS_COST_INFERENCE].bytes_per_rank;
	int64_t train = r->total[TPS_COST_TRAINING].bytes_per_rank;
	if (inf == 0) {
		snprintf(buf, size, "-");
	} else {
		snprintf(buf, size, "%.3g", (double)train / (double)inf);
	}
}

static void format_var(double v, char *buf)
{
	tps_format_double(v, buf);
}

/* ---- text output ---------------------------------------------------- */

/* Byte figures in the tables are tps_format_bytes's ("1.5 KiB"); --json
 * keeps the exact integers. A cell holds CELL >= TPS_NUMFMT_MAX bytes. */
_Static_assert(CELL >= TPS_NUMFMT_MAX, "a cell holds a formatted size");

static void print_header(FILE *out, const struct tps_comm_point *p)
{
	char group[TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX];
	fprintf(out, "%s", p->config);
	for (int i = 0; i < p->n_vars; i++) {
		char v[TPS_NUMFMT_MAX];
		format_var(p->vars[i].value, v);
		fprintf(out, "%s %s=%s", i ? "" : ":", p->vars[i].name, v);
	}
	fputs("\nmesh ", out);
	for (int i = 0; i < p->mesh.ndim; i++) {
		fprintf(out, "%s%s=%d", i ? " x " : "", p->mesh.dim_names[i],
			p->mesh.shape[i]);
	}
	fprintf(out, " (world %d), tp over \"%s\"", p->mesh.world_size,
		p->mesh.dim_names[p->tp_dim]);
	if (p->dp_mask) {
		fprintf(out, ", dp over \"%s\"",
			tps_mesh_mask_name(&p->mesh, p->dp_mask, group,
					   sizeof group));
	}
	fputc('\n', out);
}

enum tps_status tps_comm_write_point(FILE *out, const struct tps_comm_point *p)
{
	static const char *const head[8] = {
		"phase", "op",	       "module", "mesh_dim",
		"count", "bytes/rank", "count",	 "bytes/rank"};
	struct table t = {8, 0, 0, NULL, "llllrrrr"};
	const struct tps_cost_report *r = &p->report;
	char ratio[32], times[2][3][32];
	enum tps_status st = TPS_OK;

	print_header(out, p);
	if (!table_row(&t) || !table_row(&t)) {
		st = TPS_ERR_NOMEM;
		goto out;
	}
	snprintf(cell(&t, 0, 4), CELL, "inference");
	snprintf(cell(&t, 0, 6), CELL, "training");
	for (int c = 0; c < 8; c++) {
		snprintf(cell(&t, 1, c), CELL, "%s", head[c]);
	}
	for (int i = 0; i < r->n_rows; i++) {
		const struct tps_cost_row *row = &r->rows[i];
		int n = t.rows;
		if (!table_row(&t)) {
			st = TPS_ERR_NOMEM;
			goto out;
		}
		snprintf(cell(&t, n, 0), CELL, "%s",
			 tps_phase_names[row->phase]);
		snprintf(cell(&t, n, 1), CELL, "%s", row->op);
		snprintf(cell(&t, n, 2), CELL, "%s", row->module);
		snprintf(cell(&t, n, 3), CELL, "%s", row->mesh_dim);
		for (int m = 0; m < TPS_COST_MODES; m++) {
			snprintf(cell(&t, n, 4 + 2 * m), CELL, "%lld",
				 (long long)row->mode[m].count);
			tps_format_bytes(row->mode[m].bytes_per_rank,
					 cell(&t, n, 5 + 2 * m));
		}
	}
	if (!table_row(&t)) {
		st = TPS_ERR_NOMEM;
		goto out;
	}
	snprintf(cell(&t, t.rows - 1, 0), CELL, "total");
	for (int m = 0; m < TPS_COST_MODES; m++) {
		snprintf(cell(&t, t.rows - 1, 4 + 2 * m), CELL, "%lld",
			 (long long)r->total[m].count);
		tps_format_bytes(r->total[m].bytes_per_rank,
				 cell(&t, t.rows - 1, 5 + 2 * m));
	}
	table_print(out, &t);
	format_ratio(r, ratio, sizeof ratio);
	fprintf(out, "bytes per rank, training / inference: %s\n", ratio);
	for (int m = 0; m < TPS_COST_MODES; m++) {
		format_time(r->compute_seconds[m] + r->total[m].seconds,
			    times[m][0], sizeof times[m][0]);
		format_time(r->compute_seconds[m], times[m][1],
			    sizeof times[m][1]);
		format_time(r->total[m].seconds, times[m][2],
			    sizeof times[m][2]);
	}
	fprintf(out,
		"step time (alpha-beta, nothing overlaps): inference %s "
		"(compute %s, comm %s), training %s (compute %s, comm %s)\n",
		times[0][0], times[0][1], times[0][2], times[1][0], times[1][1],
		times[1][2]);
	fputs("links:", out);
	for (int i = 0; i < p->mesh.ndim; i++) {
		char bw[TPS_NUMFMT_MAX], lat[TPS_NUMFMT_MAX];
		tps_format_double(p->cost.links[i].gbps, bw);
		tps_format_double(p->cost.links[i].latency_us, lat);
		fprintf(out, "%s %s %s GB/s, %s us", i ? ";" : "",
			p->mesh.dim_names[i], bw, lat);
	}
	{
		char tf[TPS_NUMFMT_MAX];
		tps_format_double(p->cost.tflops, tf);
		fprintf(out, "; device %s TFLOP/s\n", tf);
	}
out:
	free(t.cells);
	return st;
}

/* The names of every variable of the points, in first-seen order. */
static int var_columns(const struct tps_comm_point *points, int n,
		       const char **names)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		for (int v = 0; v < points[i].n_vars; v++) {
			bool seen = false;
			for (int j = 0; j < k; j++) {
				seen = seen ||
				       strcmp(names[j],
					      points[i].vars[v].name) == 0;
			}
			if (!seen && k < TPS_CONFIG_MAX_VARS) {
				names[k++] = points[i].vars[v].name;
			}
		}
	}
	return k;
}

enum tps_status tps_comm_write_sweep(FILE *out,
				     const struct tps_comm_point *points, int n)
{
	const char *names[TPS_CONFIG_MAX_VARS];
	int k = var_columns(points, n, names);
	int z = 0; /* 1: a column for the --zero setting */
	int f;	   /* the first figure's column */
	char align[16];
	struct table t = {0};
	enum tps_status st = TPS_OK;
	int row;

	for (int i = 0; i < n; i++) {
		z = points[i].zero >= 0 ? 1 : z;
	}
	/* config, vars..., zero, inference B, training B, ratio, times: at
	 * most 6 + 10 columns printed; more vars are left out of the
	 * table. */
	k = k > 10 - z ? 10 - z : k;
	f = 1 + k + z;
	t.cols = f + 5;
	memset(align, 'r', sizeof align);
	align[0] = 'l';
	t.right = align;
	if (!table_row(&t)) {
		return TPS_ERR_NOMEM;
	}
	snprintf(cell(&t, 0, 0), CELL, "config");
	for (int v = 0; v < k; v++) {
		snprintf(cell(&t, 0, 1 + v), CELL, "%s", names[v]);
	}
	if (z) {
		snprintf(cell(&t, 0, 1 + k), CELL, "zero");
	}
	snprintf(cell(&t, 0, f), CELL, "inference bytes/rank");
	snprintf(cell(&t, 0, f + 1), CELL, "training bytes/rank");
	snprintf(cell(&t, 0, f + 2), CELL, "ratio");
	snprintf(cell(&t, 0, f + 3), CELL, "inference time");
	snprintf(cell(&t, 0, f + 4), CELL, "training time");
	for (int i = 0; i < n && st == TPS_OK; i++) {
		const struct tps_cost_report *r = &points[i].report;
		if (!table_row(&t)) {
			st = TPS_ERR_NOMEM;
			break;
		}
		row = t.rows - 1;
		snprintf(cell(&t, row, 0), CELL, "%s", points[i].config);
		for (int v = 0; v < k; v++) {
			snprintf(cell(&t, row, 1 + v), CELL, "-");
			for (int j = 0; j < points[i].n_vars; j++) {
				if (strcmp(points[i].vars[j].name, names[v]) ==
				    0) {
					format_var(points[i].vars[j].value,
						   cell(&t, row, 1 + v));
				}
			}
		}
		if (z) {
			snprintf(
				cell(&t, row, 1 + k), CELL, "%s",
				points[i].zero >= 0
					? tps_comm_zero_settings[points[i].zero]
						  .name
					: "-");
		}
		tps_format_bytes(r->total[0].bytes_per_rank, cell(&t, row, f));
		tps_format_bytes(r->total[1].bytes_per_rank,
				 cell(&t, row, f + 1));
		format_ratio(r, cell(&t, row, f + 2), CELL);
		format_time(r->compute_seconds[0] + r->total[0].seconds,
			    cell(&t, row, f + 3), CELL);
		format_time(r->compute_seconds[1] + r->total[1].seconds,
			    cell(&t, row, f + 4), CELL);
	}
	if (st == TPS_OK) {
		fputs("sweep: bytes per rank and step time, inference and "
		      "training\n",
		      out);
		table_print(out, &t);
	}
	free(t.cells);
	return st;
}

/* ---- side by side: one training step, a column per point ------------ */

/* A column's heading: what sets point i apart from the others: its
 * config's file name (without its directory and ".json") when the configs
 * differ, each variable whose value differs, its --zero setting. */
static void column_label(const struct tps_comm_point *points, int n, int i,
			 char *buf, size_t size)
{
	const struct tps_comm_point *p = &points[i];
	bool configs_differ = false;
	size_t used = 0;

	buf[0] = '\0';
	for (int j = 0; j < n; j++) {
		configs_differ = configs_differ ||
				 strcmp(points[j].config, p->config) != 0;
	}
	if (configs_differ || (n == 1 && p->zero < 0)) {
		const char *base = strrchr(p->config, '/');
		size_t len;
		base = base ? base + 1 : p->config;
		len = strlen(base);
		if (len > 5 && strcmp(base + len - 5, ".json") == 0) {
			len -= 5;
		}
		used += (size_t)snprintf(buf, size, "%.*s", (int)len, base);
	}
	for (int v = 0; v < p->n_vars && used < size; v++) {
		bool differs = false;
		for (int j = 0; j < n && !differs; j++) {
			bool found = false;
			for (int w = 0; w < points[j].n_vars; w++) {
				if (strcmp(points[j].vars[w].name,
					   p->vars[v].name) == 0) {
					found = true;
					differs = points[j].vars[w].value !=
						  p->vars[v].value;
				}
			}
			differs = differs || !found;
		}
		if (differs) {
			char value[TPS_NUMFMT_MAX];
			format_var(p->vars[v].value, value);
			used += (size_t)snprintf(buf + used, size - used,
						 "%s%s=%s", used ? " " : "",
						 p->vars[v].name, value);
		}
	}
	if (p->zero >= 0 && used < size) {
		snprintf(buf + used, size - used, "%s%s", used ? " " : "",
			 tps_comm_zero_settings[p->zero].label);
	}
}

/* One (phase, op, group) of the training steps, with each point's bytes
 * per rank (-1: the point has none). */
struct column_row {
	enum tps_phase phase;
	const char *op, *mesh_dim;
	int first_seen;
	int64_t bytes[TPS_COMM_MAX_COLUMNS];
};

/* An op's place: the collectives in comm.h's order, then any other. */
static int op_rank(const char *op)
{
	for (int k = 0; k < TPS_COMM_OP_COUNT; k++) {
		if (strcmp(op, tps_comm_op_name((enum tps_comm_op)k)) == 0) {
			return k;
		}
	}
	return TPS_COMM_OP_COUNT;
}

static int column_row_order(const void *pa, const void *pb)
{
	const struct column_row *a = pa, *b = pb;
	if (a->phase != b->phase) {
		return a->phase < b->phase ? -1 : 1;
	}
	if (op_rank(a->op) != op_rank(b->op)) {
		return op_rank(a->op) < op_rank(b->op) ? -1 : 1;
	}
	return a->first_seen < b->first_seen ? -1 : 1;
}

/* The rows of the points' training collectives by (phase, op, group),
 * summed over modules, in phase, then op, then first-seen order, into
 * *rows (calloc'd; the caller frees). Returns how many, or -1 for want of
 * memory. */
static int column_rows(const struct tps_comm_point *points, int n,
		       struct column_row **rows)
{
	int cap = 0, used = 0;
	struct column_row *r;
	for (int i = 0; i < n; i++) {
		cap += points[i].report.n_rows;
	}
	r = calloc((size_t)(cap ? cap : 1), sizeof *r);
	if (!r) {
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const struct tps_cost_report *rep = &points[i].report;
		for (int k = 0; k < rep->n_rows; k++) {
			const struct tps_cost_row *c = &rep->rows[k];
			const struct tps_cost_figures *f =
				&c->mode[TPS_COST_TRAINING];
			int at = 0;
			if (f->count == 0) {
				continue;
			}
			while (at < used &&
			       !(r[at].phase == c->phase &&
				 strcmp(r[at].op, c->op) == 0 &&
				 strcmp(r[at].mesh_dim, c->mesh_dim) == 0)) {
				at++;
			}
			if (at == used) {
				r[at].phase = c->phase;
				r[at].op = c->op;
				r[at].mesh_dim = c->mesh_dim;
				r[at].first_seen = used;
				for (int j = 0; j < TPS_COMM_MAX_COLUMNS; j++) {
					r[at].bytes[j] = -1;
				}
				used++;
			}
			r[at].bytes[i] =
				(r[at].bytes[i] < 0 ? 0 : r[at].bytes[i]) +
				f->bytes_per_rank;
		}
	}
	qsort(r, (size_t)used, sizeof *r, column_row_order);
	*rows = r;
	return used;
}

/* The held-bytes rows: each a figure of the point's footprint. The
 * gathered parameters' row (GATHERED) is there when a point gathers. */
#define HELD_ROWS 5
#define GATHERED  1
static const char *const held_names[HELD_ROWS] = {
	"parameters", "+ gathered at once", "gradients", "optimizer state",
	"activations at peak"};

static const struct tps_model_figure *
held_figure(const struct tps_comm_point *p, int row)
{
	const struct tps_model_footprint *f = &p->report.footprint;
	const struct tps_model_figure *of[HELD_ROWS] = {
		&f->params, &f->gathered, &f->grads, &f->optimizer_state,
		&f->activations};
	return of[row];
}

enum tps_status
tps_comm_write_columns(FILE *out, const struct tps_comm_point *points, int n)
{
	struct column_row *rows = NULL;
	struct table t = {3 + n, 0, 0, NULL, "lllrrrrrrrrrrrrr"};
	int n_rows;
	bool gathers = false;
	enum tps_status st = TPS_OK;

	if (n < 1 || n > TPS_COMM_MAX_COLUMNS) {
		return TPS_ERR_INPUT; /* the caller's misuse */
	}
	n_rows = column_rows(points, n, &rows);
	if (n_rows < 0) {
		return TPS_ERR_NOMEM;
	}
	/* Each config (at its variables) once, in the order of the
	 * columns. */
	for (int i = 0; i < n; i++) {
		bool said = false;
		for (int j = 0; j < i && !said; j++) {
			said = points[j].config == points[i].config &&
			       points[j].n_vars == points[i].n_vars &&
			       memcmp(points[j].vars, points[i].vars,
				      sizeof points[i].vars[0] *
					      (size_t)points[i].n_vars) == 0;
		}
		if (!said) {
			print_header(out, &points[i]);
		}
	}
	fputs("one training step, per rank: the bytes sent, by phase and op, "
	      "and the bytes held after it (float32; the largest over "
	      "ranks)\n",
	      out);
	if (!table_row(&t)) {
		st = TPS_ERR_NOMEM;
		goto out;
	}
	snprintf(cell(&t, 0, 0), CELL, "sent");
	snprintf(cell(&t, 0, 1), CELL, "op");
	snprintf(cell(&t, 0, 2), CELL, "mesh_dim");
	for (int i = 0; i < n; i++) {
		column_label(points, n, i, cell(&t, 0, 3 + i), CELL);
	}
	for (int k = 0; k < n_rows; k++) {
		if (!table_row(&t)) {
			st = TPS_ERR_NOMEM;
			goto out;
		}
		snprintf(cell(&t, t.rows - 1, 0), CELL, "%s",
			 tps_phase_names[rows[k].phase]);
		snprintf(cell(&t, t.rows - 1, 1), CELL, "%s", rows[k].op);
		snprintf(cell(&t, t.rows - 1, 2), CELL, "%s", rows[k].mesh_dim);
		for (int i = 0; i < n; i++) {
			if (rows[k].bytes[i] < 0) {
				snprintf(cell(&t, t.rows - 1, 3 + i), CELL,
					 "-");
			} else {
				tps_format_bytes(rows[k].bytes[i],
						 cell(&t, t.rows - 1, 3 + i));
			}
		}
	}
	/* Each phase's sum, then the step's. */
	for (int p = TPS_PHASE_FORWARD; p <= TPS_PHASE_COUNT; p++) {
		if (!table_row(&t)) {
			st = TPS_ERR_NOMEM;
			goto out;
		}
		snprintf(cell(&t, t.rows - 1, 0), CELL, "%s",
			 p < TPS_PHASE_COUNT ? tps_phase_names[p] : "total");
		snprintf(cell(&t, t.rows - 1, 1), CELL, "%s",
			 p < TPS_PHASE_COUNT ? "all ops" : "");
		for (int i = 0; i < n; i++) {
			int64_t sum = 0;
			for (int k = 0; k < n_rows; k++) {
				if (((int)rows[k].phase == p ||
				     p == TPS_PHASE_COUNT) &&
				    rows[k].bytes[i] > 0) {
					sum += rows[k].bytes[i];
				}
			}
			tps_format_bytes(sum, cell(&t, t.rows - 1, 3 + i));
		}
	}
	for (int i = 0; i < n; i++) {
		gathers = gathers || points[i].gathers;
	}
	for (int h = 0; h < HELD_ROWS; h++) {
		if (h == GATHERED && !gathers) {
			continue;
		}
		if (!table_row(&t)) {
			st = TPS_ERR_NOMEM;
			goto out;
		}
		snprintf(cell(&t, t.rows - 1, 0), CELL, "held");
		snprintf(cell(&t, t.rows - 1, 1), CELL, "%s", held_names[h]);
		for (int i = 0; i < n; i++) {
			if (h == GATHERED && !points[i].gathers) {
				snprintf(cell(&t, t.rows - 1, 3 + i), CELL,
					 "-");
				continue;
			}
			tps_format_bytes(held_figure(&points[i], h)->max,
					 cell(&t, t.rows - 1, 3 + i));
		}
	}
	table_print(out, &t);
out:
	free(t.cells);
	free(rows);
	return st;
}

/* ---- JSON output ---------------------------------------------------- */

static void json_number(FILE *out, double v)
{
	char buf[TPS_NUMFMT_MAX];
	tps_format_double(v, buf);
	fputs(buf, out);
}

static void json_figures(FILE *out, const struct tps_cost_figures *f)
{
	fprintf(out, "{\"count\":%lld,\"bytes_per_rank\":%lld,\"seconds\":",
		(long long)f->count, (long long)f->bytes_per_rank);
	json_number(out, f->seconds);
	fputc('}', out);
}

/* A per-rank figure as the trace's result.symbolic writes it. */
static void json_held(FILE *out, const char *key,
		      const struct tps_model_figure *f, bool first)
{
	fprintf(out, "%s\"%s\":{\"bytes\":%lld,\"rank\":%d", first ? "" : ",",
		key, (long long)f->max, f->max_rank);
	if (f->min != f->max) {
		fprintf(out, ",\"min_bytes\":%lld,\"min_rank\":%d",
			(long long)f->min, f->min_rank);
	}
	fputc('}', out);
}

/* "by_phase": each mode's collectives by phase, and in each by op. */
static void json_by_phase(FILE *out, const struct tps_cost_report *r)
{
	fputs(",\"by_phase\":{", out);
	for (int m = 0; m < TPS_COST_MODES; m++) {
		fprintf(out, "%s\"%s\":{", m ? "," : "",
			m == TPS_COST_INFERENCE ? "inference" : "training");
		for (int p = TPS_PHASE_FORWARD; p < TPS_PHASE_COUNT; p++) {
			struct tps_cost_figures sum = {0};
			bool first = true;
			for (int k = 0; k < r->n_rows; k++) {
				if ((int)r->rows[k].phase == p) {
					sum.count += r->rows[k].mode[m].count;
					sum.bytes_per_rank +=
						r->rows[k]
							.mode[m]
							.bytes_per_rank;
				}
			}
			fprintf(out,
				"%s\"%s\":{\"count\":%lld,\"bytes_per_rank\":"
				"%lld,\"by_op\":{",
				p == TPS_PHASE_FORWARD ? "" : ",",
				tps_phase_names[p], (long long)sum.count,
				(long long)sum.bytes_per_rank);
			/* Each op once, where it first appears. */
			for (int k = 0; k < r->n_rows; k++) {
				const struct tps_cost_row *row = &r->rows[k];
				struct tps_cost_figures op = {0};
				bool seen = false;
				if ((int)row->phase != p ||
				    row->mode[m].count == 0) {
					continue;
				}
				for (int j = 0; j < k && !seen; j++) {
					seen = (int)r->rows[j].phase == p &&
					       r->rows[j].mode[m].count > 0 &&
					       strcmp(r->rows[j].op, row->op) ==
						       0;
				}
				if (seen) {
					continue;
				}
				for (int j = k; j < r->n_rows; j++) {
					if ((int)r->rows[j].phase == p &&
					    strcmp(r->rows[j].op, row->op) ==
						    0) {
						op.count += r->rows[j]
								    .mode[m]
								    .count;
						op.bytes_per_rank +=
							r->rows[j]
								.mode[m]
								.bytes_per_rank;
					}
				}
				fputs(first ? "" : ",", out);
				first = false;
				tps_json_write_string(out, row->op);
				fprintf(out,
					":{\"count\":%lld,\"bytes_per_rank\":"
					"%lld}",
					(long long)op.count,
					(long long)op.bytes_per_rank);
			}
			fputs("}}", out);
		}
		fputc('}', out);
	}
	fputc('}', out);
}

void tps_comm_write_json(FILE *out, const struct tps_comm_point *points, int n)
{
	fputs("{\"format\":\"tpsim.comm\",\"version\":1,\"time_model\":", out);
	tps_json_write_string(
		out, "alpha-beta: a collective over n ranks sending B bytes "
		     "per rank takes steps * latency + B / bandwidth (steps "
		     "2(n-1) for all_reduce, n-1 otherwise; the slowest link "
		     "of its dims); compute takes flops / device FLOP/s; "
		     "nothing overlaps");
	fputs(",\"points\":[", out);
	for (int i = 0; i < n; i++) {
		const struct tps_comm_point *p = &points[i];
		const struct tps_cost_report *r = &p->report;
		fputs(i ? ",\n{" : "\n{", out);
		fputs("\"config\":", out);
		tps_json_write_string(out, p->config);
		if (p->zero >= 0) {
			fputs(",\"zero\":", out);
			tps_json_write_string(
				out, tps_comm_zero_settings[p->zero].name);
		}
		fputs(",\"vars\":{", out);
		for (int v = 0; v < p->n_vars; v++) {
			fputs(v ? "," : "", out);
			tps_json_write_string(out, p->vars[v].name);
			fputc(':', out);
			json_number(out, p->vars[v].value);
		}
		fputs("},\"mesh\":{", out);
		tps_trace_write_mesh_fields(out, &p->mesh);
		fputs("},\"links\":{", out);
		for (int d = 0; d < p->mesh.ndim; d++) {
			fputs(d ? "," : "", out);
			tps_json_write_string(out, p->mesh.dim_names[d]);
			fputs(":{\"GBps\":", out);
			json_number(out, p->cost.links[d].gbps);
			fputs(",\"latency_us\":", out);
			json_number(out, p->cost.links[d].latency_us);
			fputc('}', out);
		}
		fputs("},\"device\":{\"TFLOPS\":", out);
		json_number(out, p->cost.tflops);
		fputs("},\"collectives\":[", out);
		for (int k = 0; k < r->n_rows; k++) {
			const struct tps_cost_row *row = &r->rows[k];
			fputs(k ? "," : "", out);
			fputs("{\"phase\":", out);
			tps_json_write_string(out, tps_phase_names[row->phase]);
			fputs(",\"op\":", out);
			tps_json_write_string(out, row->op);
			fputs(",\"module\":", out);
			tps_json_write_string(out, row->module);
			fputs(",\"mesh_dim\":", out);
			tps_json_write_string(out, row->mesh_dim);
			fputs(",\"inference\":", out);
			json_figures(out, &row->mode[TPS_COST_INFERENCE]);
			fputs(",\"training\":", out);
			json_figures(out, &row->mode[TPS_COST_TRAINING]);
			fputc('}', out);
		}
		fputs("],\"total\":{", out);
		for (int m = 0; m < TPS_COST_MODES; m++) {
			fprintf(out,
				"%s\"%s\":{\"count\":%lld,"
				"\"bytes_per_rank\":%lld,"
				"\"comm_seconds\":",
				m ? "," : "",
				m == TPS_COST_INFERENCE ? "inference"
							: "training",
				(long long)r->total[m].count,
				(long long)r->total[m].bytes_per_rank);
			json_number(out, r->total[m].seconds);
			fprintf(out, ",\"flops\":%lld,\"compute_seconds\":",
				(long long)r->flops[m]);
			json_number(out, r->compute_seconds[m]);
			fputs(",\"step_seconds\":", out);
			json_number(out, r->compute_seconds[m] +
						 r->total[m].seconds);
			fputc('}', out);
		}
		fputc('}', out);
		json_by_phase(out, r);
		fputs(",\"memory\":{", out);
		json_held(out, "param_bytes", &r->footprint.params, true);
		if (p->gathers) {
			json_held(out, "gathered_param_bytes",
				  &r->footprint.gathered, false);
		}
		json_held(out, "grad_bytes", &r->footprint.grads, false);
		json_held(out, "optimizer_state_bytes",
			  &r->footprint.optimizer_state, false);
		json_held(out, "saved_activation_bytes", &r->footprint.saved,
			  false);
		json_held(out, "output_bytes", &r->footprint.output, false);
		json_held(out, "peak_activation_bytes",
			  &r->footprint.activations, false);
		fputs("}}", out);
	}
	fputs("]}\n", out);
}

void tps_comm_points_free(struct tps_comm_point *points, int n)
{
	for (int i = 0; i < n; i++) {
		tps_cost_report_free(&points[i].report);
	}
	free(points);
}

enum tps_status tps_comm_point_make(const struct tps_run_spec *spec,
				    const char *config,
				    struct tps_comm_point *p,
				    struct tps_error *err)
{
	enum tps_status st;

	memset(p, 0, sizeof *p);
	p->config = config;
	p->zero = -1;
	p->n_vars = spec->n_vars;
	memcpy(p->vars, spec->vars, sizeof p->vars);
	p->mesh = spec->model.mesh;
	p->tp_dim = spec->model.tp_dim;
	p->dp_mask = spec->model.dp_mask;
	p->cost = spec->cost;
	p->gathers = spec->model.zero.stage == 3;
	st = tps_cost_estimate(&spec->model, &spec->cost, &p->report, err);
	if (st != TPS_OK) {
		tps_error_prefix(err, "%s", config);
	}
	return st;
}

enum tps_status tps_comm_write(FILE *out, const struct tps_comm_point *points,
			       int n, enum tps_comm_format format,
			       struct tps_error *err)
{
	enum tps_status st = TPS_OK;

	if (format == TPS_COMM_JSON) {
		tps_comm_write_json(out, points, n);
		return TPS_OK;
	}
	if (format == TPS_COMM_COLUMNS) {
		st = tps_comm_write_columns(out, points, n);
		if (st == TPS_ERR_INPUT) {
			return tps_error_set(err, st,
					     "comm: %d points side by side "
					     "(expected 1 to %d)",
					     n, TPS_COMM_MAX_COLUMNS);
		}
		if (st != TPS_OK) {
			st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		}
		return st;
	}
	for (int i = 0; st == TPS_OK && format == TPS_COMM_TABLES && i < n;
	     i++) {
		if (i) {
			fputc('\n', out);
		}
		st = tps_comm_write_point(out, &points[i]);
	}
	if (st == TPS_OK && (n > 1 || format == TPS_COMM_SUMMARY)) {
		if (format == TPS_COMM_TABLES) {
			fputc('\n', out);
		}
		st = tps_comm_write_sweep(out, points, n);
	}
	if (st != TPS_OK) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	return st;
}
