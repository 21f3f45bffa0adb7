#include "cli.h"

#include "cli_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "fixture_check.h"
#include "jsonio.h"
#include "mesh.h"
#include "numfmt.h"
#include "pool.h"
#include "run.h"
#include "tensor.h"
#include "trace.h"
#include "tps_version.h"

static const char usage_text[] =
	"Usage: tpsim COMMAND [ARGS]\n"
	"Simulate tensor parallelism deterministically in one process.\n"
	"\n"
	"Commands:\n"
	"  run CONFIG [-o TRACE] [--max-memory SIZE] [--max-trace SIZE]\n"
	"      [--set NAME=VALUE]... [--threads N] [--stats] [--symbolic]\n"
	"      [--no-reference] [--backend local|mpi]\n"
	"      Simulate the config (\"-\" reads stdin) on every rank and write "
	"the\n"
	"      JSON trace to TRACE (default: stdout). A one-line summary goes "
	"to\n"
	"      stderr. A run whose tensors need more than --max-memory "
	"(default\n"
	"      8G) or whose trace would take more than --max-trace (default "
	"1G) is\n"
	"      refused, and leaves no trace. SIZE is bytes, or a number with "
	"K, M,\n"
	"      G or T.\n"
	"      --set NAME=VALUE sets a config variable (\"vars\"); "
	"repeatable.\n"
	"      --threads N runs the ranks on N threads (default: the cores; "
	"the\n"
	"      trace is the same bytes for every N). --stats prints time, "
	"trace\n"
	"      speed and memory to stderr. --symbolic runs shapes, placements "
	"and\n"
	"      collectives without values or reference (\"compute\": "
	"\"symbolic\")\n"
	"      and reports each rank's parameter, gradient, optimizer and\n"
	"      activation bytes. --no-reference runs no single-device "
	"reference\n"
	"      and compares nothing. --backend mpi, under mpirun -np P (P "
	"dividing\n"
	"      the world size), spreads the ranks over P processes and writes "
	"the\n"
	"      same trace from process 0 (docs/mpi.md).\n";
/* The rest (one string would pass the 4095 bytes C17 promises). */
static const char usage_text_more[] =
	"  comm CONFIG... [--set NAME=V[,V...]]... [--zero LIST] [--columns]\n"
	"      [--summary] [--json]\n"
	"      Count the collectives and bytes per rank of one inference step "
	"and\n"
	"      one training step, by phase, op, module and mesh dim, with a "
	"step\n"
	"      time from an alpha-beta model; --set lists sweep every "
	"combination,\n"
	"      --summary prints one line per combination. --zero counts each "
	"at\n"
	"      the ZeRO settings listed (ddp or 0, 1, distributed_optimizer, "
	"2, 3;\n"
	"      or all) side by side; --columns puts the training steps side "
	"by\n"
	"      side, with the bytes each rank holds.\n"
	"  check TRACE FIXTURE\n"
	"      Compare a trace with a hand-derived fixture; mismatches on "
	"stdout.\n"
	"  explain TRACE [--format text|md] [--step N] [--module NAME]\n"
	"      [--phase P] [--max-values N] [--heading-level N] [--pictures]\n"
	"      Print a trace step by step: every event, every rank's shard "
	"(more\n"
	"      than N values, default 16, as the first and last N/2 around "
	"\"...\";\n"
	"      0 shows all); --step, --module and --phase pick the events, "
	"the\n"
	"      global tensors and the communication counted. --heading-level "
	"N\n"
	"      puts --format md's title at Markdown level N (1 to 4). "
	"--pictures\n"
	"      adds under each event which ranks hold which block of its "
	"tensor.\n"
	"  picture TRACE --tensor NAME [--event SEQ] [-o FILE]\n"
	"      Draw which ranks hold which block of a tensor as an SVG "
	"(default:\n"
	"      stdout), at the event with that seq or the tensor's first "
	"event.\n"
	"  timeline TRACE [-o FILE]\n"
	"      Lay the trace out in time, a track per rank and a process per "
	"step,\n"
	"      as Chrome Trace Event JSON for ui.perfetto.dev (default: "
	"stdout);\n"
	"      durations from the alpha-beta model of comm.\n"
	"  view TRACE [-o FILE.html]\n"
	"      Write the trace as one self-contained HTML page (default: "
	"stdout):\n"
	"      step through its events, every rank's shard drawn as a grid "
	"of\n"
	"      values, collectives and mesh groups highlighted.\n"
	"  diff TRACE_A TRACE_B [--format text|md] [--step N] [-o FILE]\n"
	"      Compare two traces of the same model run differently, tensor "
	"by\n"
	"      tensor in execution order, against what reordering the sums "
	"can\n"
	"      explain (each trace's error bounds); name the first tensor "
	"that\n"
	"      differs by more. Exit 1 when one does. --step shows one "
	"step's\n"
	"      tensors (the verdict still covers every step).\n"
	"  plot TRACE... -o FILE.svg [--label TEXT]...\n"
	"      Draw the loss per step of training traces as an SVG, with the "
	"band\n"
	"      that reordering the sums allows around the reference's loss; "
	"one\n"
	"      --label per trace names its curve.\n"
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
	/* Each value a JSON number, as it would be in the file: strtod would
	 * also take "0x10", " 8", "+8", "8." and "inf". */
	for (p = eq + 1;;) {
		size_t n;
		double v;
		if (!tps_json_scan_number(p, strlen(p), &n, &v) ||
		    !isfinite(v) || set->n_values == TPS_CLI_MAX_SET_VALUES ||
		    (p[n] != ',' && p[n] != '\0')) {
			return false;
		}
		set->values[set->n_values++] = v;
		if (p[n] == '\0') {
			return true;
		}
		p += n + 1;
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

/* "81.6 GiB (87623270400 bytes)": numfmt.h's size for people, and the
 * exact count. */
static void print_bytes(FILE *err, int64_t bytes)
{
	char buf[TPS_NUMFMT_BYTES_MAX];
	tps_format_bytes_exact(bytes, buf);
	fputs(buf, err);
}

/* --stats: where the time and the memory went, after the summary line. */
static void print_stats(FILE *err, const struct tps_run_stats *st)
{
	/* The GEMM variant is the process's (main() picks it). */
	fprintf(err, "tpsim: stats: threads %d, GEMM %s\n", st->threads,
		tps_matmul_variant_name(tps_matmul_variant_active()));
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
	fputs("tpsim: stats: trace: ", err);
	print_bytes(err, st->trace_bytes);
	if (st->trace_s > 0) {
		fprintf(err, ", %.1f MB/s while writing",
			(double)st->trace_bytes / 1e6 / st->trace_s);
	}
	fputs("\ntpsim: stats: memory: tensors at peak ", err);
	print_bytes(err, st->tensor_peak_bytes);
	fputs(", peak RSS ", err);
	print_bytes(err, st->peak_rss_bytes);
	if (st->tensor_peak_bytes > 0 && st->peak_rss_bytes > 0) {
		fprintf(err, " (%.2fx the tensors)",
			(double)st->peak_rss_bytes /
				(double)st->tensor_peak_bytes);
	}
	fputc('\n', err);
}

/* --stats under MPI: the bytes the trace counts (each collective's ring
 * formula, per rank) beside those the processes really sent, by what
 * they carried (backend.h). */
static void print_wire(FILE *err, const struct tps_backend *b,
		       const struct tps_run_summary *s, const int64_t *sent)
{
	fprintf(err, "tpsim: stats: mpi: %d processes of %d ranks each\n",
		b->processes, b->ranks);
	fputs("tpsim: stats: mpi: collectives sent ", err);
	print_bytes(err, sent[TPS_TRAFFIC_COLLECTIVE]);
	fputs(" between processes; the trace's ring formula ", err);
	print_bytes(err, s->bytes_per_rank);
	fputs(" per rank\ntpsim: stats: mpi: trace values to process 0 ", err);
	print_bytes(err, sent[TPS_TRAFFIC_TRACE]);
	fputs(", tensors assembled ", err);
	print_bytes(err, sent[TPS_TRAFFIC_ASSEMBLE]);
	fputc('\n', err);
}

/* --stats: what the run was estimated to write and compute before it
 * started, beside what it wrote. */
static void print_estimate(FILE *err, const struct tps_run_estimate *e,
			   int64_t written)
{
	fprintf(err,
		"tpsim: stats: estimated before the run: trace at most %lld "
		"bytes",
		(long long)e->trace_bytes);
	if (e->trace_bytes > 0) {
		fprintf(err, " (written: %.1f%% of it)",
			100.0 * (double)written / (double)e->trace_bytes);
	}
	fprintf(err, ", %lld events, %lld flops on the simulated ranks\n",
		(long long)e->events, (long long)e->flops);
}

/* A per-rank figure: the largest, and which ranks when they differ. */
static void print_figure(FILE *err, const char *what,
			 const struct tps_model_figure *f)
{
	fprintf(err, "%s ", what);
	print_bytes(err, f->max);
	if (f->min != f->max) {
		fprintf(err, " on rank %d (rank %d: ", f->max_rank,
			f->min_rank);
		print_bytes(err, f->min);
		fputc(')', err);
	}
}

/* The dtypes the figures count in: "float32", or each role's. */
static void print_dtypes(FILE *err, const struct tps_dtypes *dt)
{
	static const struct {
		enum tps_dtype_role role;
		const char *what;
	} roles[] = {
		{TPS_ROLE_PARAMS, "parameters"},
		{TPS_ROLE_MASTER_PARAMS, "master copy"},
		{TPS_ROLE_GRADS, "gradients"},
		{TPS_ROLE_OPTIMIZER_STATE, "optimizer state"},
		{TPS_ROLE_ACTIVATIONS, "activations"},
	};
	if (tps_dtypes_all_f32(dt)) {
		fputs(", float32", err);
		return;
	}
	for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
		fprintf(err, "%s %s %s", i ? "," : ";", roles[i].what,
			tps_dtype_names[dt->of[roles[i].role]]);
	}
}

/* The symbolic run's summary after its verdict: what each rank holds and
 * sends. */
static void print_symbolic(FILE *err, const char *config,
			   const struct tps_run_summary *s)
{
	const struct tps_model_footprint *fp = &s->footprint;
	fprintf(err, "tpsim: %s: symbolic, per rank (the largest over ranks",
		config);
	print_dtypes(err, &s->dtypes);
	fputs("): ", err);
	print_figure(err, "parameters", &fp->params);
	if (s->gathers) {
		print_figure(err, " + gathered at once (FSDP)", &fp->gathered);
	}
	fputs("; ", err);
	print_figure(err, "gradients", &fp->grads);
	fputs("; ", err);
	print_figure(err, "optimizer state", &fp->optimizer_state);
	fprintf(err, " (%d per parameter", s->optimizer_states);
	if (fp->master.max > 0) {
		fputs(", with ", err);
		print_figure(err, "the master copy", &fp->master);
	}
	fputs(")\n", err);
	fprintf(err, "tpsim: %s: symbolic, per rank: ", config);
	print_figure(err, "activations at peak", &fp->activations);
	fputs(" = ", err);
	print_figure(err, "saved for backward", &fp->saved);
	fputs(" + ", err);
	print_figure(err, "the model output", &fp->output);
	fputc('\n', err);
	fprintf(err, "tpsim: %s: symbolic, per rank: ", config);
	print_figure(err, "in all", &fp->total);
	fputs(" = parameters + gradients + optimizer state + activations at "
	      "peak",
	      err);
	fputs(s->gathers ? " + gathered at once (each at its own peak)\n"
			 : "\n",
	      err);
	fprintf(err, "tpsim: %s: symbolic, collectives per rank: ", config);
	for (int p = TPS_PHASE_FORWARD; p < TPS_PHASE_COUNT; p++) {
		fprintf(err, "%s%s ", p == TPS_PHASE_FORWARD ? "" : ", ",
			tps_phase_names[p]);
		print_bytes(err, s->phase_bytes[p]);
	}
	fputc('\n', err);
}

static int cmd_run(int argc, char **argv, FILE *out, FILE *err)
{
	struct tps_config_var overrides[TPS_CONFIG_MAX_VARS];
	struct tps_run_options opts = {
		.max_memory = TPS_DEFAULT_MAX_MEMORY,
		.max_trace = TPS_DEFAULT_MAX_TRACE,
		.overrides = overrides,
		.pending = tps_cli_pending(),
	};
	bool stats = false, mpi = false;
	struct tps_backend backend;
	struct tps_run_summary s = {0};
	struct tps_error e = {0};
	enum tps_status st;
	int64_t wire_bytes[TPS_TRAFFIC_COUNT] = {0};
	int rc;

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
		} else if (strcmp(argv[i], "--max-trace") == 0) {
			if (++i == argc ||
			    !parse_size(argv[i], &opts.max_trace)) {
				return tps_cli_usage_error(
					err,
					"run: --max-trace "
					"needs a size like 1G or 1048576, got "
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
		} else if (strcmp(argv[i], "--symbolic") == 0) {
			opts.symbolic = true;
		} else if (strcmp(argv[i], "--no-reference") == 0) {
			opts.no_reference = true;
		} else if (strcmp(argv[i], "--backend") == 0) {
			if (++i == argc || (strcmp(argv[i], "mpi") != 0 &&
					    strcmp(argv[i], "local") != 0)) {
				return tps_cli_usage_error(
					err,
					"run: --backend needs local or mpi, "
					"got '%s'",
					i < argc ? argv[i] : "");
			}
			mpi = strcmp(argv[i], "mpi") == 0;
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
	if (mpi) {
		if (tps_cli_mpi_start(&backend, &e) != TPS_OK) {
			return tps_cli_trouble(err, &e);
		}
		opts.backend = &backend;
	}
	st = tps_run(&opts, out, &s, &e);
	/* Under MPI every process agrees on the outcome (backend.h): one
	 * that failed before the run's last exchange stops the others. */
	st = tps_backend_finish(opts.backend, st, &e);
	if (mpi && (st != TPS_OK || backend.process != 0)) {
		/* One line, from process 0; every process exits with its
		 * code. */
		rc = st != TPS_OK ? TPS_EXIT_TROUBLE : TPS_EXIT_OK;
		if (st != TPS_OK && backend.process == 0) {
			tps_cli_trouble(err, &e);
		}
		if (st == TPS_OK) {
			tps_run_summary_free(&s);
		}
		return tps_cli_mpi_stop(&backend, rc, wire_bytes);
	}
	if (st != TPS_OK) {
		return tps_cli_trouble(err, &e);
	}
	for (int i = 0; i < s.n_warnings; i++) {
		fprintf(err, "tpsim: warning: %s: %s\n", opts.config_path,
			s.warnings[i]);
	}
	fprintf(err, "tpsim: %s: ", opts.config_path);
	tps_run_write_verdict(err, &s);
	fputc('\n', err);
	if (s.symbolic) {
		print_symbolic(err, opts.config_path, &s);
		if (stats) {
			print_stats(err, &s.stats);
			print_estimate(err, &s.estimate, s.stats.trace_bytes);
		}
		tps_run_summary_free(&s);
		return mpi ? tps_cli_mpi_stop(&backend, TPS_EXIT_OK, wire_bytes)
			   : TPS_EXIT_OK;
	}
	if (s.diagnosis[0]) {
		fprintf(err, "tpsim: %s: diagnosis: %s\n", opts.config_path,
			s.diagnosis);
	}
	rc = s.match ? TPS_EXIT_OK : TPS_EXIT_MISMATCH;
	if (mpi) {
		rc = tps_cli_mpi_stop(&backend, rc, wire_bytes);
	}
	if (stats) {
		print_stats(err, &s.stats);
		print_estimate(err, &s.estimate, s.stats.trace_bytes);
		if (mpi) {
			print_wire(err, &backend, &s, wire_bytes);
		}
	}
	/* The summary owns the comparison's figures. */
	tps_run_summary_free(&s);
	return rc;
}

struct check_printer {
	FILE *out;
	const char *fixture;
};

static void print_mismatch(void *ctx, const struct tps_check_mismatch *m)
{
	struct check_printer *p = ctx;
	char esc[256];
	fprintf(p->out, "%s: %s\n",
		tps_json_escape_for_message(p->fixture, esc, sizeof esc),
		m->line);
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
	if (tps_trace_read(argv[2], &trace, NULL, NULL, &e) != TPS_OK ||
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
			tps_json_write_string(out, m->dim_names[i]);
			fputc(':', out);
			tps_trace_write_group(out, m, mask,
					      tps_mesh_group_index(m, mask, r));
		}
		fputs("},\"local_ranks\":{", out);
		for (int i = 0; i < m->ndim; i++) {
			fputs(i ? "," : "", out);
			tps_json_write_string(out, m->dim_names[i]);
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
	for (int i = 0, world = 1; i < n; i++) {
		/* At most 4 sizes of at most 4096: no overflow. The sizes
		 * parsed, so shape_arg is digits and commas. */
		int64_t w = (int64_t)world * sizes[i];
		if (w > TPS_MAX_WORLD) {
			tps_error_set(&e, TPS_ERR_LIMIT,
				      "--shape %s: the world size %s%lld "
				      "exceeds %d",
				      shape_arg,
				      i < n - 1 ? "of at least " : "",
				      (long long)w, TPS_MAX_WORLD);
			return usage_error_message(err, "mesh", &e);
		}
		world = (int)w;
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

int tps_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	if (!cmd) {
		return tps_cli_usage_error(err, "missing command%s", NULL);
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "help") == 0) {
		fputs(usage_text, out);
		fputs(usage_text_more, out);
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
			fputs(usage_text_more, out);
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
		return tps_cli_explain(argc, argv, out, err);
	}
	if (strcmp(cmd, "comm") == 0) {
		return tps_cli_comm(argc, argv, out, err);
	}
	if (strcmp(cmd, "picture") == 0) {
		return tps_cli_picture(argc, argv, out, err);
	}
	if (strcmp(cmd, "timeline") == 0) {
		return tps_cli_timeline(argc, argv, out, err);
	}
	if (strcmp(cmd, "view") == 0) {
		return tps_cli_view(argc, argv, out, err);
	}
	if (strcmp(cmd, "diff") == 0) {
		return tps_cli_diff(argc, argv, out, err);
	}
	if (strcmp(cmd, "plot") == 0) {
		return tps_cli_plot(argc, argv, out, err);
	}
	return tps_cli_usage_error(err, "unknown command '%s'", cmd);
}
