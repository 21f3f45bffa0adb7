/*
 * fuzz_check: the fixture reader and `tpsim check`.
 *
 * A fixed trace is made once, at the first input, by running the config
 * of fixtures/train_dp2_tp2_mse (dp 2 x tp 2, training: every phase and
 * kind of event). Each input is read by the strict JSON parser, as
 * `tpsim check` reads a fixture, then checked three ways with
 * tps_check_fixture:
 *   - the input as the fixture, against the fixed trace;
 *   - the input as the trace, against a fixed fixture of that trace;
 *   - the input as both.
 * Contracts checked: every mismatch is reported once, as one line, up to
 * TPS_CHECK_MAX_LINES and a last "... N more"; trouble has a one-line
 * message.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fixture_check.h"
#include "jsonio.h"
#include "run.h"

static const char fixed_config[] =
	"{\"tpsim\": 1,\n"
	" \"mesh\": {\"shape\": [2, 2], \"dim_names\": [\"dp\", \"tp\"]},\n"
	" \"tp_dim\": \"tp\", \"dp_dim\": \"dp\",\n"
	" \"model\": [\n"
	"  {\"name\": \"fc1\", \"type\": \"linear\", \"in_features\": 4,"
	" \"out_features\": 4, \"bias\": true},\n"
	"  {\"name\": \"act\", \"type\": \"relu\"},\n"
	"  {\"name\": \"fc2\", \"type\": \"linear\", \"in_features\": 4,"
	" \"out_features\": 2, \"bias\": true}],\n"
	" \"plan\": {\"fc1\": \"colwise\","
	" \"fc2\": {\"style\": \"rowwise\", \"bias\": \"after_reduce\"}},\n"
	" \"input\": {\"shape\": [2, 4], \"init\": \"arange\"},\n"
	" \"init\": {\"method\": \"arange\"},\n"
	" \"params\": {\n"
	"  \"fc1.weight\": [[1, 0, 0, 0], [-1, 1, 0, 0], [-1, 0, 0, 0],"
	" [0, 0, 1, -1]],\n"
	"  \"fc1.bias\": [-2, 0, 3, 2],\n"
	"  \"fc2.weight\": [[1, -1, 1, 0], [0, 1, -1, 1]],\n"
	"  \"fc2.bias\": [1, 0]},\n"
	" \"mode\": \"training\", \"loss\": \"mse\","
	" \"target\": {\"init\": \"ones\"},\n"
	" \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.25}, \"steps\": 1,\n"
	" \"dp_grad\": \"global\"}\n";

/* A fixture of that trace: top-level and per-event tolerance, matched
 * events, ranks by number, a mismatch-free check of the fixed trace. */
static const char fixed_fixture[] =
	"{\"format\": \"tpsim.trace\", \"version\": 1,\n"
	" \"tolerance\": {\"atol\": 1e-6, \"rtol\": 0},\n"
	" \"config\": {\"tp_dim\": \"tp\", \"mode\": \"training\"},\n"
	" \"mesh\": {\"shape\": [2, 2], \"dim_names\": [\"dp\", \"tp\"],"
	" \"world_size\": 4,\n"
	"  \"groups\": {\"dp\": [[0, 2], [1, 3]], \"tp\": [[0, 1], [2, 3]]}},\n"
	" \"params\": {\"fc2.bias\": {\"shape\": [2],"
	" \"values\": [1, 0]}},\n"
	" \"events\": [\n"
	"  {\"match\": {\"module\": \"fc1\", \"op\": \"distribute\","
	" \"tensor\": \"fc1.weight\"},\n"
	"   \"kind\": \"layout\", \"placements\": [\"replicate\", "
	"\"shard(0)\"],\n"
	"   \"ranks\": [{\"rank\": 3, \"shape\": [2, 4]}]},\n"
	"  {\"match\": {\"phase\": \"forward\", \"kind\": \"collective\"},\n"
	"   \"tolerance\": {\"atol\": 0}, \"mesh_dim\": \"tp\"},\n"
	"  {\"match\": {\"phase\": \"backward\"}},\n"
	"  {\"match\": {\"phase\": \"optimizer\"}}],\n"
	" \"result\": {\"match\": true}}\n";

static cJSON *trace, *fixture;

static void make_fixed(void)
{
	struct tps_run_options opts = {0};
	struct tps_run_summary summary;
	struct tps_error err = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	opts.config_path = tps_fuzz_scratch(0, (const uint8_t *)fixed_config,
					    strlen(fixed_config));
	opts.max_memory = TPS_DEFAULT_MAX_MEMORY;
	opts.max_trace = TPS_DEFAULT_MAX_TRACE;
	opts.threads = 1;
	if (!f || tps_run(&opts, f, &summary, &err) != TPS_OK ||
	    fclose(f) != 0 ||
	    tps_json_parse_strict("trace.json", text, len, &trace, &err) !=
		    TPS_OK ||
	    tps_json_parse_strict("fixture.json", fixed_fixture,
				  strlen(fixed_fixture), &fixture,
				  &err) != TPS_OK) {
		tps_fuzz_fail("cannot make the fixed trace", err.message);
	}
	free(text);
}

struct lines {
	size_t n;
};

static void count_line(void *ctx, const struct tps_check_mismatch *m)
{
	struct lines *l = ctx;
	const char *line = m->line;
	for (const char *p = line; *p; p++) {
		if ((unsigned char)*p < 0x20) {
			fprintf(stderr, "fuzz: line: %s\n", line);
			tps_fuzz_fail(
				"a mismatch line with a control character",
				NULL);
		}
	}
	l->n++;
}

static void print_line(void *ctx, const struct tps_check_mismatch *m)
{
	fprintf(stderr, "fuzz: fixed fixture: %s\n", m->line);
}

static void check(const cJSON *t, const char *tname, const cJSON *fx,
		  const char *fname)
{
	struct tps_error err = {0};
	struct lines lines = {0};
	size_t mismatches = 0;
	if (tps_check_fixture(t, tname, fx, fname, count_line, &lines,
			      &mismatches, &err) != TPS_OK) {
		tps_fuzz_check_error("tps_check_fixture", &err);
		return;
	}
	/* The first TPS_CHECK_MAX_LINES, then "... N more". */
	if (lines.n != (mismatches <= TPS_CHECK_MAX_LINES
				? mismatches
				: TPS_CHECK_MAX_LINES + 1)) {
		tps_fuzz_fail("mismatches differ from the lines reported",
			      NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tps_error err = {0};
	cJSON *input = NULL;

	if (!trace) {
		size_t mismatches = 1;
		make_fixed();
		if (tps_check_fixture(trace, "trace.json", fixture,
				      "fixture.json", print_line, NULL,
				      &mismatches, &err) != TPS_OK ||
		    mismatches != 0) {
			tps_fuzz_fail("the fixed fixture does not match the "
				      "fixed trace",
				      err.message);
		}
	}
	if (tps_json_parse_strict("fuzz.json", (const char *)data, size, &input,
				  &err) != TPS_OK) {
		tps_fuzz_check_error("tps_json_parse_strict", &err);
		return 0;
	}
	check(trace, "trace.json", input, "fuzz.json");
	check(input, "fuzz.json", fixture, "fixture.json");
	check(input, "fuzz.json", input, "fuzz.json");
	cJSON_Delete(input);
	return 0;
}
