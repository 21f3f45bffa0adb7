/*
 * costs: what one inference step and one training step move and compute,
 * against hand counts, and the alpha-beta time of it.
 *
 * The model throughout: fc1 linear 8 -> 16 colwise, relu, fc2 16 -> 8
 * rowwise, biases on; input (2 per dp rank, 8).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "config.h"
#include "costs.h"

static void set_linear(struct tps_module_spec *m, const char *name, int64_t in,
		       int64_t out, enum tps_style style)
{
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	m->type = TPS_MODULE_LINEAR;
	m->in_features = in;
	m->out_features = out;
	m->bias = true;
	m->planned = true;
	m->style = style;
	m->input = style == TPS_STYLE_ROWWISE ? tps_placement_shard(-1)
					      : tps_placement_replicate();
	m->output = style == TPS_STYLE_COLWISE ? tps_placement_shard(-1)
					       : tps_placement_replicate();
}

/* The model on a (dp, tp) mesh; dp 1 means no dp dim is used. */
static void mlp(struct tps_model_spec *spec, int dp, int tp)
{
	int shape[2] = {dp, tp};
	const char *names[2] = {"dp", "tp"};
	int64_t dims[2] = {2 * dp, 8};
	memset(spec, 0, sizeof *spec);
	ck_assert_int_eq(tps_mesh_init(&spec->mesh, 2, shape, names, NULL),
			 TPS_OK);
	spec->tp_dim = 1;
	spec->dp_mask = dp > 1 ? 1u : 0u;
	spec->n_modules = 3;
	spec->modules = calloc(3, sizeof *spec->modules);
	set_linear(&spec->modules[0], "fc1", 8, 16, TPS_STYLE_COLWISE);
	snprintf(spec->modules[1].name, TPS_NAME_MAX, "act");
	spec->modules[1].type = TPS_MODULE_RELU;
	set_linear(&spec->modules[2], "fc2", 16, 8, TPS_STYLE_ROWWISE);
	spec->input_shape = tps_shape_make(2, dims);
	spec->steps = 1;
	spec->optimizer.type = TPS_OPTIMIZER_SGD;
	spec->optimizer.lr = 0.1;
}

/* tp links: 1 GB/s, 1 us; dp links: 2 GB/s, 10 us; 1 TFLOP/s. */
static const struct tps_cost_spec slow = {
	{{2.0, 10.0}, {1.0, 1.0}, {0, 0}, {0, 0}}, 1.0};

static const struct tps_cost_row *find(const struct tps_cost_report *r,
				       enum tps_phase phase, const char *op,
				       const char *module)
{
	for (int i = 0; i < r->n_rows; i++) {
		if (r->rows[i].phase == phase &&
		    strcmp(r->rows[i].op, op) == 0 &&
		    strcmp(r->rows[i].module, module) == 0) {
			return &r->rows[i];
		}
	}
	ck_abort_msg("no row %d %s %s", (int)phase, op, module);
	return NULL;
}

START_TEST(tp_only_training_adds_no_collective)
{
	/* Inference: fc2's all_reduce of the (2, 8) output over tp = 4:
	 * c = ceil(16 / 4) = 4 floats = 16 bytes, 2 (n-1) c = 96 bytes.
	 * Training: the same forward; backward needs no collective (fc1's
	 * input needs no gradient, rowwise's backward none); no dp. */
	struct tps_model_spec spec;
	struct tps_cost_report r;
	const struct tps_cost_row *row;
	mlp(&spec, 1, 4);
	ck_assert_int_eq(tps_cost_estimate(&spec, &slow, &r, NULL), TPS_OK);
	ck_assert_int_eq(r.n_rows, 1);
	row = find(&r, TPS_PHASE_FORWARD, "all_reduce", "fc2");
	ck_assert_str_eq(row->mesh_dim, "tp");
	for (int m = 0; m < TPS_COST_MODES; m++) {
		ck_assert_int_eq(row->mode[m].count, 1);
		ck_assert_int_eq(row->mode[m].bytes_per_rank, 96);
		ck_assert_int_eq(r.total[m].bytes_per_rank, 96);
	}
	/* With the input requiring a gradient, fc1's partial dX is
	 * all-reduced backward: another (2, 8), 96 bytes. */
	spec.input_requires_grad = true;
	spec.mode = TPS_MODE_TRAINING;
	tps_cost_report_free(&r);
	ck_assert_int_eq(tps_cost_estimate(&spec, &slow, &r, NULL), TPS_OK);
	row = find(&r, TPS_PHASE_BACKWARD, "all_reduce", "fc1");
	ck_assert_int_eq(row->mode[TPS_COST_TRAINING].count, 1);
	ck_assert_int_eq(row->mode[TPS_COST_TRAINING].bytes_per_rank, 96);
	ck_assert_int_eq(row->mode[TPS_COST_INFERENCE].count, 0);
	ck_assert_int_eq(r.total[TPS_COST_TRAINING].bytes_per_rank, 192);
	tps_cost_report_free(&r);
	tps_model_spec_free(&spec);
}
END_TEST

START_TEST(dp_adds_one_gradient_all_reduce_per_parameter)
{
	/* dp 2 x tp 4. Each dp all_reduce (n = 2) of a parameter's local
	 * part of P floats sends 2 (2-1) ceil(P/2) 4 bytes:
	 *   fc1.weight (16, 8) shard(0) -> (4, 8), 32 floats: 128
	 *   fc1.bias (16) shard(0) -> 4 floats: 16
	 *   fc2.weight (8, 16) shard(1) -> (8, 4), 32 floats: 128
	 *   fc2.bias (8) replicated: 32
	 * 304 bytes over dp, plus the forward's 96 over tp. */
	struct tps_model_spec spec;
	struct tps_cost_report r;
	const struct tps_cost_row *row;
	mlp(&spec, 2, 4);
	ck_assert_int_eq(tps_cost_estimate(&spec, &slow, &r, NULL), TPS_OK);
	row = find(&r, TPS_PHASE_OPTIMIZER, "all_reduce", "fc1");
	ck_assert_str_eq(row->mesh_dim, "dp");
	ck_assert_int_eq(row->mode[TPS_COST_TRAINING].count, 2);
	ck_assert_int_eq(row->mode[TPS_COST_TRAINING].bytes_per_rank, 144);
	row = find(&r, TPS_PHASE_OPTIMIZER, "all_reduce", "fc2");
	ck_assert_int_eq(row->mode[TPS_COST_TRAINING].bytes_per_rank, 160);
	ck_assert_int_eq(r.total[TPS_COST_INFERENCE].count, 1);
	ck_assert_int_eq(r.total[TPS_COST_INFERENCE].bytes_per_rank, 96);
	ck_assert_int_eq(r.total[TPS_COST_TRAINING].count, 5);
	ck_assert_int_eq(r.total[TPS_COST_TRAINING].bytes_per_rank, 400);
	tps_cost_report_free(&r);
	tps_model_spec_free(&spec);
}
END_TEST

START_TEST(alpha_beta_time_is_steps_times_latency_plus_bytes_over_bandwidth)
{
	/* Inference: all_reduce over tp (n 4): 2 (4-1) = 6 steps x 1 us +
	 * 96 B / 1 GB/s = 6.096 us. Training adds 4 dp all_reduces (n 2):
	 * 4 x 2 x 10 us + 304 B / 2 GB/s = 80.152 us.
	 * Flops per rank, 2 per multiply-add: forward fc1 2*2*4*8 = 128,
	 * fc2 2*2*8*4 = 128; backward fc2 dW and dX 128 each, fc1 dW 128:
	 * 256 inference, 640 training, at 1 TFLOP/s. */
	struct tps_model_spec spec;
	struct tps_cost_report r;
	mlp(&spec, 2, 4);
	ck_assert_int_eq(tps_cost_estimate(&spec, &slow, &r, NULL), TPS_OK);
	printf("comm %g s, %g s\n", r.total[0].seconds, r.total[1].seconds);
	ck_assert(fabs(r.total[TPS_COST_INFERENCE].seconds - 6.096e-6) < 1e-12);
	ck_assert(fabs(r.total[TPS_COST_TRAINING].seconds -
		       (6.096e-6 + 80.152e-6)) < 1e-12);
	ck_assert_int_eq(r.flops[TPS_COST_INFERENCE], 256);
	ck_assert_int_eq(r.flops[TPS_COST_TRAINING], 640);
	ck_assert(fabs(r.compute_seconds[TPS_COST_TRAINING] - 640e-12) < 1e-18);
	tps_cost_report_free(&r);
	tps_model_spec_free(&spec);
}
END_TEST

START_TEST(ring_steps_follow_the_op)
{
	ck_assert_int_eq(tps_cost_ring_steps("all_reduce", 8), 14);
	ck_assert_int_eq(tps_cost_ring_steps("all_gather", 8), 7);
	ck_assert_int_eq(tps_cost_ring_steps("reduce_scatter", 3), 2);
	ck_assert_int_eq(tps_cost_ring_steps("broadcast", 1), 0);
}
END_TEST

/* The plan warning of a config file (costs.h); "" for none. */
static void plan_warning_of(const char *rel, char *warning,
			    struct tps_cost_report *report)
{
	struct tps_run_spec spec = {0};
	struct tps_error err = {0};
	ck_assert_msg(tps_config_load(tu_source_path(rel), &spec, &err) ==
			      TPS_OK,
		      "%s", err.message);
	ck_assert_int_eq(tps_cost_plan_warning(&spec.model, warning, &err),
			 TPS_OK);
	ck_assert_int_eq(
		tps_cost_estimate(&spec.model, &spec.cost, report, &err),
		TPS_OK);
	tps_run_spec_free(&spec);
}

/*
 * examples/sp_block: one GPT-2-small block on a replicated input, tp 4.
 * With sequence parallelism and nothing else, attn.o reduce-scatters its
 * partial sums into sequence shards, adds its bias to them, and the
 * residual gathers them straight back to add them to its replicated
 * input; the MLP's fc2 and its residual do the same: 2 pairs in the
 * forward. prepare_input on the first residual splits the input once:
 * no pair, and one collective fewer per forward (5: 2 all_gathers, 2
 * reduce_scatters, the output's all_gather; against 6).
 */
START_TEST(plan_warning_names_a_reduce_scatter_gathered_straight_back)
{
	char warning[TPS_COST_WARNING_MAX];
	struct tps_cost_report sp = {0}, prepared = {0}, tp = {0};
	plan_warning_of("examples/sp_block/sp.json", warning, &sp);
	ck_assert_msg(strstr(warning,
			     "2 redistributions in a forward step undo the "
			     "one before them; the first: block.attn.o's "
			     "reduce_scatter of block.attn.o.out (partial -> "
			     "shard(1)) is undone by block.attn_residual's "
			     "all_gather right after it (shard(1) -> "
			     "replicate), with nothing computed on it between "
			     "them: one all_reduce would do both. A residual "
			     "brings its body's output to the layout of its "
			     "input: split the model input into sequence "
			     "shards once, with prepare_input") == warning,
		      "%s", warning);
	ck_assert_str_eq(sp.warning, warning); /* comm's, the same */
	plan_warning_of("examples/sp_block/sp_prepare_input.json", warning,
			&prepared);
	ck_assert_str_eq(warning, "");
	ck_assert_str_eq(prepared.warning, "");
	ck_assert_int_eq(sp.total[TPS_COST_INFERENCE].count, 6);
	ck_assert_int_eq(prepared.total[TPS_COST_INFERENCE].count, 5);
	/* (1, 1024, 768) float32 over 4: c = 196608 floats, 786432 bytes;
	 * each all_gather or reduce_scatter sends 3c = 2359296. */
	ck_assert_int_eq(sp.total[TPS_COST_INFERENCE].bytes_per_rank,
			 6 * 2359296LL);
	ck_assert_int_eq(prepared.total[TPS_COST_INFERENCE].bytes_per_rank,
			 5 * 2359296LL);
	/* Plain TP: 2 all_reduces of 2 * 3c, no warning. */
	plan_warning_of("examples/sp_block/tp.json", warning, &tp);
	ck_assert_str_eq(warning, "");
	ck_assert_int_eq(tp.total[TPS_COST_INFERENCE].count, 2);
	ck_assert_int_eq(tp.total[TPS_COST_INFERENCE].bytes_per_rank,
			 4 * 2359296LL);
	tps_cost_report_free(&sp);
	tps_cost_report_free(&prepared);
	tps_cost_report_free(&tp);
}
END_TEST

/*
 * fc1 colwise with output replicate (Megatron's gather_output) straight
 * into fc2 rowwise, which splits what fc1 gathered: shard(1) -> replicate
 * -> shard(1), so neither step is needed. With the relu between them
 * (the model above) the relu computes on the gathered tensor, and tpsim
 * says nothing: only a pair with nothing computed between is flagged.
 * The Megatron MLP (no gather) has no pair either.
 */
START_TEST(plan_warning_names_a_gather_that_the_next_module_splits)
{
	struct tps_model_spec spec;
	struct tps_error err = {0};
	char warning[TPS_COST_WARNING_MAX];
	mlp(&spec, 1, 2);
	ck_assert_int_eq(tps_cost_plan_warning(&spec, warning, &err), TPS_OK);
	ck_assert_str_eq(warning, "");
	spec.modules[0].output = tps_placement_replicate();
	ck_assert_int_eq(tps_cost_plan_warning(&spec, warning, &err), TPS_OK);
	ck_assert_str_eq(warning, "");
	spec.modules[1] = spec.modules[2]; /* fc1, fc2: no relu */
	spec.n_modules = 2;
	ck_assert_int_eq(tps_cost_plan_warning(&spec, warning, &err), TPS_OK);
	ck_assert_str_eq(
		warning,
		"fc1's all_gather of fc1.out (shard(1) -> replicate) is "
		"undone by fc2's split right after it (replicate -> "
		"shard(1)), with nothing computed on it between them: "
		"neither is needed");
	free(spec.modules);
}
END_TEST

static Suite *costs_suite(void)
{
	Suite *s = suite_create("costs");
	TCase *tc = tcase_create("counts");
	tcase_add_test(tc, tp_only_training_adds_no_collective);
	tcase_add_test(tc, dp_adds_one_gradient_all_reduce_per_parameter);
	tcase_add_test(
		tc,
		alpha_beta_time_is_steps_times_latency_plus_bytes_over_bandwidth);
	tcase_add_test(tc, ring_steps_follow_the_op);
	tcase_add_test(
		tc, plan_warning_names_a_reduce_scatter_gathered_straight_back);
	tcase_add_test(tc,
		       plan_warning_names_a_gather_that_the_next_module_splits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(costs_suite());
}
