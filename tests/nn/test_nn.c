/*
 * nn: the modules under their styles, one event per step.
 *
 * These tests drive nn directly (no config, no model): they check which
 * events each style emits, in which layout each output lands, and that
 * errors keep their status.
 */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "module_type.h"
#include "config.h"
#include "model.h"
#include "nn.h"

/* A sink that logs "module op tensor [tp placement]" per event. */
struct recorder {
	char log[4096];
	size_t used;
};

static enum tps_status record(void *ctx, const struct tps_event *ev,
			      struct tps_error *err)
{
	struct recorder *r = ctx;
	char p[32];
	(void)err;
	r->used += (size_t)snprintf(
		r->log + r->used, sizeof r->log - r->used, "%s %s %s [%s]\n",
		ev->module, ev->op, ev->tensor,
		tps_placement_format(ev->value->placements[0], p, sizeof p));
	return TPS_OK;
}

static struct tps_mesh tp_mesh(int n)
{
	struct tps_mesh m;
	const char *names[1] = {"tp"};
	ck_assert_int_eq(tps_mesh_init(&m, 1, &n, names, NULL), TPS_OK);
	return m;
}

/* A (rows, cols) tensor of 1, 2, 3, ... */
static struct tps_tensor arange(int64_t rows, int64_t cols)
{
	struct tps_tensor t;
	int64_t dims[2] = {rows, cols};
	struct tps_shape s = tps_shape_make(2, dims);
	ck_assert_int_eq(tps_tensor_init(&t, &s, NULL), TPS_OK);
	for (int64_t i = 0; i < rows * cols; i++) {
		t.data[i] = (float)(i + 1);
	}
	return t;
}

START_TEST(redistribute_keeps_its_status_without_err)
{
	/* replicate -> partial is not a redistribution tpsim does: the status
	 * is TPS_ERR_UNSUPPORTED with or without an error to fill. */
	struct tps_mesh m = tp_mesh(2);
	struct tps_tensor g = arange(2, 4);
	struct tps_placement rep = tps_placement_replicate();
	struct tps_placement part = tps_placement_partial();
	struct tps_dtensor x;
	struct tps_nn_context ctx = {&m,
				     0,
				     {NULL, NULL},
				     0,
				     TPS_PHASE_FORWARD,
				     false,
				     0,
				     NULL,
				     {{0}},
				     TPS_SP_SAVE_SHARD,
				     NULL,
				     NULL,
				     TPS_RECOMPUTE_NONE};
	struct tps_error err = {0};

	ck_assert_int_eq(tps_dtensor_distribute(&x, &m, &g, &rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(
		tps_nn_redistribute(&ctx, &x, &part, "fc", "fc.in", NULL, NULL),
		TPS_ERR_UNSUPPORTED);
	ck_assert_int_eq(
		tps_nn_redistribute(&ctx, &x, &part, "fc", "fc.in", NULL, &err),
		TPS_ERR_UNSUPPORTED);
	ck_assert_str_eq(err.message,
			 "fc: fc.in: redistribute replicate -> partial on "
			 "mesh dim \"tp\" is not supported");
	/* The model output is module "output", tensor "output": named once
	 * (issue 15 item 11 had "output: output: ..."). */
	err = (struct tps_error){0};
	ck_assert_int_eq(tps_nn_redistribute(&ctx, &x, &part, "output",
					     "output", NULL, &err),
			 TPS_ERR_UNSUPPORTED);
	ck_assert_str_eq(err.message,
			 "output: redistribute replicate -> partial on "
			 "mesh dim \"tp\" is not supported");
	tps_dtensor_free(&x);
	tps_tensor_free(&g);
}
END_TEST

/* Whether key is a size read into the module spec's field at offset. */
static bool fills(const struct tps_module_key *key, size_t offset)
{
	return key && key->kind == TPS_KEY_SIZE && key->offset == offset;
}
#define IN  offsetof(struct tps_module_spec, in_features)
#define OUT offsetof(struct tps_module_spec, out_features)

/* The descriptor table has a complete row for every type, to
 * TPS_MODULE_TYPE_COUNT (not to a NULL that a missing row would put
 * early), and each row agrees with itself. */
START_TEST(every_module_type_has_a_complete_descriptor)
{
	for (int t = 0; t < TPS_MODULE_TYPE_COUNT; t++) {
		const struct tps_module_type_desc *d = &tps_module_types[t];
		const struct tps_module_ops *ops = d->ops;
		const struct tps_module_key *in, *out;
		int k = 0;

		ck_assert_msg(d->name != NULL, "type %d has no descriptor", t);
		ck_assert_int_eq(tps_module_type_named(d->name), t);
		ck_assert_ptr_eq(tps_module_ops_of((enum tps_module_type)t),
				 ops);
		ck_assert_msg(ops && ops->forward && ops->backward &&
				      ops->reference_forward &&
				      ops->reference_backward &&
				      ops->parameters && ops->memory_estimate,
			      "%s: incomplete ops", d->name);
		ck_assert_msg(d->styles != 0 && d->why_not != NULL,
			      "%s: no styles", d->name);
		/* A style the message names ("rowwise") is one it takes. */
		for (int st = 0; tps_style_names[st]; st++) {
			char quoted[32];
			snprintf(quoted, sizeof quoted, "\"%s\"",
				 tps_style_names[st]);
			ck_assert_msg(!strstr(d->why_not, quoted) ||
					      (d->styles & TPS_STYLE_BIT(st)),
				      "%s: names %s", d->name, quoted);
		}
		for (; k < TPS_MODULE_MAX_KEYS && d->keys[k].name; k++) {
			const struct tps_module_key *key = &d->keys[k];
			ck_assert_msg(
				key->kind != TPS_KEY_SIZE ||
					(key->min >= 1 && key->max >= key->min),
				"%s: %s", d->name, key->name);
			/* cfg_bool has no "missing". */
			ck_assert_msg(key->kind != TPS_KEY_BOOL ||
					      !key->required,
				      "%s: %s", d->name, key->name);
			ck_assert_ptr_eq(
				tps_module_key_named((enum tps_module_type)t,
						     key->name),
				key);
		}
		for (; k < TPS_MODULE_MAX_KEYS; k++) {
			ck_assert_ptr_null(d->keys[k].name);
		}
		/* The width rule against the keys it names: in_key fills
		 * in_features and out_key out_features (one key, both, for
		 * a type that needs the width). */
		in = d->in_key ? tps_module_key_named((enum tps_module_type)t,
						      d->in_key)
			       : NULL;
		out = d->out_key ? tps_module_key_named((enum tps_module_type)t,
							d->out_key)
				 : NULL;
		ck_assert_msg(!d->in_key || fills(in, IN), "%s", d->name);
		switch (d->width) {
		case TPS_WIDTH_KEEPS:
			ck_assert_msg(!in && !out, "%s", d->name);
			break;
		case TPS_WIDTH_CHANGES:
			ck_assert_msg(in && fills(out, OUT), "%s", d->name);
			break;
		case TPS_WIDTH_NEEDS:
			ck_assert_msg(in && out == in, "%s", d->name);
			break;
		case TPS_WIDTH_MAKES:
			ck_assert_msg(!in && fills(out, OUT), "%s", d->name);
			break;
		}
		/* Parts are of a type made of none. */
		if (tps_module_part_count((enum tps_module_type)t) > 0) {
			ck_assert_int_lt(d->part_type, TPS_MODULE_TYPE_COUNT);
			ck_assert_int_eq(tps_module_part_count(d->part_type),
					 0);
		}
	}
	ck_assert_int_eq(tps_module_type_named("transformer_block"), -1);
}
END_TEST

/* Each type has an ops table of its own (relu and gelu once shared one,
 * which switched on the type inside). */
START_TEST(every_module_type_has_an_ops_table_of_its_own)
{
	for (int t = 0; t < TPS_MODULE_TYPE_COUNT; t++) {
		for (int u = 0; u < t; u++) {
			ck_assert_msg(tps_module_ops_of((enum tps_module_type)t) !=
					      tps_module_ops_of(
						      (enum tps_module_type)u),
				      "types %d and %d share an ops table", u,
				      t);
		}
	}
}
END_TEST

/* A linear module "fc" of W = arange (out, in), no bias, under a style. */
struct linear_fixture {
	struct tps_mesh mesh;
	struct tps_module_spec spec;
	struct tps_param weight;
	struct tps_module module;
};

static void linear_fixture_init(struct linear_fixture *f, int tp,
				enum tps_style style, int64_t in, int64_t out,
				struct tps_placement output)
{
	struct tps_param_spec ps[TPS_MODULE_MAX_PARAMS];
	memset(f, 0, sizeof *f);
	f->mesh = tp_mesh(tp);
	snprintf(f->spec.name, sizeof f->spec.name, "fc");
	f->spec.type = TPS_MODULE_LINEAR;
	f->spec.in_features = in;
	f->spec.out_features = out;
	f->spec.style = style;
	f->spec.planned = true;
	f->spec.input = style == TPS_STYLE_ROWWISE ? tps_placement_shard(-1)
						   : tps_placement_replicate();
	f->spec.output = output;
	f->module.spec = &f->spec;
	f->module.ops = tps_module_ops_of(TPS_MODULE_LINEAR);
	ck_assert_int_eq(f->module.ops->parameters(&f->spec, 0, ps), 1);
	snprintf(f->weight.name, sizeof f->weight.name, "fc.weight");
	f->weight.module = f->spec.name;
	f->weight.global = arange(out, in);
	ck_assert_int_eq(tps_dtensor_distribute(&f->weight.value, &f->mesh,
						&f->weight.global, &ps[0].tp,
						NULL),
			 TPS_OK);
	f->module.params = &f->weight;
	f->module.n_params = 1;
}

static void linear_fixture_free(struct linear_fixture *f)
{
	tps_tensor_free(&f->weight.global);
	tps_dtensor_free(&f->weight.value);
}

START_TEST(colwise_gather_output_is_a_matmul_then_an_all_gather)
{
	/* ColumnParallelLinear(gather_output=True): each rank computes its
	 * output columns, then one all_gather along the last dim. */
	struct linear_fixture f;
	struct recorder rec = {0};
	struct tps_placement rep = tps_placement_replicate();
	struct tps_tensor g = arange(2, 4), full;
	struct tps_dtensor x, y;
	struct tps_nn_context ctx;
	linear_fixture_init(&f, 2, TPS_STYLE_COLWISE, 4, 3, rep);
	ctx = (struct tps_nn_context){&f.mesh,
				      0,
				      {record, &rec},
				      0,
				      TPS_PHASE_FORWARD,
				      false,
				      0,
				      NULL,
				      {{0}},
				      TPS_SP_SAVE_SHARD,
				      NULL,
				      NULL,
				      TPS_RECOMPUTE_NONE};
	ck_assert_int_eq(tps_dtensor_distribute(&x, &f.mesh, &g, &rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(f.module.ops->forward(&ctx, &f.module, &x, &y, NULL),
			 TPS_OK);
	ck_assert_str_eq(rec.log, "fc matmul fc.out [shard(1)]\n"
				  "fc all_gather fc.out [replicate]\n");
	/* 3 columns over 2 ranks: 2 and 1. */
	ck_assert_int_eq(y.locals[0].shape.dim[1], 3);
	ck_assert_int_eq(tps_dtensor_full_tensor(&y, &full, NULL), TPS_OK);
	/* x row 0 = [1,2,3,4], W row 2 = [9,10,11,12]: 9+20+33+48 = 110. */
	ck_assert_float_eq(full.data[2], 110.0f);
	tps_tensor_free(&full);
	tps_dtensor_free(&x);
	tps_dtensor_free(&y);
	tps_tensor_free(&g);
	linear_fixture_free(&f);
}
END_TEST

START_TEST(rowwise_of_a_replicated_input_splits_it_locally)
{
	/* RowParallelLinear(input_is_parallel=False): the input is split
	 * without communication, partial sums are all-reduced. */
	struct linear_fixture f;
	struct recorder rec = {0};
	struct tps_placement rep = tps_placement_replicate();
	struct tps_tensor g = arange(2, 4);
	struct tps_dtensor x, y;
	struct tps_nn_context ctx;
	linear_fixture_init(&f, 2, TPS_STYLE_ROWWISE, 4, 2, rep);
	ctx = (struct tps_nn_context){&f.mesh,
				      0,
				      {record, &rec},
				      0,
				      TPS_PHASE_FORWARD,
				      false,
				      0,
				      NULL,
				      {{0}},
				      TPS_SP_SAVE_SHARD,
				      NULL,
				      NULL,
				      TPS_RECOMPUTE_NONE};
	ck_assert_int_eq(tps_dtensor_distribute(&x, &f.mesh, &g, &rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(f.module.ops->forward(&ctx, &f.module, &x, &y, NULL),
			 TPS_OK);
	ck_assert_str_eq(rec.log, "fc split fc.in [shard(1)]\n"
				  "fc matmul fc.out [partial]\n"
				  "fc all_reduce fc.out [replicate]\n");
	/* The seed's hand check: [[30,70],[70,174]] on both ranks. */
	ck_assert_float_eq(y.locals[1].data[3], 174.0f);
	tps_dtensor_free(&x);
	tps_dtensor_free(&y);
	tps_tensor_free(&g);
	linear_fixture_free(&f);
}
END_TEST

START_TEST(activation_of_a_partial_input_reduces_first)
{
	/* relu(a + b) != relu(a) + relu(b): a partial input is all-reduced
	 * before relu, and relu keeps the replicated layout. */
	struct tps_mesh m = tp_mesh(2);
	struct recorder rec = {0};
	struct tps_placement part = tps_placement_partial();
	struct tps_module_spec spec = {0};
	struct tps_module mod = {0};
	struct tps_tensor g = arange(1, 2);
	struct tps_dtensor x, y;
	struct tps_nn_context ctx = {&m,
				     0,
				     {record, &rec},
				     0,
				     TPS_PHASE_FORWARD,
				     false,
				     0,
				     NULL,
				     {{0}},
				     TPS_SP_SAVE_SHARD,
				     NULL,
				     NULL,
				     TPS_RECOMPUTE_NONE};
	snprintf(spec.name, sizeof spec.name, "act");
	spec.type = TPS_MODULE_RELU;
	mod.spec = &spec;
	mod.ops = tps_module_ops_of(TPS_MODULE_RELU);
	/* rank 0 holds [1, 2], rank 1 zeros: the sum is [1, 2]; make rank
	 * 1 hold [-3, 5] so the partial sum is [-2, 7]. */
	ck_assert_int_eq(tps_dtensor_distribute(&x, &m, &g, &part, NULL),
			 TPS_OK);
	x.locals[1].data[0] = -3.0f;
	x.locals[1].data[1] = 5.0f;
	ck_assert_int_eq(mod.ops->forward(&ctx, &mod, &x, &y, NULL), TPS_OK);
	ck_assert_str_eq(rec.log, "act all_reduce act.in [replicate]\n"
				  "act relu act.out [replicate]\n");
	ck_assert_float_eq(y.locals[0].data[0], 0.0f);
	ck_assert_float_eq(y.locals[0].data[1], 7.0f);
	tps_dtensor_free(&x);
	tps_dtensor_free(&y);
	tps_tensor_free(&g);
}
END_TEST

/* A dtensor of ones of shape (rows, cols) with the given tp placement. */
static struct tps_dtensor ones(const struct tps_mesh *m, int64_t rows,
			       int64_t cols, struct tps_placement p)
{
	struct tps_tensor g = arange(rows, cols);
	struct tps_dtensor d;
	for (int64_t i = 0; i < rows * cols; i++) {
		g.data[i] = 1.0f;
	}
	ck_assert_int_eq(tps_dtensor_distribute(&d, m, &g, &p, NULL), TPS_OK);
	tps_tensor_free(&g);
	return d;
}

START_TEST(colwise_backward_reduces_the_partial_input_gradient)
{
	/* ColumnParallelLinear(gather_output=True), trained: the output's
	 * gradient is split back without communication; dW_i = dY_i^T X is
	 * local; dX = sum_i dY_i W_i is partial, and all_reduce makes it the
	 * input's (Megatron's f in backward). With x = arange (2, 4), W =
	 * arange (3, 4) and dY all ones: dW rows = [6, 8, 10, 12] (column
	 * sums of x), dX rows = [15, 18, 21, 24] (column sums of W). */
	struct linear_fixture f;
	struct recorder rec = {0};
	struct tps_placement rep = tps_placement_replicate();
	struct tps_tensor g = arange(2, 4), dw, dxg;
	struct tps_dtensor x, y, dy, dx;
	struct tps_nn_context ctx;
	const float want_dw[4] = {6, 8, 10, 12}, want_dx[4] = {15, 18, 21, 24};
	linear_fixture_init(&f, 2, TPS_STYLE_COLWISE, 4, 3, rep);
	ctx = (struct tps_nn_context){&f.mesh,
				      0,
				      {record, &rec},
				      0,
				      TPS_PHASE_FORWARD,
				      true,
				      0,
				      NULL,
				      {{0}},
				      TPS_SP_SAVE_SHARD,
				      NULL,
				      NULL,
				      TPS_RECOMPUTE_NONE};
	ck_assert_int_eq(tps_dtensor_distribute(&x, &f.mesh, &g, &rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(f.module.ops->forward(&ctx, &f.module, &x, &y, NULL),
			 TPS_OK);
	rec.used = 0;
	rec.log[0] = '\0';
	ctx.phase = TPS_PHASE_BACKWARD;
	dy = ones(&f.mesh, 2, 3, rep);
	ck_assert_int_eq(
		f.module.ops->backward(&ctx, &f.module, &dy, &dx, NULL),
		TPS_OK);
	ck_assert_str_eq(rec.log, "fc split fc.out.grad [shard(1)]\n"
				  "fc matmul fc.weight.grad [shard(0)]\n"
				  "fc matmul fc.in.grad [partial]\n"
				  "fc all_reduce fc.in.grad [replicate]\n");
	ck_assert_int_eq(tps_dtensor_full_tensor(&f.weight.grad, &dw, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_dtensor_full_tensor(&dx, &dxg, NULL), TPS_OK);
	for (int j = 0; j < 3; j++) {
		ck_assert_mem_eq(dw.data + 4 * j, want_dw, sizeof want_dw);
	}
	for (int r = 0; r < 2; r++) {
		ck_assert_mem_eq(dxg.data + 4 * r, want_dx, sizeof want_dx);
	}
	/* backward freed what forward saved. */
	ck_assert_ptr_null(f.module.saved_in.locals);
	tps_tensor_free(&dw);
	tps_tensor_free(&dxg);
	tps_dtensor_free(&dx);
	tps_dtensor_free(&x);
	tps_dtensor_free(&y);
	tps_dtensor_free(&f.weight.grad);
	tps_tensor_free(&g);
	linear_fixture_free(&f);
}
END_TEST

START_TEST(rowwise_backward_gathers_a_locally_split_input)
{
	/* RowParallelLinear of a replicated input, trained: nothing for the
	 * all_reduced output; dW_i = dY^T X_i local; dX_i = dY W_i is the
	 * input's features split as X was; a locally split input gathers
	 * its gradient back. */
	struct linear_fixture f;
	struct recorder rec = {0};
	struct tps_placement rep = tps_placement_replicate();
	struct tps_tensor g = arange(2, 4);
	struct tps_dtensor x, y, dy, dx;
	struct tps_nn_context ctx;
	linear_fixture_init(&f, 2, TPS_STYLE_ROWWISE, 4, 2, rep);
	ctx = (struct tps_nn_context){&f.mesh,
				      0,
				      {record, &rec},
				      0,
				      TPS_PHASE_FORWARD,
				      true,
				      0,
				      NULL,
				      {{0}},
				      TPS_SP_SAVE_SHARD,
				      NULL,
				      NULL,
				      TPS_RECOMPUTE_NONE};
	ck_assert_int_eq(tps_dtensor_distribute(&x, &f.mesh, &g, &rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(f.module.ops->forward(&ctx, &f.module, &x, &y, NULL),
			 TPS_OK);
	rec.used = 0;
	rec.log[0] = '\0';
	ctx.phase = TPS_PHASE_BACKWARD;
	dy = ones(&f.mesh, 2, 2, rep);
	ck_assert_int_eq(
		f.module.ops->backward(&ctx, &f.module, &dy, &dx, NULL),
		TPS_OK);
	ck_assert_str_eq(rec.log, "fc matmul fc.weight.grad [shard(1)]\n"
				  "fc matmul fc.in.grad [shard(1)]\n"
				  "fc all_gather fc.in.grad [replicate]\n");
	tps_dtensor_free(&dx);
	tps_dtensor_free(&x);
	tps_dtensor_free(&y);
	tps_dtensor_free(&f.weight.grad);
	tps_tensor_free(&g);
	linear_fixture_free(&f);
}
END_TEST

/*
 * loss_parallel's cross-entropy is an nn operation: driven here without a
 * model. Logits (2 rows, 4 classes) over tp = 2, rank 0 holding classes
 * 0-1 and rank 1 classes 2-3; row 0 is [0, 0, 0, 0] with target 2, row 1
 * [1, 0, 0, 0] with target 0; each row weighs 1/2 (the mean). By hand:
 *   row 0: M = 0, S = 4, Z = 0: loss log 4
 *   row 1: M = 1, S = 1 + 3/e, Z = 1: loss log(1 + 3/e)
 *   loss = (log 4 + log(1 + 3/e)) / 2 = 1.06498137
 *   dz row 0 = ([1, 1, 1, 1] / 4 - onehot(2)) / 2
 *            = [0.125, 0.125, -0.375, 0.125]
 *   dz row 1 = ([1, 1/e, 1/e, 1/e] / S - onehot(0)) / 2
 *            = [-0.26231656, 0.08743885, 0.08743885, 0.08743885]
 * on every rank, each on its own classes; three all_reduces, no backward
 * collective.
 */
START_TEST(loss_parallel_reduces_three_statistics_and_no_gradient)
{
	struct tps_mesh m = tp_mesh(2);
	struct recorder rec = {0};
	struct tps_placement shard = tps_placement_shard(1);
	struct tps_placement rep = tps_placement_replicate();
	struct tps_tensor logits = arange(2, 4), ids = arange(1, 2);
	struct tps_dtensor y, t, loss = {0}, dy = {0};
	struct tps_nn_context ctx = {&m,
				     0,
				     {record, &rec},
				     3,
				     TPS_PHASE_FORWARD,
				     false,
				     0,
				     NULL,
				     {{0}},
				     TPS_SP_SAVE_SHARD,
				     NULL,
				     NULL,
				     TPS_RECOMPUTE_NONE};
	const double scale[2] = {0.5, 0.5};
	const float want[2][4] = {{0.125f, 0.125f, -0.375f, 0.125f},
				  {-0.26231656f, 0.08743885f, 0.08743885f,
				   0.08743885f}};
	double losses[2] = {0, 0};
	struct tps_error err = {0};
	float most = 0.0f;

	for (int i = 0; i < 8; i++) {
		logits.data[i] = i == 4 ? 1.0f : 0.0f;
	}
	ids.data[0] = 2.0f;
	ids.data[1] = 0.0f;
	ck_assert_int_eq(tps_dtensor_distribute(&y, &m, &logits, &shard, NULL),
			 TPS_OK);
	ids.shape = tps_shape_make(1, (int64_t[]){2});
	ck_assert_int_eq(tps_dtensor_distribute(&t, &m, &ids, &rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_nn_loss_parallel(&ctx, &y, &t, scale, 0u, 0, &loss,
					      losses, &dy, &err),
			 TPS_OK);
	ck_assert_str_eq(rec.log,
			 "loss all_reduce loss.max [replicate]\n"
			 "loss sum_exp loss.sum_exp [partial]\n"
			 "loss all_reduce loss.sum_exp [replicate]\n"
			 "loss target_logit loss.target_logit [partial]\n"
			 "loss all_reduce loss.target_logit [replicate]\n"
			 "loss cross_entropy loss [replicate]\n"
			 "loss cross_entropy_backward output.grad "
			 "[shard(1)]\n");
	for (int r = 0; r < 2; r++) {
		ck_assert(fabs(losses[r] - 1.0649813708742848) < 1e-6);
		ck_assert(fabsf(loss.locals[r].data[0] - 1.06498137f) < 1e-6f);
		for (int i = 0; i < 2; i++) {
			for (int j = 0; j < 2; j++) {
				float got = dy.locals[r].data[i * 2 + j];
				float d = fabsf(got - want[i][2 * r + j]);
				most = d > most ? d : most;
			}
		}
	}
	printf("loss_parallel: max difference of dz %g\n", (double)most);
	ck_assert(most < 1e-6f);
	ck_assert(tps_placement_equal(dy.placements[0], shard));
	tps_dtensor_free(&y);
	tps_dtensor_free(&t);
	tps_dtensor_free(&loss);
	tps_dtensor_free(&dy);
	tps_tensor_free(&logits);
	tps_tensor_free(&ids);
}
END_TEST

/* A sink that fails at its event number `fail_at`, remembering that
 * event's module and phase. */
struct failing_sink {
	int seen, fail_at;
	char module[TPS_NAME_MAX];
	enum tps_phase phase;
};

static enum tps_status fail_at(void *ctx, const struct tps_event *ev,
			       struct tps_error *err)
{
	struct failing_sink *f = ctx;
	if (f->seen++ < f->fail_at) {
		return TPS_OK;
	}
	snprintf(f->module, sizeof f->module, "%s", ev->module);
	f->phase = ev->phase;
	return tps_error_set(err, TPS_ERR_IO, "the sink fails at event %d",
			     f->fail_at);
}

/* Whether a module holds nothing a forward saves: no input, no layout
 * chains, nothing more (attention's q, k, v). */
static bool holds_nothing(const struct tps_module *m)
{
	bool empty = !m->saved_in.locals && m->in_chain.n == 0 &&
		     m->out_chain.n == 0 && m->prep_chain.n == 0;
	for (int i = 0; i < 3; i++) {
		empty = empty && !m->saved_more[i].locals;
	}
	return empty;
}

/*
 * The forward epilogue is one function (tps_nn_forward_end): a forward
 * that fails leaves its module and every module inside it holding nothing
 * saved, whatever its type and wherever it fails. Every module type
 * (embedding, a transformer block's residuals, layernorms, attention,
 * linears and gelu, relu) is run in training, two steps, with the sink
 * failing at each event in turn; after a failure in a module's forward,
 * the top-level module that contains it and every module after it hold
 * nothing (the modules before it keep what they saved for backward, until
 * the model is freed).
 */
START_TEST(a_failed_forward_leaves_its_modules_holding_nothing)
{
	static const char config[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": ["
		"{\"name\": \"tok\", \"type\": \"embedding\", "
		"\"num_embeddings\": 8, \"embedding_dim\": 4},"
		"{\"name\": \"blk\", \"type\": \"transformer_block\", \"dim\": "
		"4, \"num_heads\": 2, \"hidden\": 8},"
		"{\"name\": \"act\", \"type\": \"relu\"},"
		"{\"name\": \"norm\", \"type\": \"layernorm\", \"dim\": 4},"
		"{\"name\": \"out\", \"type\": \"linear\", \"in_features\": 4, "
		"\"out_features\": 8}],"
		"\"plan\": {\"tok\": \"vocab\", \"blk.attn.[qkv]\": "
		"\"colwise\", \"blk.attn.o\": \"rowwise\", \"blk.mlp.fc1\": "
		"\"colwise\", \"blk.mlp.fc2\": \"rowwise\", \"out\": "
		"\"colwise\"},"
		"\"input\": {\"shape\": [2, 3], \"init\": \"tokens\", \"seed\": "
		"1}, \"mode\": \"training\", \"steps\": 2, \"loss\": "
		"\"cross_entropy\"}";
	struct tps_run_spec spec = {0};
	struct tps_error err = {0};
	cJSON *root = cJSON_Parse(config);
	int failures = 0;
	bool done = false;

	ck_assert_ptr_nonnull(root);
	ck_assert_msg(tps_config_parse(root, "c.json", &spec, &err) == TPS_OK,
		      "%s", err.message);
	for (int k = 0; !done; k++) {
		const struct tps_model_spec *ms = &spec.model;
		struct failing_sink f = {0, k, "", TPS_PHASE_SETUP};
		struct tps_event_sink sink = {fail_at, &f};
		struct tps_model model = {0};
		struct tps_tensor input = {0}, target = {0};
		struct tps_model_outcome out = {0};
		int top = -1;
		enum tps_status st;

		ck_assert_int_eq(tps_model_init(&model, ms, &err), TPS_OK);
		ck_assert_int_eq(tps_model_make_input(ms, &input, &err),
				 TPS_OK);
		ck_assert_int_eq(tps_model_make_target(ms, &target, &err),
				 TPS_OK);
		st = tps_model_run(&model, &input, &target, sink, &out, &err);
		done = st == TPS_OK;
		/* The top-level module whose forward the failing event is
		 * part of (none for the input, the output, the loss). */
		for (int i = 0; !done && f.phase == TPS_PHASE_FORWARD &&
				i < ms->n_modules;
		     i = (int)(tps_module_next(&model.modules[i]) -
			       model.modules)) {
			struct tps_module *m = &model.modules[i];
			for (struct tps_module *d = m; d < tps_module_next(m);
			     d++) {
				if (strcmp(d->spec->name, f.module) == 0) {
					top = i;
				}
			}
		}
		for (int i = top; top >= 0 && i < ms->n_modules; i++) {
			ck_assert_msg(holds_nothing(&model.modules[i]),
				      "failing at event %d (%s's forward): "
				      "%s still holds what it saved",
				      k, f.module, model.modules[i].spec->name);
		}
		failures += top >= 0;
		tps_model_outcome_free(&out);
		tps_tensor_free(&input);
		tps_tensor_free(&target);
		tps_model_free(&model);
	}
	printf("forward failures checked: %d\n", failures);
	ck_assert_int_gt(failures, 40);
	tps_run_spec_free(&spec);
	cJSON_Delete(root);
}
END_TEST

/* The last event a sink saw: its kind, op, step, phase and mistake. */
struct last_event {
	enum tps_event_kind kind;
	char op[32], mistake[64];
	int step;
	enum tps_phase phase;
};

static enum tps_status keep_last(void *ctx, const struct tps_event *ev,
				 struct tps_error *err)
{
	struct last_event *l = ctx;
	(void)err;
	l->kind = ev->kind;
	snprintf(l->op, sizeof l->op, "%s", ev->op);
	snprintf(l->mistake, sizeof l->mistake, "%s",
		 ev->mistake ? ev->mistake : "(none)");
	l->step = ev->step;
	l->phase = ev->phase;
	return TPS_OK;
}

/* The two ways a mistake emits (one any event, one a compute event, as
 * tps_nn_emit_compute does) both carry the mistake's name, ctx's step and
 * phase; an ordinary compute event carries none. */
START_TEST(mistaken_events_carry_the_mistakes_name)
{
	struct tps_mesh m = tp_mesh(2);
	struct last_event last = {0};
	struct tps_tensor g = arange(1, 2);
	struct tps_placement rep = tps_placement_replicate();
	struct tps_dtensor v;
	struct tps_nn_context ctx = {&m,
				     0,
				     {keep_last, &last},
				     2,
				     TPS_PHASE_BACKWARD,
				     false,
				     TPS_MISTAKE_SKIP_GATHER,
				     NULL,
				     {{0}},
				     TPS_SP_SAVE_SHARD,
				     NULL,
				     NULL,
				     TPS_RECOMPUTE_NONE};
	struct tps_event ev = {0};

	ck_assert_int_eq(tps_dtensor_distribute(&v, &m, &g, &rep, NULL),
			 TPS_OK);
	ev.module = "fc";
	ev.kind = TPS_EVENT_LAYOUT;
	ev.op = "split";
	ev.tensor = "fc.out";
	ev.value = &v;
	ck_assert_int_eq(tps_nn_emit_mistaken_event(&ctx, &ev, NULL), TPS_OK);
	ck_assert_int_eq(last.kind, TPS_EVENT_LAYOUT);
	ck_assert_str_eq(last.op, "split");
	ck_assert_str_eq(last.mistake, "skip_gather");
	ck_assert_int_eq(last.step, 2);
	ck_assert_int_eq(last.phase, TPS_PHASE_BACKWARD);
	ck_assert_int_eq(tps_nn_emit_mistaken_compute(&ctx, "fc",
						      "skip_all_gather",
						      "fc.out", NULL, &v, NULL),
			 TPS_OK);
	ck_assert_int_eq(last.kind, TPS_EVENT_COMPUTE);
	ck_assert_str_eq(last.op, "skip_all_gather");
	ck_assert_str_eq(last.mistake, "skip_gather");
	ck_assert_int_eq(tps_nn_emit_compute(&ctx, "fc", "matmul", "fc.out",
					     NULL, &v, 0, NULL),
			 TPS_OK);
	ck_assert_str_eq(last.mistake, "(none)");
	tps_dtensor_free(&v);
	tps_tensor_free(&g);
}
END_TEST

static Suite *nn_suite(void)
{
	Suite *s = suite_create("nn");
	TCase *layout = tcase_create("layout");
	TCase *modules = tcase_create("modules");
	tcase_add_test(layout, redistribute_keeps_its_status_without_err);
	tcase_add_test(modules, every_module_type_has_a_complete_descriptor);
	tcase_add_test(modules, every_module_type_has_an_ops_table_of_its_own);
	tcase_add_test(modules,
		       colwise_gather_output_is_a_matmul_then_an_all_gather);
	tcase_add_test(modules,
		       rowwise_of_a_replicated_input_splits_it_locally);
	tcase_add_test(modules, activation_of_a_partial_input_reduces_first);
	tcase_add_test(modules,
		       colwise_backward_reduces_the_partial_input_gradient);
	tcase_add_test(modules, rowwise_backward_gathers_a_locally_split_input);
	tcase_add_test(modules,
		       loss_parallel_reduces_three_statistics_and_no_gradient);
	tcase_add_test(modules,
		       a_failed_forward_leaves_its_modules_holding_nothing);
	tcase_add_test(modules, mistaken_events_carry_the_mistakes_name);
	suite_add_tcase(s, layout);
	suite_add_tcase(s, modules);
	return s;
}

int main(void)
{
	return tu_run_suite(nn_suite());
}
