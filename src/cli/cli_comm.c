/*
 * tpsim comm CONFIG... [--set NAME=V[,V...]]... [--zero LIST] [--columns]
 *            [--summary] [--json]
 *
 * Seed 003's exercise done right: for each config, and each combination of
 * the --set values (a sweep), the collectives and bytes per rank of one
 * inference step and one training step side by side, by phase, op, module
 * and mesh dim, and a step time from the alpha-beta model (costs.h). The
 * engine runs on meta tensors, so hidden 8192 costs no more than 8.
 * --zero counts each point again at each ZeRO setting it lists, and
 * --columns (which --zero implies) puts the points' training steps side
 * by side, with what each rank holds (docs/comm.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "cli.h"
#include "run_comm.h"

/* At most this many points (configs times combinations). */
#define MAX_POINTS 4096

/* Parses --zero's LIST: settings by name (ddp or 0, 1,
 * distributed_optimizer, 2, 3), or all, separated by commas, each at most
 * once, into zero[] in the order given. Returns how many, or 0 when
 * malformed. */
static int parse_zero(const char *list, int zero[TPS_COMM_ZERO_COUNT])
{
	int n = 0;
	const char *p = list;
	if (strcmp(list, "all") == 0) {
		for (int z = 0; z < TPS_COMM_ZERO_COUNT; z++) {
			zero[z] = z;
		}
		return TPS_COMM_ZERO_COUNT;
	}
	for (;;) {
		size_t len = strcspn(p, ",");
		int found = -1;
		for (int z = 0; z < TPS_COMM_ZERO_COUNT; z++) {
			const char *name = tps_comm_zero_settings[z].name;
			if (strlen(name) == len && strncmp(p, name, len) == 0) {
				found = z;
			}
		}
		/* Stage 0: DeepSpeed's name for plain DDP. */
		if (len == 1 && p[0] == '0') {
			found = TPS_COMM_ZERO_DDP;
		}
		for (int i = 0; i < n; i++) {
			if (zero[i] == found) {
				return 0; /* listed twice */
			}
		}
		if (found < 0 || n == TPS_COMM_ZERO_COUNT) {
			return 0;
		}
		zero[n++] = found;
		if (p[len] == '\0') {
			return n;
		}
		p += len + 1;
	}
}

/* Loads config at the combination `combo` of the sets (mixed radix, the
 * last --set fastest) and counts it into *p, at the --zero setting zero
 * (-1: the config's own). */
static enum tps_status make_point(const char *config,
				  const struct tps_cli_set *sets, int n_sets,
				  int combo, int zero, struct tps_comm_point *p,
				  struct tps_error *err)
{
	struct tps_config_var overrides[TPS_CONFIG_MAX_VARS];
	struct tps_run_spec spec = {0};
	enum tps_status st;
	for (int s = n_sets - 1; s >= 0; s--) {
		snprintf(overrides[s].name, sizeof overrides[s].name, "%s",
			 sets[s].name);
		overrides[s].value = sets[s].values[combo % sets[s].n_values];
		combo /= sets[s].n_values;
	}
	st = tps_config_load_with(config, overrides, n_sets, &spec, err);
	if (st != TPS_OK) {
		return st;
	}
	if (zero >= 0) {
		char option[64];
		snprintf(option, sizeof option, "--zero %s",
			 tps_comm_zero_settings[zero].name);
		st = tps_config_set_zero(&spec, config,
					 tps_comm_zero_settings[zero].zero,
					 option, err);
	}
	if (st == TPS_OK) {
		st = tps_comm_point_make(&spec, config, p, err);
	}
	if (st == TPS_OK) {
		p->zero = zero;
	}
	tps_run_spec_free(&spec);
	return st;
}

int tps_cli_comm(int argc, char **argv, FILE *out, FILE *err)
{
	struct tps_cli_set sets[TPS_CONFIG_MAX_VARS];
	const char *configs[64];
	int n_sets = 0, n_configs = 0, combos = 1, n_points = 0;
	int zero[TPS_COMM_ZERO_COUNT] = {-1}, n_zero = 0;
	bool json = false, summary = false, columns = false;
	enum tps_comm_format format;
	struct tps_comm_point *points;
	struct tps_error e = {0};
	int rc = TPS_EXIT_OK;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--summary") == 0) {
			summary = true;
		} else if (strcmp(argv[i], "--columns") == 0) {
			columns = true;
		} else if (strcmp(argv[i], "--zero") == 0) {
			if (n_zero > 0) {
				return tps_cli_usage_error(
					err, "comm: --zero given twice%s",
					NULL);
			}
			if (++i == argc ||
			    (n_zero = parse_zero(argv[i], zero)) == 0) {
				return tps_cli_usage_error(
					err,
					"comm: --zero expects ddp (or 0), 1, "
					"distributed_optimizer, 2 and 3, "
					"separated by commas and each once, "
					"or all; got '%s'",
					i < argc ? argv[i] : "");
			}
		} else if (strcmp(argv[i], "--set") == 0) {
			if (++i == argc) {
				return tps_cli_usage_error(
					err,
					"comm: --set needs NAME=V[,V...]%s",
					NULL);
			}
			if (n_sets == TPS_CONFIG_MAX_VARS ||
			    !tps_cli_parse_set(argv[i], &sets[n_sets])) {
				return tps_cli_usage_error(
					err,
					"comm: --set expects NAME=V[,V...] "
					"with numbers V, got '%s'",
					argv[i]);
			}
			combos *= sets[n_sets++].n_values;
			if (combos > MAX_POINTS) {
				return tps_cli_usage_error(
					err,
					"comm: the --set values make more than "
					"4096 combinations%s",
					NULL);
			}
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return tps_cli_usage_error(
				err, "comm: unknown option '%s'", argv[i]);
		} else if (n_configs == 64) {
			return tps_cli_usage_error(
				err, "comm: at most 64 configs%s", NULL);
		} else {
			configs[n_configs++] = argv[i];
		}
	}
	if (n_configs == 0) {
		return tps_cli_usage_error(err, "comm: missing CONFIG%s", NULL);
	}
	if (n_zero == 0) {
		n_zero = 1; /* the config's own "zero" */
	} else if (!json && !summary) {
		columns = true;
	}
	if ((int64_t)combos * n_configs * n_zero > MAX_POINTS) {
		return tps_cli_usage_error(
			err, "comm: more than 4096 points to count%s", NULL);
	}
	if (columns && (json || summary)) {
		return tps_cli_usage_error(
			err,
			"comm: --columns is a table of its own: expected "
			"--columns, --summary or --json, one of them%s",
			NULL);
	}
	if (columns && combos * n_configs * n_zero > TPS_COMM_MAX_COLUMNS) {
		char count[96];
		snprintf(count, sizeof count, "%d",
			 combos * n_configs * n_zero);
		return tps_cli_usage_error(
			err,
			"comm: --columns puts at most 12 points side by side, "
			"got %s (use --summary or --json for more)",
			count);
	}
	points = calloc((size_t)(combos * n_configs * n_zero), sizeof *points);
	if (!points) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		return tps_cli_trouble(err, &e);
	}
	for (int c = 0; c < n_configs && rc == TPS_EXIT_OK; c++) {
		for (int k = 0; k < combos * n_zero && rc == TPS_EXIT_OK; k++) {
			if (make_point(configs[c], sets, n_sets, k / n_zero,
				       zero[k % n_zero], &points[n_points],
				       &e) != TPS_OK) {
				rc = tps_cli_trouble(err, &e);
			} else {
				n_points++;
			}
		}
	}
	/* A plan that undoes its own redistributions (costs.h), as `tpsim
	 * run` warns: once per config and sentence, whatever the sweep. */
	for (int i = 0; rc == TPS_EXIT_OK && i < n_points; i++) {
		bool said = false;
		for (int j = 0; j < i && !said; j++) {
			said = points[j].config == points[i].config &&
			       strcmp(points[j].report.warning,
				      points[i].report.warning) == 0;
		}
		if (!said && points[i].report.warning[0]) {
			fprintf(err, "tpsim: warning: %s: %s\n",
				points[i].config, points[i].report.warning);
		}
	}
	format = json	   ? TPS_COMM_JSON
		 : summary ? TPS_COMM_SUMMARY
		 : columns ? TPS_COMM_COLUMNS
			   : TPS_COMM_TABLES;
	if (rc == TPS_EXIT_OK &&
	    tps_comm_write(out, points, n_points, format, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
	}
	tps_comm_points_free(points, n_points);
	return rc;
}
