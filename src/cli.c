#include "tpsim/cli.h"

#include "cli_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tpsim/check.h"
#include "tpsim/event.h"
#include "tpsim/jsonio.h"
#include "tpsim/mesh.h"
#include "tpsim/numfmt.h"
#include "tpsim/pool.h"
#include "tpsim/run.h"
#include "tpsim/spec.h"
#include "tpsim/trace.h"
#include "tps_version.h"

static const char usage_text[] =
	"Usage: tpsim COMMAND [ARGS]\n"
	"Simulate tensor parallelism deterministically in one process.\n"
	"\n"
	"Commands:\n"
	"  run CONFIG [-o TRACE] [--max-memory SIZE] [--set NAME=VALUE]...\n"
	"      [--threads N] [--stats]\n"
	"      Simulate the config (\"-\" reads stdin) on every rank and write "
	"the\n"
	"      JSON trace to TRACE (default: stdout). A one-line summary goes "
	"to\n"
	"      stderr. SIZE is bytes, or a number with K, M, G or T (default "
	"8G).\n"
	"      --set NAME=VALUE sets a config variable (\"vars\"); "
	"repeatable.\n"
	"      --threads N runs the ranks on N threads (default: the cores; "
	"the\n"
	"      trace is the same bytes for every N). --stats prints time, "
	"trace\n"
	"      speed and memory to stderr.\n"
	"  comm CONFIG... [--set NAME=V[,V...]]... [--summary] [--json]\n"
	"      Count the collectives and bytes per rank of one inference step "
	"and\n"
	"      one training step, by phase, op, module and mesh dim, with a "
	"step\n"
	"      time from an alpha-beta model; --set lists sweep every "
	"combination,\n"
	"      --summary prints one line per combination.\n"
	"  check TRACE FIXTURE\n"
	"      Compare a trace with a hand-derived fixture; mismatches on "
	"stdout.\n"
	"  explain TRACE [--step N] [--module NAME] [--phase P] "
	"[--max-values N]\n"
	"      Print a trace step by step: every event, every rank's shard "
	"(more\n"
	"      than N values, default 16, as the first and last N/2 around "
	"\"...\";\n"
	"      0 shows all); the options pick the events shown.\n"
	"  mesh --shape 3,2 [--names row,col] [--json]\n"
	"      Print every rank's coordinate and its group along each mesh "
	"dim,\n"
	"      as PyTorch's DeviceMesh and mesh[\"name\"] give them.\n"
	"\n"
	"Options:\n"
	"  -h, --help     show this help and exit\n"
	"  -V, --version  show the version and exit\n"
	"\n"
	"Exit status: 0 success or match, 1 mismatch (check failed, or the\n"
	"simulation disagrees with the single-device reference), 2 trouble.\n";

/* A usage error: one line plus the hint. */
int tps_cli_usage_error(FILE *err, const char *fmt, const char *arg)
{
	char esc[256];
	fputs("tpsim: ", err);
	fprintf(err, fmt,
		arg ? tps_json_escape_for_message(arg, esc, sizeof esc) : "");
	fputs("\nTry 'tpsim --help'.\n", err);
	return TPS_EXIT_TROUBLE;
}

/* A usage error whose message tpsim made (user text in it is escaped
 * already): printed as it is, plus the hint. */
static int usage_error_message(FILE *err, const char *verb,
			       const struct tps_error *e)
{
	fprintf(err, "tpsim: %s: %s\nTry 'tpsim --help'.\n", verb, e->message);
	return TPS_EXIT_TROUBLE;
}

int tps_cli_trouble(FILE *err, const struct tps_error *e)
{
	fprintf(err, "tpsim: %s\n", e->message);
	return TPS_EXIT_TROUBLE;
}

/* "8G", "512M", "1048576" -> bytes; false if malformed or too large. */
static bool parse_size(const char *s, int64_t *out)
{
	char *end;
	long long v;
	int shift = 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno != 0 || v < 0) {
		return false;
	}
	if (*end) {
		const char *units = "KMGT";
		const char *u = strchr(units, *end);
		if (!u || end[1] != '\0') {
			return false;
		}
		shift = 10 * (int)(u - units + 1);
	}
	if (v > (INT64_MAX >> shift)) {
		return false;
	}
	*out = (int64_t)v << shift;
	return true;
}

bool tps_cli_parse_set(const char *arg, struct tps_cli_set *set)
{
	const char *eq = strchr(arg, '=');
	const char *p;
	size_t len = eq ? (size_t)(eq - arg) : 0;
	if (!eq || len == 0 || len >= sizeof set->name ||
	    !((arg[0] >= 'A' && arg[0] <= 'Z') ||
	      (arg[0] >= 'a' && arg[0] <= 'z') || arg[0] == '_')) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		char c = arg[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_')) {
			return false;
		}
	}
	memcpy(set->name, arg, len);
	set->name[len] = '\0';
	set->n_values = 0;
	for (p = eq + 1;;) {
		char *end;
		double v;
		errno = 0;
		v = strtod(p, &end);
		if (end == p || errno != 0 || !isfinite(v) ||
		    set->n_values == TPS_CLI_MAX_SET_VALUES ||
		    (*end != ',' && *end != '\0')) {
			return false;
		}
		set->values[set->n_values++] = v;
		if (*end == '\0') {
			return true;
		}
		p = end + 1;
	}
}

/* --threads N: 1..TPS_POOL_MAX_THREADS. */
static bool parse_threads(const char *text, int *threads)
{
	char *end;
	long n;
	errno = 0;
	n = strtol(text, &end, 10);
	if (errno || end == text || *end != '\0' || n < 1 ||
	    n > TPS_POOL_MAX_THREADS) {
		return false;
	}
	*threads = (int)n;
	return true;
}

/* --stats: where the time and the memory went, after the summary line. */
static void print_stats(FILE *err, const struct tps_run_stats *st)
{
	fprintf(err, "tpsim: stats: threads %d\n", st->threads);
	fprintf(err,
		"tpsim: stats: seconds: init %.3f, tp steps %.3f, reference "
		"%.3f, trace writing %.3f, total %.3f\n",
		st->init_s, st->tp_s, st->reference_s, st->trace_s,
		st->total_s);
	if (st->reference_s > 0) {
		fprintf(err,
			"tpsim: stats: tp steps / reference: %.2f (same "
			"shapes, same threads)\n",
			st->tp_s / st->reference_s);
	}
	fprintf(err, "tpsim: stats: trace: %lld bytes",
		(long long)st->trace_bytes);
	if (st->trace_s > 0) {
		fprintf(err, ", %.1f MB/s while writing",
			(double)st->trace_bytes / 1e6 / st->trace_s);
	}
	fprintf(err,
		"\ntpsim: stats: memory: tensors at peak %lld bytes, peak "
		"RSS %lld bytes",
		(long long)st->tensor_peak_bytes,
		(long long)st->peak_rss_bytes);
	if (st->tensor_peak_bytes > 0 && st->peak_rss_bytes > 0) {
		fprintf(err, " (%.2fx the tensors)",
			(double)st->peak_rss_bytes /
				(double)st->tensor_peak_bytes);
	}
	fputc('\n', err);
}

static int cmd_run(int argc, char **argv, FILE *out, FILE *err)
{
	struct tps_config_var overrides[TPS_CONFIG_MAX_VARS];
	struct tps_run_options opts = {NULL,	  NULL, TPS_DEFAULT_MAX_MEMORY,
				       overrides, 0,	0};
	bool stats = false;
	struct tps_run_summary s;
	struct tps_error e = {0};
	char diff[TPS_NUMFMT_MAX];

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 ||
		    strcmp(argv[i], "--output") == 0) {
			if (++i == argc) {
				return tps_cli_usage_error(
					err, "run: %s needs a file",
					argv[i - 1]);
			}
			/* "-o -" is stdout, as "-" is stdin for inputs. */
			opts.output_path =
				strcmp(argv[i], "-") ? argv[i] : NULL;
		} else if (strcmp(argv[i], "--max-memory") == 0) {
			if (++i == argc ||
			    !parse_size(argv[i], &opts.max_memory)) {
				return tps_cli_usage_error(
					err,
					"run: --max-memory "
					"needs a size like 8G or 1048576, got "
					"'%s'",
					i < argc ? argv[i] : "");
			}
		} else if (strcmp(argv[i], "--threads") == 0) {
			if (++i == argc ||
			    !parse_threads(argv[i], &opts.threads)) {
				return tps_cli_usage_error(
					err,
					"run: --threads needs a number from 1 "
					"to 256, got '%s'",
					i < argc ? argv[i] : "");
			}
		} else if (strcmp(argv[i], "--stats") == 0) {
			stats = true;
		} else if (strcmp(argv[i], "--set") == 0) {
			struct tps_cli_set set;
			if (++i == argc || !tps_cli_parse_set(argv[i], &set) ||
			    set.n_values != 1 ||
			    opts.n_overrides == TPS_CONFIG_MAX_VARS) {
				return tps_cli_usage_error(
					err,
					"run: --set expects NAME=VALUE, got "
					"'%s'",
					i < argc ? argv[i] : "");
			}
			snprintf(overrides[opts.n_overrides].name,
				 sizeof overrides[0].name, "%s", set.name);
			overrides[opts.n_overrides++].value = set.values[0];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return tps_cli_usage_error(
				err, "run: unknown option '%s'", argv[i]);
		} else if (opts.config_path) {
			return tps_cli_usage_error(
				err, "run: unexpected argument '%s'", argv[i]);
		} else {
			opts.config_path = argv[i];
		}
	}
	if (!opts.config_path) {
		return tps_cli_usage_error(err, "run: missing CONFIG%s", NULL);
	}
	if (tps_run(&opts, out, &s, &e) != TPS_OK) {
		return tps_cli_trouble(err, &e);
	}
	for (int i = 0; i < s.n_warnings; i++) {
		fprintf(err, "tpsim: warning: %s: %s\n", opts.config_path,
			s.warnings[i]);
	}
	tps_format_float(s.max_abs_diff, diff);
	fprintf(err, "tpsim: %s: mesh %s (world %d), %d module%s, ",
		opts.config_path, s.mesh, s.world_size, s.n_modules,
		s.n_modules == 1 ? "" : "s");
	if (s.steps > 0) {
		char loss[TPS_NUMFMT_MAX], ref[TPS_NUMFMT_MAX];
		tps_format_float(s.loss, loss);
		tps_format_float(s.reference_loss, ref);
		fprintf(err, "%d training step%s, loss %s (reference %s), ",
			s.steps, s.steps == 1 ? "" : "s", loss, ref);
	}
	fprintf(err,
		"%lld event%s, %lld collective%s (%lld bytes/rank), "
		"max_abs_diff %s: %s\n",
		(long long)s.events, s.events == 1 ? "" : "s",
		(long long)s.collectives, s.collectives == 1 ? "" : "s",
		(long long)s.bytes_per_rank, diff,
		s.match ? "matches the reference"
			: "DIFFERS from the reference");
	if (stats) {
		print_stats(err, &s.stats);
	}
	return s.match ? TPS_EXIT_OK : TPS_EXIT_MISMATCH;
}

struct check_printer {
	FILE *out;
	const char *fixture;
};

static void print_mismatch(void *ctx, const char *line)
{
	struct check_printer *p = ctx;
	char esc[256];
	fprintf(p->out, "%s: %s\n",
		tps_json_escape_for_message(p->fixture, esc, sizeof esc), line);
}

static int cmd_check(int argc, char **argv, FILE *out, FILE *err)
{
	cJSON *trace = NULL, *fixture = NULL;
	struct tps_error e = {0};
	struct check_printer printer = {out, NULL};
	size_t mismatches = 0;
	int rc = TPS_EXIT_TROUBLE;

	for (int i = 2; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return tps_cli_usage_error(
				err, "check: unknown option '%s'", argv[i]);
		}
	}
	if (argc != 4) {
		return tps_cli_usage_error(
			err, "check: expected TRACE FIXTURE%s", NULL);
	}
	printer.fixture = argv[3];
	if (tps_json_load(argv[2], TPS_JSON_MAX_TRACE_BYTES, &trace, &e) !=
		    TPS_OK ||
	    tps_json_load(argv[3], TPS_JSON_MAX_INPUT_BYTES, &fixture, &e) !=
		    TPS_OK ||
	    tps_check_fixture(trace, argv[2], fixture, argv[3], print_mismatch,
			      &printer, &mismatches, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	fflush(out);
	if (mismatches) {
		fprintf(err, "tpsim: %s does not match %s: %zu mismatch%s\n",
			argv[2], argv[3], mismatches,
			mismatches == 1 ? "" : "es");
		rc = TPS_EXIT_MISMATCH;
	} else {
		fprintf(err, "tpsim: %s matches %s\n", argv[2], argv[3]);
		rc = TPS_EXIT_OK;
	}
out:
	cJSON_Delete(trace);
	cJSON_Delete(fixture);
	return rc;
}

/* Splits "3,2" into sizes; false when malformed. */
static bool parse_sizes(const char *s, int *sizes, int *n)
{
	*n = 0;
	for (;;) {
		char *end;
		long v;
		errno = 0;
		v = strtol(s, &end, 10);
		if (end == s || errno || v < 1 || v > TPS_MAX_WORLD ||
		    *n == TPS_MAX_MESH_DIMS) {
			return false;
		}
		sizes[(*n)++] = (int)v;
		if (*end == '\0') {
			return true;
		}
		if (*end != ',') {
			return false;
		}
		s = end + 1;
	}
}

/* Splits "row,col" in place into names. */
static int split_names(char *s, char **names, int max)
{
	int n = 0;
	for (char *p = s;; p++) {
		if (*p == ',' || *p == '\0') {
			bool last = *p == '\0';
			if (n == max) {
				return -1;
			}
			names[n++] = s;
			*p = '\0';
			s = p + 1;
			if (last) {
				return n;
			}
		}
	}
}

static void print_group(FILE *out, const struct tps_mesh *m, unsigned mask,
			int g)
{
	int ranks[TPS_MAX_WORLD];
	int n = tps_mesh_group_size(m, mask);
	tps_mesh_group_members(m, mask, g, ranks);
	fputc('[', out);
	for (int i = 0; i < n; i++) {
		fprintf(out, "%s%d", i ? ", " : "", ranks[i]);
	}
	fputc(']', out);
}

static void print_mesh_text(FILE *out, const struct tps_mesh *m)
{
	int coord[TPS_MAX_MESH_DIMS];
	fputs("DeviceMesh shape (", out);
	for (int i = 0; i < m->ndim; i++) {
		fprintf(out, "%s%d", i ? ", " : "", m->shape[i]);
	}
	fputs("), mesh_dim_names (", out);
	for (int i = 0; i < m->ndim; i++) {
		fprintf(out, "%s'%s'", i ? ", " : "", m->dim_names[i]);
	}
	fprintf(out, "), world size %d, ranks row-major\n", m->world_size);
	for (int r = 0; r < m->world_size; r++) {
		tps_mesh_coord_of(m, r, coord);
		fprintf(out, "Rank %d: coordinate (", r);
		for (int i = 0; i < m->ndim; i++) {
			fprintf(out, "%s%d", i ? ", " : "", coord[i]);
		}
		fputc(')', out);
		for (int i = 0; i < m->ndim; i++) {
			unsigned mask = 1u << i;
			fprintf(out, ", mesh['%s'] = ", m->dim_names[i]);
			print_group(out, m, mask,
				    tps_mesh_group_index(m, mask, r));
			fprintf(out, " (local rank %d)",
				tps_mesh_local_rank(m, mask, r));
		}
		fputc('\n', out);
	}
}

static void print_mesh_json(FILE *out, const struct tps_mesh *m)
{
	int coord[TPS_MAX_MESH_DIMS];
	fputc('{', out);
	tps_trace_write_mesh_fields(out, m);
	fputs(",\"ranks\":[", out);
	for (int r = 0; r < m->world_size; r++) {
		tps_mesh_coord_of(m, r, coord);
		fprintf(out, "%s\n{\"rank\":%d,\"coordinate\":[", r ? "," : "",
			r);
		for (int i = 0; i < m->ndim; i++) {
			fprintf(out, "%s%d", i ? "," : "", coord[i]);
		}
		fputs("],\"groups\":{", out);
		for (int i = 0; i < m->ndim; i++) {
			unsigned mask = 1u << i;
			fputs(i ? "," : "", out);
			tps_trace_write_string(out, m->dim_names[i]);
			fputc(':', out);
			tps_trace_write_group(out, m, mask,
					      tps_mesh_group_index(m, mask, r));
		}
		fputs("},\"local_ranks\":{", out);
		for (int i = 0; i < m->ndim; i++) {
			fputs(i ? "," : "", out);
			tps_trace_write_string(out, m->dim_names[i]);
			fprintf(out, ":%d", tps_mesh_local_rank(m, 1u << i, r));
		}
		fputs("}}", out);
	}
	fputs("]}\n", out);
}

static int cmd_mesh(int argc, char **argv, FILE *out, FILE *err)
{
	int sizes[TPS_MAX_MESH_DIMS], n = 0, n_names = 0;
	char *names[TPS_MAX_MESH_DIMS];
	char defaults[TPS_MAX_MESH_DIMS][16];
	char names_buf[4 * TPS_MESH_NAME_MAX + 8];
	const char *shape_arg = NULL, *names_arg = NULL;
	struct tps_mesh mesh;
	struct tps_error e = {0};
	bool json = false;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--shape") == 0 ||
			   strcmp(argv[i], "--names") == 0) {
			if (i + 1 == argc) {
				return tps_cli_usage_error(err,
							   "mesh: %s needs a "
							   "value",
							   argv[i]);
			}
			if (argv[i][2] == 's') {
				shape_arg = argv[++i];
			} else {
				names_arg = argv[++i];
			}
		} else {
			return tps_cli_usage_error(err,
						   "mesh: unexpected argument "
						   "'%s'",
						   argv[i]);
		}
	}
	if (!shape_arg) {
		return tps_cli_usage_error(
			err,
			"mesh: missing --shape (e.g. --shape "
			"3,2)%s",
			NULL);
	}
	if (!parse_sizes(shape_arg, sizes, &n)) {
		return tps_cli_usage_error(
			err,
			"mesh: --shape expects 1 to 4 sizes "
			"from 1 to 4096 separated by commas, got "
			"'%s'",
			shape_arg);
	}
	if (names_arg) {
		if (strlen(names_arg) >= sizeof names_buf) {
			return tps_cli_usage_error(
				err, "mesh: --names is too long%s", NULL);
		}
		memcpy(names_buf, names_arg, strlen(names_arg) + 1);
		n_names = split_names(names_buf, names, TPS_MAX_MESH_DIMS);
		if (n_names != n) {
			return tps_cli_usage_error(
				err,
				"mesh: --names expects one "
				"name per mesh dim, got '%s'",
				names_arg);
		}
	} else {
		for (int i = 0; i < n; i++) {
			snprintf(defaults[i], sizeof defaults[i], "dim%d",
				 i % 10);
			names[i] = defaults[i];
		}
	}
	if (tps_mesh_init(&mesh, n, sizes, (const char *const *)names, &e) !=
	    TPS_OK) {
		return usage_error_message(err, "mesh", &e);
	}
	if (json) {
		print_mesh_json(out, &mesh);
	} else {
		print_mesh_text(out, &mesh);
	}
	return TPS_EXIT_OK;
}

/* ---- explain: a trace, step by step, for people ---------------------- */

static const char *str_of(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : "?";
}

/* Prints a trace number as the trace writes it: integers whole (1048576,
 * never 1.04858e+06), others as their shortest decimal; "?" if absent. */
static void print_number(FILE *out, const cJSON *v)
{
	char buf[TPS_NUMFMT_MAX];
	if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
		tps_format_double(v->valuedouble, buf);
		fputs(buf, out);
	} else {
		fputc('?', out);
	}
}

/* Prints v compactly when short enough to read in a line, else nothing. */
static void print_short_json(FILE *out, const cJSON *v, size_t limit)
{
	char *text = v ? cJSON_PrintUnformatted(v) : NULL;
	if (text && strlen(text) <= limit) {
		fprintf(out, " %s", text);
	}
	free(text);
}

/* Prints a JSON array of numbers or strings between open and close,
 * ", "-separated: a shape "(2, 4)" or placements "[shard(1)]". */
static void print_list(FILE *out, const cJSON *list, char open, char close)
{
	const cJSON *e;
	bool first = true;
	fputc(open, out);
	cJSON_ArrayForEach(e, list)
	{
		fputs(first ? "" : ", ", out);
		if (cJSON_IsNumber(e)) {
			print_number(out, e);
		} else {
			fputs(cJSON_IsString(e) ? e->valuestring : "?", out);
		}
		first = false;
	}
	fputc(close, out);
}

static void print_shape(FILE *out, const cJSON *shape)
{
	print_list(out, shape, '(', ')');
}

/* The numbers of nested arrays, in order (depth-first), into a flat array
 * of at most cap pointers; returns how many there are in all. */
static size_t flatten(const cJSON *v, const cJSON **flat, size_t cap, size_t n)
{
	const cJSON *e;
	if (!cJSON_IsArray(v)) {
		if (n < cap) {
			flat[n] = v;
		}
		return n + 1;
	}
	cJSON_ArrayForEach(e, v)
	{
		n = flatten(e, flat, cap, n);
	}
	return n;
}

/* The last `keep` numbers of nested arrays (flatten keeps the first). */
static void last_numbers(const cJSON *v, const cJSON **ring, size_t keep,
			 size_t *seen)
{
	const cJSON *e;
	if (!cJSON_IsArray(v)) {
		ring[*seen % keep] = v;
		(*seen)++;
		return;
	}
	cJSON_ArrayForEach(e, v)
	{
		last_numbers(e, ring, keep, seen);
	}
}

/*
 * A rank's values, never dropped without saying so: up to max_values
 * numbers (0: no limit) as the trace's nested arrays; more as the first
 * and last max_values / 2 in row-major order around "...", followed by
 * how many were shown. A summary trace's keys stand in for absent values.
 */
#define EXPLAIN_MAX_KEEP 512

static void print_values(FILE *out, const cJSON *holder, size_t max_values)
{
	const cJSON *values =
		cJSON_GetObjectItemCaseSensitive(holder, "values");
	const cJSON *head[EXPLAIN_MAX_KEEP], *tail[EXPLAIN_MAX_KEEP];
	size_t n, keep, seen = 0;

	if (!values) {
		const cJSON *hash =
			cJSON_GetObjectItemCaseSensitive(holder, "hash");
		if (!cJSON_IsString(hash)) {
			return;
		}
		if (cJSON_GetObjectItemCaseSensitive(holder, "min")) {
			fputs(" min ", out);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  holder, "min"));
			fputs(", max ", out);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  holder, "max"));
			fputs(", mean ", out);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  holder, "mean"));
			fputc(',', out);
		}
		fprintf(out, " hash %s", hash->valuestring);
		return;
	}
	n = flatten(values, head, 0, 0);
	if (max_values == 0 || n <= max_values) {
		char *text = cJSON_PrintUnformatted(values);
		if (text) {
			fprintf(out, " %s", text);
		} else {
			fputs(" (values: out of memory to print)", out);
		}
		free(text);
		return;
	}
	keep = max_values / 2 ? max_values / 2 : 1;
	keep = keep > EXPLAIN_MAX_KEEP ? EXPLAIN_MAX_KEEP : keep;
	flatten(values, head, keep, 0);
	last_numbers(values, tail, keep, &seen);
	fputs(" [", out);
	for (size_t i = 0; i < keep; i++) {
		print_number(out, head[i]);
		fputc(',', out);
	}
	fputs("...", out);
	for (size_t i = 0; i < keep; i++) {
		fputc(',', out);
		print_number(out, tail[(seen + i) % keep]);
	}
	fprintf(out,
		"] (%zu of %zu values: the first and last %zu in row-major "
		"order; --max-values)",
		2 * keep, n, keep);
}

/* A collective's groups: all of them when short, else the first and how
 * many. */
static void print_groups(FILE *out, const cJSON *groups)
{
	char *text = groups ? cJSON_PrintUnformatted(groups) : NULL;
	if (text && strlen(text) <= 60) {
		fprintf(out, " %s", text);
	} else if (cJSON_IsArray(groups) && groups->child) {
		char *first = cJSON_PrintUnformatted(groups->child);
		fprintf(out, " [%s,...] (%d groups)", first ? first : "?",
			cJSON_GetArraySize(groups));
		free(first);
	}
	free(text);
}

static void explain_event(FILE *out, const cJSON *ev, size_t max_values)
{
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(ev, "ranks");
	const cJSON *bytes =
		cJSON_GetObjectItemCaseSensitive(ev, "bytes_per_rank");
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
	const cJSON *r;
	const char *kind = str_of(ev, "kind");

	fputs("  [", out);
	print_number(out, seq);
	fprintf(out, "] %-8s %-11s %s -> ", str_of(ev, "module"),
		str_of(ev, "op"), str_of(ev, "tensor"));
	print_list(out, cJSON_GetObjectItemCaseSensitive(ev, "placements"), '[',
		   ']');
	fputs(" global ", out);
	print_shape(out, cJSON_GetObjectItemCaseSensitive(ev, "global_shape"));
	if (strcmp(kind, "compute") != 0 &&
	    cJSON_GetObjectItemCaseSensitive(ev, "mesh_dim")) {
		fprintf(out, ", over %s groups", str_of(ev, "mesh_dim"));
		print_groups(out,
			     cJSON_GetObjectItemCaseSensitive(ev, "groups"));
	}
	if (cJSON_IsNumber(bytes)) {
		fputs(", ", out);
		print_number(out, bytes);
		fputs(" bytes/rank", out);
	}
	fputc('\n', out);
	cJSON_ArrayForEach(r, ranks)
	{
		const cJSON *rank = cJSON_GetObjectItemCaseSensitive(r, "rank");
		fputs("        rank ", out);
		print_number(out, rank);
		fputs(": ", out);
		print_shape(out, cJSON_GetObjectItemCaseSensitive(r, "shape"));
		print_values(out, r, max_values);
		fputc('\n', out);
	}
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ev, "note"))) {
		fprintf(out, "        (%s)\n", str_of(ev, "note"));
	}
}

/* The training part of a result: the loss at each step, both ways, and
 * what else was compared. */
static void explain_training(FILE *out, const cJSON *result)
{
	const cJSON *loss = cJSON_GetObjectItemCaseSensitive(result, "loss");
	const cJSON *ref =
		cJSON_GetObjectItemCaseSensitive(result, "reference_loss");
	const cJSON *grads = cJSON_GetObjectItemCaseSensitive(result, "grads");
	if (!cJSON_IsArray(loss)) {
		return;
	}
	fputs("loss by step: ", out);
	print_list(out, loss, '[', ']');
	fputs(", reference ", out);
	print_list(out, ref, '[', ']');
	fputc('\n', out);
	fprintf(out,
		"compared too: the last step's gradients of %d tensor%s and "
		"the parameters after it (result.grads, result.params_after)\n",
		cJSON_GetArraySize(grads),
		cJSON_GetArraySize(grads) == 1 ? "" : "s");
}

/* Which events `explain` shows: all by default. */
struct explain_filter {
	long step;	    /* -1: any */
	const char *module; /* NULL: any */
	const char *phase;  /* NULL: any */
	size_t max_values;
};

static bool explain_wants(const struct explain_filter *f, const cJSON *ev)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "step");
	if (f->step >= 0 &&
	    !(cJSON_IsNumber(s) && s->valuedouble == (double)f->step)) {
		return false;
	}
	if (f->module && strcmp(f->module, str_of(ev, "module")) != 0) {
		return false;
	}
	return !f->phase || strcmp(f->phase, str_of(ev, "phase")) == 0;
}

/* A whole number in [0, hi] for an explain option. */
static bool parse_count(const char *text, long hi, long *out)
{
	char *end;
	long n;
	errno = 0;
	n = strtol(text, &end, 10);
	if (errno || end == text || *end != '\0' || n < 0 || n > hi) {
		return false;
	}
	*out = n;
	return true;
}

static int explain_options(int argc, char **argv, struct explain_filter *f,
			   const char **path, FILE *err)
{
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		long n;
		if (strcmp(opt, "--step") == 0 ||
		    strcmp(opt, "--max-values") == 0) {
			if (!arg || !parse_count(arg, 1000000000L, &n)) {
				return tps_cli_usage_error(
					err,
					strcmp(opt, "--step") == 0
						? "explain: --step needs a "
						  "step "
						  "number (0, 1, ...), got '%s'"
						: "explain: --max-values needs "
						  "a "
						  "count (0: no limit), got "
						  "'%s'",
					arg ? arg : "");
			}
			if (strcmp(opt, "--step") == 0) {
				f->step = n;
			} else {
				f->max_values = (size_t)n;
			}
			i++;
		} else if (strcmp(opt, "--module") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "explain: --module needs a name%s",
					"");
			}
			f->module = arg;
			i++;
		} else if (strcmp(opt, "--phase") == 0) {
			if (!arg || tps_name_index(tps_phase_names, arg) < 0) {
				return tps_cli_usage_error(
					err,
					"explain: --phase expects setup, "
					"forward, backward or optimizer, got "
					"'%s'",
					arg ? arg : "");
			}
			f->phase = arg;
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "explain: unknown option '%s'", opt);
		} else if (*path) {
			return tps_cli_usage_error(
				err, "explain: unexpected argument '%s'", opt);
		} else {
			*path = opt;
		}
	}
	if (!*path) {
		return tps_cli_usage_error(err, "explain: expected TRACE%s",
					   "");
	}
	return TPS_EXIT_OK;
}

static int cmd_explain(int argc, char **argv, FILE *out, FILE *err)
{
	cJSON *trace = NULL;
	const cJSON *ev, *result, *comm, *op, *mesh;
	struct tps_error e = {0};
	const char *phase = NULL, *path = NULL;
	struct explain_filter filter = {-1, NULL, NULL, 16};
	int step = -2, shown = 0;
	int rc = explain_options(argc, argv, &filter, &path, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	if (tps_json_load(path, TPS_JSON_MAX_TRACE_BYTES, &trace, &e) !=
		    TPS_OK ||
	    tps_check_is_trace(trace, path, &e) != TPS_OK) {
		cJSON_Delete(trace);
		return tps_cli_trouble(err, &e);
	}
	mesh = cJSON_GetObjectItemCaseSensitive(trace, "mesh");
	fprintf(out, "%s trace of a mesh ", str_of(trace, "generator"));
	print_shape(out, cJSON_GetObjectItemCaseSensitive(mesh, "shape"));
	fputs(" named", out);
	print_short_json(
		out, cJSON_GetObjectItemCaseSensitive(mesh, "dim_names"), 4096);
	fputc('\n', out);
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "warnings"))
	{
		fprintf(out, "warning: %s\n",
			cJSON_IsString(ev) ? ev->valuestring : "?");
	}
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "events"))
	{
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "step");
		int this_step = cJSON_IsNumber(s) ? s->valueint : -1;
		const char *this_phase = str_of(ev, "phase");
		if (!explain_wants(&filter, ev)) {
			continue;
		}
		shown++;
		if (!phase || strcmp(phase, this_phase) != 0 ||
		    this_step != step) {
			if (this_step >= 0) {
				fprintf(out, "%s, step %d:\n", this_phase,
					this_step);
			} else {
				fprintf(out, "%s:\n", this_phase);
			}
			phase = this_phase;
			step = this_step;
		}
		explain_event(out, ev, filter.max_values);
	}
	if (shown == 0) {
		fputs("(no event matches --step, --module and --phase)\n", out);
	}
	result = cJSON_GetObjectItemCaseSensitive(trace, "result");
	if (result) {
		const cJSON *o =
			cJSON_GetObjectItemCaseSensitive(result, "output");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(
			result, "max_abs_diff");
		fputs("result: output ", out);
		print_shape(out, cJSON_GetObjectItemCaseSensitive(o, "shape"));
		print_values(out, o, filter.max_values);
		fprintf(out, " %s the single-device reference (max_abs_diff ",
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result,
								      "match"))
				? "matches"
				: "DIFFERS from");
		print_number(out, d);
		fputs(")\n", out);
		explain_training(out, result);
	}
	comm = cJSON_GetObjectItemCaseSensitive(trace, "comm");
	if (comm) {
		const cJSON *n =
			cJSON_GetObjectItemCaseSensitive(comm, "collectives");
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(
			comm, "bytes_per_rank");
		fputs("comm: ", out);
		print_number(out, n);
		fprintf(out, " collective%s, ",
			cJSON_IsNumber(n) && n->valuedouble == 1 ? "" : "s");
		print_number(out, b);
		fputs(" bytes per rank", out);
		cJSON_ArrayForEach(
			op, cJSON_GetObjectItemCaseSensitive(comm, "by_op"))
		{
			fprintf(out, "; %s x", op->string);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  op, "count"));
		}
		fputc('\n', out);
	}
	cJSON_Delete(trace);
	return TPS_EXIT_OK;
}

int tps_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	if (!cmd) {
		return tps_cli_usage_error(err, "missing command%s", NULL);
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "help") == 0) {
		fputs(usage_text, out);
		return TPS_EXIT_OK;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
		fputs("tpsim " TPS_VERSION "\n", out);
		return TPS_EXIT_OK;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, out);
			return TPS_EXIT_OK;
		}
	}
	if (strcmp(cmd, "run") == 0) {
		return cmd_run(argc, argv, out, err);
	}
	if (strcmp(cmd, "check") == 0) {
		return cmd_check(argc, argv, out, err);
	}
	if (strcmp(cmd, "mesh") == 0) {
		return cmd_mesh(argc, argv, out, err);
	}
	if (strcmp(cmd, "explain") == 0) {
		return cmd_explain(argc, argv, out, err);
	}
	if (strcmp(cmd, "comm") == 0) {
		return tps_cli_comm(argc, argv, out, err);
	}
	return tps_cli_usage_error(err, "unknown command '%s'", cmd);
}
