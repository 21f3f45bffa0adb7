/*
 * pipeline: pipeline parallelism's training step (model_pipeline.c,
 * docs/pipeline.md) against the single-device reference, whose step sees
 * the whole batch.
 *
 * For tp, dp and pp each 1-4 (up to 16 ranks), gpipe, 1f1b and
 * interleaved_1f1b, sgd with momentum and adamw, 3 steps: the loss, the
 * gradients and the parameters match the reference; the three schedules
 * give the same bytes (the values do not depend on the schedule); the
 * collectives of the modules are the run's without a pipeline, once per
 * microbatch; each microbatch's activation goes forward and its gradient
 * backward across every boundary between two stages as one send and one
 * recv; and every event names the stage whose ranks ran it.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "config.h"
#include "model.h"
#include "run.h"
#include "outcome_hash.h"
#include "testutil.h"

/* What a run's events add up to. */
struct counts {
	int p, m;
	int collectives[TPS_PHASE_COUNT][TPS_COMM_OP_COUNT];
	int send[TPS_PHASE_COUNT], recv[TPS_PHASE_COUNT];
	int64_t send_bytes[TPS_PHASE_COUNT], recv_bytes[TPS_PHASE_COUNT];
	int accumulates;
	/* Events without a stage, or with one out of range; forward and
	 * backward events without a microbatch or slots. */
	int unstaged, bad_stage, untimed;
	uint64_t outcome_hash;
};

static enum tps_status count(void *ctx, const struct tps_event *ev,
			     struct tps_error *err)
{
	struct counts *c = ctx;
	const struct tps_event_stage *g = ev->stage;
	bool in_step = ev->phase == TPS_PHASE_FORWARD ||
		       ev->phase == TPS_PHASE_BACKWARD;
	(void)err;
	if (c->p > 0) {
		c->unstaged += !g;
		c->bad_stage += g && (g->stage < 0 || g->stage >= c->p);
		c->untimed += g && in_step &&
			      (g->microbatch < 0 || g->microbatch >= c->m ||
			       g->slot_end <= g->slot_start);
	}
	if (strcmp(ev->op, "accumulate") == 0) {
		c->accumulates++;
	}
	if (ev->kind != TPS_EVENT_COLLECTIVE) {
		return TPS_OK;
	}
	if (strcmp(ev->op, "send") == 0) {
		c->send[ev->phase]++;
		c->send_bytes[ev->phase] += ev->bytes_per_rank;
		return TPS_OK;
	}
	if (strcmp(ev->op, "recv") == 0) {
		c->recv[ev->phase]++;
		c->recv_bytes[ev->phase] += ev->bytes_per_rank;
		return TPS_OK;
	}
	for (int op = 0; op < TPS_COMM_OP_COUNT; op++) {
		if (strcmp(ev->op, tps_comm_op_name(op)) == 0) {
			c->collectives[ev->phase][op]++;
		}
	}
	return TPS_OK;
}

/*
 * Runs a config (single quotes for double quotes) on its ranks and as the
 * reference; the comparison must match, as `tpsim run`'s does. Returns
 * the counts of its events.
 */
static struct counts run_config(const char *fmt, ...)
{
	char text[8192];
	va_list ap;
	cJSON *root;
	struct tps_run_spec spec = {0};
	struct tps_model model;
	struct tps_tensor input, target = {0};
	struct tps_model_outcome sim, ref;
	struct counts counts = {0};
	struct tps_event_sink sink = {count, &counts};
	struct tps_error err = {0};
	struct tps_run_tolerance tol;
	struct tps_comparison cmp;
	bool with_target;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	for (char *p = text; *p; p++) {
		*p = *p == '\'' ? '"' : *p;
	}
	root = cJSON_Parse(text);
	ck_assert_msg(root != NULL, "bad JSON: %s", text);
	ck_assert_msg(tps_config_parse(root, "cfg.json", &spec, &err) == TPS_OK,
		      "%s\n%s", err.message, text);
	cJSON_Delete(root);
	/* tpsim run's: the config's tolerance (by its dtypes' defaults) for
	 * a tensor without a useful bound, slack only where given. */
	tol = (struct tps_run_tolerance){
		spec.atol, spec.rtol, spec.atol_given ? spec.atol : 0.0,
		spec.rtol_given ? spec.rtol : 0.0, TPS_RUN_USEFUL_BOUND};
	if (spec.model.pipeline.enabled) {
		counts.p = spec.model.pipeline.p;
		counts.m = spec.model.pipeline.microbatches;
	}
	with_target = spec.model.loss != TPS_LOSS_SUM;
	ck_assert_msg(tps_model_init(&model, &spec.model, &err) == TPS_OK, "%s",
		      err.message);
	ck_assert_int_eq(tps_model_make_input(&spec.model, &input, NULL),
			 TPS_OK);
	if (with_target) {
		ck_assert_int_eq(
			tps_model_make_target(&spec.model, &target, NULL),
			TPS_OK);
	}
	ck_assert_int_eq(tps_model_emit_setup(&model, sink, NULL), TPS_OK);
	ck_assert_msg(tps_model_run(&model, &input,
				    with_target ? &target : NULL, sink, &sim,
				    &err) == TPS_OK,
		      "%s\n%s", err.message, text);
	ck_assert_msg(tps_model_run_reference(
			      &model, &input, with_target ? &target : NULL,
			      (struct tps_bound_sink){0}, &ref, &err) == TPS_OK,
		      "%s", err.message);
	ck_assert_int_eq(
		tps_run_compare_outcomes(&model, &sim, &ref, &tol, &cmp, NULL),
		TPS_OK);
	if (!cmp.match && cmp.worst >= 0) {
		char words[1024];
		tps_run_describe_comparison(&cmp, words, sizeof words);
		printf("%s\n", words);
	}
	ck_assert_msg(cmp.match, "max_abs_diff %g for\n%s",
		      (double)cmp.max_abs_diff, text);
	tps_run_comparison_free(&cmp);
	counts.outcome_hash = tu_outcome_hash(&sim);
	tps_model_outcome_free(&sim);
	tps_model_outcome_free(&ref);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
	tps_model_free(&model);
	tps_run_spec_free(&spec);
	return counts;
}

/* Eight top-level modules: two colwise-relu-rowwise-relu pairs (6 -> 8
 * -> 6), so that up to 8 virtual stages each hold one. */
#define EIGHT                                                                  \
	"'model':[{'name':'fc1','type':'linear','in_features':6,"              \
	"'out_features':8},{'name':'a1','type':'relu'},{'name':'fc2','type':"  \
	"'linear','in_features':8,'out_features':6},{'name':'a2','type':"      \
	"'gelu'},{'name':'fc3','type':'linear','in_features':6,"               \
	"'out_features':8},{'name':'a3','type':'relu'},{'name':'fc4','type':"  \
	"'linear','in_features':8,'out_features':6},{'name':'a4','type':"      \
	"'relu'}],'plan':{'fc1':'colwise','fc2':'rowwise','fc3':'colwise',"    \
	"'fc4':'rowwise'}"

/* The (dp, pp, tp) mesh of the sweep, 2 rows per microbatch per dp rank,
 * training with `train`; `pipe` is ",'pipeline':{...}" or "". */
static struct counts sweep_run(int dp, int pp, int tp, int m, const char *train,
			       const char *pipe)
{
	return run_config("{'tpsim':1,'mesh':{'shape':[%d,%d,%d],'dim_names':"
			  "['dp','pp','tp']},'dp_dim':'dp'," EIGHT ","
			  "'input':{'shape':[%d,6]},'init':{'seed':3},"
			  "'mode':'training','steps':3,%s%s}",
			  dp, pp, tp, 2 * dp * m, train, pipe);
}

/* One sweep case against the same run without a pipeline (`plain`): the
 * checks of the file's comment. */
static void check_pipelined(const struct counts *got,
			    const struct counts *plain, int pp, int v, int m)
{
	/* Each boundary between two stages, once per microbatch each way,
	 * 3 steps. */
	int b = pp > 1 ? pp * v - 1 : 0;
	ck_assert_int_eq(got->unstaged, 0);
	ck_assert_int_eq(got->bad_stage, 0);
	ck_assert_int_eq(got->untimed, 0);
	for (int ph = TPS_PHASE_FORWARD; ph <= TPS_PHASE_BACKWARD; ph++) {
		ck_assert_int_eq(got->send[ph], 3 * m * b);
		ck_assert_int_eq(got->recv[ph], 3 * m * b);
		ck_assert_int_eq(got->recv_bytes[ph], 0);
		/* The modules' collectives, once per microbatch. */
		for (int op = 0; op < TPS_COMM_OP_COUNT; op++) {
			ck_assert_int_eq(got->collectives[ph][op],
					 m * plain->collectives[ph][op]);
		}
	}
	/* The optimizer's, once a step; 8 parameters summed over m, one
	 * event each a step. */
	for (int op = 0; op < TPS_COMM_OP_COUNT; op++) {
		ck_assert_int_eq(got->collectives[TPS_PHASE_OPTIMIZER][op],
				 plain->collectives[TPS_PHASE_OPTIMIZER][op]);
	}
	ck_assert_int_eq(got->accumulates, m > 1 ? 3 * 8 : 0);
}

START_TEST(pipeline_matches_reference_for_tp_dp_pp_1_to_4)
{
	/* pp = _i + 1; dp, tp 1-4, at most 16 ranks. With 3 microbatches
	 * (not a multiple of p), gpipe and 1f1b; with 2 p, those and
	 * interleaved_1f1b with v 2 (and 3 when 3 p chunks fit in the 8
	 * modules). The schedules of one m give the same bytes. */
	static const char *const optimizers[] = {
		"'optimizer':{'type':'sgd','lr':0.05,'momentum':0.9,"
		"'weight_decay':0.01}",
		"'optimizer':{'type':'adamw','lr':0.01}",
	};
	int pp = _i + 1;
	for (int dp = 1; dp <= 4; dp++) {
		for (int tp = 1; tp <= 4 && dp * pp * tp <= 16; tp++) {
			for (int o = 0; o < 2; o++) {
				for (int mi = 0; mi < 2; mi++) {
					int m = mi ? 2 * pp : 3;
					struct counts plain =
						sweep_run(dp, pp, tp, m,
							  optimizers[o], "");
					uint64_t hash = 0;
					for (int s = 0; s < 4; s++) {
						char pipe[256];
						struct counts got;
						int v = s < 2 ? 1 : s;
						if (v > 1 &&
						    (!mi || v * pp > 8)) {
							continue;
						}
						snprintf(
							pipe, sizeof pipe,
							",'pipeline':{'dim':"
							"'pp','microbatches':"
							"%d,'schedule':'%s'%s}",
							m,
							s == 0	 ? "gpipe"
							: s == 1 ? "1f1b"
								 : "interleaved"
								   "_1f1b",
							v == 1	 ? ""
							: v == 2 ? ",'virtual_"
								   "stages':2"
								 : ",'virtual_"
								   "stages':3");
						got = sweep_run(dp, pp, tp, m,
								optimizers[o],
								pipe);
						check_pipelined(&got, &plain,
								pp, v, m);
						if (s > 0) {
							ck_assert(
								got.outcome_hash ==
								hash);
						}
						hash = got.outcome_hash;
					}
				}
			}
		}
	}
}
END_TEST

START_TEST(send_and_recv_carry_the_activation_each_rank_holds)
{
	/* fc1 (4 -> 8, unplanned), relu, fc2 (8 -> 4) on (pp 2, tp 2), a
	 * batch of 4 in 2 microbatches: the even split puts fc1 (40
	 * parameters) and relu on stage 0, fc2 (36) on stage 1. Forward,
	 * each microbatch's act.out, replicated (2, 8) on every rank: 2 x 8
	 * x 4 = 64 bytes per rank; backward, fc2.in.grad, the same shape:
	 * 64. One send and one recv each way per microbatch. With fc1
	 * colwise, act.out stays shard(-1): (2, 4) a rank, 32 bytes. */
	static const char *const plans[2] = {"", ",'plan':{'fc1':'colwise',"
						 "'fc2':'rowwise'}"};
	for (int k = 0; k < 2; k++) {
		struct counts c = run_config(
			"{'tpsim':1,'mesh':{'shape':[2,2],'dim_names':['pp',"
			"'tp']},'model':[{'name':'fc1','type':'linear',"
			"'in_features':4,'out_features':8},{'name':'act',"
			"'type':'relu'},{'name':'fc2','type':'linear',"
			"'in_features':8,'out_features':4}]%s,'input':{"
			"'shape':[4,4]},'mode':'training','pipeline':{'dim':"
			"'pp','microbatches':2}}",
			plans[k]);
		int64_t bytes = k ? 32 : 64;
		for (int ph = 1; ph <= 2; ph++) {
			ck_assert_int_eq(c.send[ph], 2);
			ck_assert_int_eq(c.recv[ph], 2);
			ck_assert_int_eq(c.send_bytes[ph], 2 * bytes);
		}
	}
}
END_TEST

START_TEST(pipeline_matches_reference_with_the_other_training_keys)
{
	/* Each with the pipeline over 2 stages (or 4), against the
	 * reference: cross_entropy over class-sharded logits of a token
	 * model; the input's gradient; DistributedSampler; DDP's own
	 * losses; the sum loss; ZeRO 1, 2 and 3; full recompute of
	 * transformer blocks; bfloat16 storage with float32 master
	 * weights. */
	static const char *const extra[] = {
		"'input':{'shape':[8,6],'requires_grad':true}",
		"'input':{'shape':[8,6]},'sampler':'distributed'",
		"'input':{'shape':[8,6]},'dp_grad':'ddp'",
		"'input':{'shape':[8,6]},'loss':'sum'",
		"'input':{'shape':[8,6]},'zero':{'stage':1}",
		"'input':{'shape':[8,6]},'zero':{'stage':2}",
		"'input':{'shape':[8,6]},'zero':{'stage':3}",
		"'input':{'shape':[8,6]},'zero':{'stage':3,"
		"'reshard_after_forward':false}",
		"'input':{'shape':[8,6]},'optimizer':{'type':'adamw'},"
		"'dtype':{'default':'bfloat16','master_params':'float32'}",
	};
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
		run_config("{'tpsim':1,'mesh':{'shape':[2,2,2],'dim_names':["
			   "'dp','pp','tp']},'dp_dim':'dp'," EIGHT ",%s,"
			   "'mode':'training','steps':3,'pipeline':{'dim':"
			   "'pp','microbatches':2}}",
			   extra[i]);
	}
	/* A GPT-like token model: embedding, 2 blocks, layernorm, head,
	 * cross_entropy under loss_parallel, 1f1b over 4 stages. */
	run_config("{'tpsim':1,'mesh':{'shape':[4,2],'dim_names':['pp','tp']},"
		   "'model':[{'name':'wte','type':'embedding',"
		   "'num_embeddings':16,'embedding_dim':8},{'repeat':2,'name':"
		   "'b','module':{'type':'transformer_block','dim':8,"
		   "'num_heads':2}},{'name':'ln_f','type':'layernorm','dim':8},"
		   "{'name':'head','type':'linear','in_features':8,"
		   "'out_features':16,'bias':false}],'plan':{'wte':'vocab',"
		   "'b.*.attn.[qkv]':'colwise','b.*.attn.o':'rowwise',"
		   "'b.*.mlp.fc1':'colwise','b.*.mlp.fc2':'rowwise','head':"
		   "{'style':'colwise','output':'shard(-1)'}},'input':{'shape':"
		   "[4,3]},'mode':'training','steps':3,'loss':'cross_entropy',"
		   "'loss_parallel':true,'pipeline':{'dim':'pp',"
		   "'microbatches':4}}");
	/* Full recompute: blocks whole on each stage, interleaved. */
	run_config("{'tpsim':1,'mesh':{'shape':[2,2],'dim_names':['pp','tp']},"
		   "'model':[{'repeat':4,'name':'b','module':{'type':"
		   "'transformer_block','dim':8,'num_heads':2}}],'plan':{"
		   "'b.*.attn.[qkv]':'colwise','b.*.attn.o':'rowwise',"
		   "'b.*.mlp.fc1':'colwise','b.*.mlp.fc2':'rowwise'},'input':{"
		   "'shape':[4,3,8]},'mode':'training','steps':3,'recompute':"
		   "'full','pipeline':{'dim':'pp','microbatches':2,"
		   "'schedule':'interleaved_1f1b','virtual_stages':2}}");
}
END_TEST

/* examples/gpt3_175b/pipeline.json (symbolic), run on meta tensors into
 * c; *model keeps it (the caller frees it and spec). */
static void gpt3_pipeline(struct tps_run_spec *spec, struct tps_model *model,
			  struct counts *c)
{
	struct tps_tensor input = {0}, target = {0};
	struct tps_model_outcome out = {0};
	struct tps_event_sink sink = {count, c};
	struct tps_error err = {0};
	struct tps_shape t;
	ck_assert_msg(tps_config_load(tu_source_path("examples/gpt3_175b/"
						     "pipeline.json"),
				      spec, &err) == TPS_OK,
		      "%s", err.message);
	c->p = spec->model.pipeline.p;
	c->m = spec->model.pipeline.microbatches;
	t = tps_model_output_shape(&spec->model);
	t.ndim--; /* cross_entropy: a class id per row */
	ck_assert_msg(tps_model_init_meta(model, &spec->model, &err) == TPS_OK,
		      "%s", err.message);
	ck_assert_int_eq(
		tps_tensor_init_meta(&input, &spec->model.input_shape, NULL),
		TPS_OK);
	ck_assert_int_eq(tps_tensor_init_meta(&target, &t, NULL), TPS_OK);
	ck_assert_msg(tps_model_run(model, &input, &target, sink, &out, &err) ==
			      TPS_OK,
		      "%s", err.message);
	tps_model_outcome_free(&out);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
}

/* The parameter bytes rank r holds: its stage's parameters' blocks. */
static int64_t rank_param_bytes(const struct tps_model *model, int r)
{
	int64_t b = 0;
	for (int i = 0; i < model->n_params; i++) {
		const struct tps_param *p = &model->params[i];
		int k = tps_model_param_virtual_stage(model, p);
		if (k % model->spec->pipeline.p ==
		    tps_model_rank_stage(model, r)) {
			b += tps_tensor_numel(&p->value.locals[r]) * 4;
		}
	}
	return b;
}

START_TEST(gpt3_175b_on_tp_8_pp_8_v_3_symbolically)
{
	/* GPT-3 175B at tp 8 x pp 8, interleaved with v 3, 16 microbatches
	 * of one 2048-token sequence, on meta tensors (64 ranks). Each of
	 * the 23 boundaries between the 24 virtual stages, each microbatch,
	 * sends the residual stream forward and its gradient backward:
	 * (1, 2048, 12288) float32, replicated over tp after each block's
	 * rowwise fc2, 2048 x 12288 x 4 = 100663296 bytes per rank, and
	 * recvs 0. The parameters a tp rank holds on the 8 stages add up to
	 * what rank 0 of examples/gpt3_175b/config.json (tp 8 x dp 64, no
	 * pipeline) holds, and the footprint counts each rank's stage only:
	 * the last, with the head and the final layer norm besides 4
	 * blocks, holds the most. */
	struct tps_run_spec spec = {0}, spec1 = {0};
	struct tps_model model, model1;
	struct counts c = {0};
	struct tps_model_footprint fp;
	int64_t sum = 0, whole = 0;
	gpt3_pipeline(&spec, &model, &c);
	ck_assert_int_eq(c.p, 8);
	ck_assert_int_eq(c.unstaged, 0);
	for (int ph = TPS_PHASE_FORWARD; ph <= TPS_PHASE_BACKWARD; ph++) {
		ck_assert_int_eq(c.send[ph], 16 * 23);
		ck_assert_int_eq(c.recv[ph], 16 * 23);
		ck_assert_int_eq(c.send_bytes[ph],
				 (int64_t)16 * 23 * 2048 * 12288 * 4);
		ck_assert_int_eq(c.recv_bytes[ph], 0);
	}
	ck_assert_int_eq(tps_config_load(tu_source_path("examples/gpt3_175b/"
							"config.json"),
					 &spec1, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_model_init_meta(&model1, &spec1.model, NULL),
			 TPS_OK);
	for (int i = 0; i < model1.n_params; i++) {
		whole +=
			tps_tensor_numel(&model1.params[i].value.locals[0]) * 4;
	}
	for (int s = 0; s < 8; s++) {
		sum += rank_param_bytes(&model, s * 8);
	}
	ck_assert_int_eq(sum, whole);
	ck_assert_int_eq(tps_model_footprint(&model, &fp, NULL), TPS_OK);
	ck_assert_int_eq(fp.params.max, rank_param_bytes(&model, 56));
	ck_assert_int_eq(fp.params.max_rank, 56);
	ck_assert(fp.params.max < whole / 7);
	tps_model_free(&model);
	tps_model_free(&model1);
	tps_run_spec_free(&spec);
	tps_run_spec_free(&spec1);
}
END_TEST

static Suite *pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("values");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, pipeline_matches_reference_for_tp_dp_pp_1_to_4,
			    0, 4);
	tcase_add_test(tc, send_and_recv_carry_the_activation_each_rank_holds);
	tcase_add_test(tc,
		       pipeline_matches_reference_with_the_other_training_keys);
	suite_add_tcase(s, tc);
	tc = tcase_create("symbolic");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, gpt3_175b_on_tp_8_pp_8_v_3_symbolically);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(pipeline_suite());
}
