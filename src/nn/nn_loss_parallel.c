/*
 * Cross-entropy over class-sharded logits: PyTorch's loss_parallel
 * (nn.h, tps_nn_loss_parallel; docs/design.md section 2). The logits stay
 * sharded over their classes; three statistics per row, each completed by
 * one all_reduce over tp, give every rank the loss, and every rank then
 * computes the gradient of its own classes with no backward collective.
 */
#include <math.h>

#include "comm.h"
#include "nn.h"

/*
 * Per row of rank r's logits z (rows, C_r; classes from `first`): M the max
 * over all classes, S the sum of exp(z - M), Z the target's logit; each
 * made from the ranks' own classes and completed by an all_reduce over tp
 * (max, sum, sum), as PyTorch's loss_parallel does. Then
 *
 *   loss_row = M + log S - Z,   dz = scale (exp(z - M) / S - onehot(t))
 *
 * which every rank computes for its own classes: no backward collective.
 */
struct parallel_ce_job {
	const struct tps_dtensor *y, *target;
	struct tps_dtensor *max, *sum_exp, *logit; /* (rows) per rank */
	const double *scale; /* per rank: the weight of each of its rows */
	double *losses;	     /* per rank: its loss */
	int64_t classes;     /* the real classes; 0: all of them */
};

/*
 * How many of rank r's n classes (from `first`) are real: under a padded
 * vocabulary the classes from ce->classes on are padding, whose logits
 * count as -inf (out of M, S and Z; a rank that holds only padding has
 * M_r = -inf and S_r = 0) and whose gradient is 0.
 */
static int64_t own_real_classes(const struct parallel_ce_job *ce, int64_t n,
				int64_t first)
{
	if (ce->classes <= 0 || first + n <= ce->classes) {
		return n;
	}
	return first < ce->classes ? ce->classes - first : 0;
}

/* The first class of rank r's logits. */
static int64_t first_class(const struct tps_dtensor *y, int r)
{
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	tps_dtensor_local_region(y->mesh, &y->global, y->placements, r, offset,
				 length);
	return offset[y->global.ndim - 1];
}

/* Which of the three statistics a pass makes. */
enum ce_stat { CE_MAX, CE_SUM_EXP, CE_LOGIT };

struct ce_stat_job {
	struct parallel_ce_job *ce;
	enum ce_stat stat;
};

static enum tps_status ce_stat_rank(void *opaque, int r, struct tps_tensor *out,
				    struct tps_error *err)
{
	const struct ce_stat_job *job = opaque;
	const struct parallel_ce_job *ce = job->ce;
	const struct tps_tensor *z = &ce->y->locals[r];
	int64_t stride = z->shape.dim[z->shape.ndim - 1];
	int64_t rows = tps_loss_rows(z), first = first_class(ce->y, r);
	int64_t n = own_real_classes(ce, stride, first);
	struct tps_shape shape = z->shape;
	enum tps_status st;
	shape.ndim--;
	st = tps_tensor_init_like(out, &shape, z, err);
	for (int64_t i = 0; st == TPS_OK && out->data && i < rows; i++) {
		/* A rank with no classes (n == 0) has no data: NULL + 0 is
		 * undefined, so no row pointer into it. */
		const float *zi = n > 0 ? z->data + i * stride : NULL;
		double v = 0.0;
		switch (job->stat) {
		case CE_MAX:
			/* No classes here: -inf, which the max ignores. */
			v = -INFINITY;
			for (int64_t j = 0; j < n; j++) {
				v = zi[j] > v ? zi[j] : v;
			}
			break;
		case CE_SUM_EXP:
			for (int64_t j = 0; j < n; j++) {
				v += exp((double)zi[j] -
					 ce->max->locals[r].data[i]);
			}
			break;
		case CE_LOGIT: {
			int64_t t =
				(int64_t)ce->target->locals[r].data[i] - first;
			v = t >= 0 && t < n ? zi[t] : 0.0;
			break;
		}
		}
		out->data[i] = (float)v;
	}
	return st;
}

/* One statistic: made on every rank, emitted (the sums, as the partial
 * sums they are), then all-reduced over tp and emitted again. */
static enum tps_status ce_stat(const struct tps_nn_context *ctx,
			       struct parallel_ce_job *ce, enum ce_stat stat,
			       struct tps_dtensor *out, struct tps_error *err)
{
	static const char *const names[] = {"loss.max", "loss.sum_exp",
					    "loss.target_logit"};
	static const char *const local_notes[] = {
		NULL,
		"S_i = sum over rank i's classes of exp(z - M): partial sums",
		"Z_i = z[target] if rank i holds the target class, else 0: "
		"partial sums"};
	static const char *const reduced_notes[] = {
		"M = the max over the tp ranks of each rank's max over its "
		"classes (an all_reduce with max)",
		"S = sum_i S_i",
		"Z = sum_i Z_i: the target's logit, from the "
		"rank that holds it"};
	const struct tps_mesh *mesh = ctx->mesh;
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_shape global = ce->y->global;
	struct ce_stat_job job = {ce, stat};
	struct tps_comm_report report;
	struct tps_event ev = {0};
	enum tps_status st;

	global.ndim--;
	for (int i = 0; i < mesh->ndim; i++) {
		placements[i] = ce->y->placements[i];
	}
	placements[ctx->tp_dim] = tps_placement_partial();
	st = tps_dtensor_map(out, mesh, &global, placements, ce_stat_rank, &job,
			     err);
	if (st == TPS_OK && local_notes[stat]) {
		st = tps_nn_emit_compute(
			ctx, "loss",
			stat == CE_SUM_EXP ? "sum_exp" : "target_logit",
			names[stat], local_notes[stat], out, 0, err);
	}
	if (mesh->shape[ctx->tp_dim] == 1) {
		/* One rank holds every class: nothing to reduce. */
		out->placements[ctx->tp_dim] = tps_placement_replicate();
		return st;
	}
	if (st == TPS_OK) {
		/* The loss's statistics are float32 whatever the dtypes
		 * (spec.h: the loss is computed in float32). */
		st = tps_comm_all_reduce(mesh, 1u << ctx->tp_dim, out->locals,
					 stat == CE_MAX ? TPS_REDUCE_MAX
							: TPS_REDUCE_SUM,
					 TPS_COMM_F32, &report, err);
	}
	if (st == TPS_OK) {
		out->placements[ctx->tp_dim] = tps_placement_replicate();
		ev.module = "loss";
		ev.kind = TPS_EVENT_COLLECTIVE;
		ev.op = "all_reduce";
		ev.tensor = names[stat];
		ev.mask = 1u << ctx->tp_dim;
		ev.bytes_per_rank = report.bytes_per_rank;
		ev.note = reduced_notes[stat];
		ev.value = out;
		ev.step = ctx->step;
		ev.phase = ctx->phase;
		st = tps_event_emit(ctx->sink, &ev, err);
	}
	return st;
}

static enum tps_status parallel_ce_loss_rank(void *opaque, int r,
					     struct tps_tensor *out,
					     struct tps_error *err)
{
	const struct parallel_ce_job *ce = opaque;
	struct tps_shape scalar = tps_shape_make(0, NULL);
	const struct tps_tensor *m = &ce->max->locals[r];
	int64_t rows = tps_loss_rows(&ce->y->locals[r]);
	double scale = ce->scale[r], total = 0.0;
	enum tps_status st =
		tps_tensor_init_like(out, &scalar, &ce->y->locals[r], err);
	for (int64_t i = 0; st == TPS_OK && out->data && i < rows; i++) {
		total += scale * ((double)m->data[i] +
				  log((double)ce->sum_exp->locals[r].data[i]) -
				  (double)ce->logit->locals[r].data[i]);
	}
	if (st == TPS_OK && out->data) {
		out->data[0] = (float)total;
	}
	ce->losses[r] = total;
	return st;
}

static enum tps_status parallel_ce_grad_rank(void *opaque, int r,
					     struct tps_tensor *out,
					     struct tps_error *err)
{
	const struct parallel_ce_job *ce = opaque;
	const struct tps_tensor *z = &ce->y->locals[r];
	int64_t n = z->shape.dim[z->shape.ndim - 1];
	int64_t rows = tps_loss_rows(z), first = first_class(ce->y, r);
	int64_t real = own_real_classes(ce, n, first);
	double scale = ce->scale[r];
	enum tps_status st = tps_tensor_init_like(out, &z->shape, z, err);
	for (int64_t i = 0; st == TPS_OK && out->data && i < rows; i++) {
		double m = ce->max->locals[r].data[i];
		double sum = ce->sum_exp->locals[r].data[i];
		int64_t t = (int64_t)ce->target->locals[r].data[i] - first;
		/* The padding's gradient: 0, as the init left it. */
		for (int64_t j = 0; j < real; j++) {
			out->data[i * n + j] =
				(float)(scale *
					(exp((double)z->data[i * n + j] - m) /
						 sum -
					 (j == t ? 1.0 : 0.0)));
		}
	}
	return st;
}

enum tps_status tps_nn_loss_parallel(const struct tps_nn_context *ctx,
				     const struct tps_dtensor *y,
				     const struct tps_dtensor *target,
				     const double *scale, unsigned partial_mask,
				     int64_t classes, struct tps_dtensor *loss,
				     double *losses, struct tps_dtensor *dy,
				     struct tps_error *err)
{
	const struct tps_mesh *mesh = ctx->mesh;
	struct tps_nn_context back = *ctx;
	struct tps_dtensor max = {0}, sum_exp = {0}, logit = {0};
	struct tps_dtensor value = {0}, g = {0};
	struct parallel_ce_job ce = {y,	     target, &max,   &sum_exp,
				     &logit, scale,  losses, classes};
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_shape scalar = tps_shape_make(0, NULL);
	enum tps_status st = ce_stat(ctx, &ce, CE_MAX, &max, err);
	if (st == TPS_OK) {
		st = ce_stat(ctx, &ce, CE_SUM_EXP, &sum_exp, err);
	}
	if (st == TPS_OK) {
		st = ce_stat(ctx, &ce, CE_LOGIT, &logit, err);
	}
	for (int i = 0; i < mesh->ndim; i++) {
		placements[i] = partial_mask & (1u << i)
					? tps_placement_partial()
					: tps_placement_replicate();
	}
	if (st == TPS_OK) {
		st = tps_dtensor_map(&value, mesh, &scalar, placements,
				     parallel_ce_loss_rank, &ce, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(
			ctx, "loss", "cross_entropy", "loss",
			"loss_parallel: the mean over the rows of M + log S - "
			"Z, the same on every tp rank",
			&value, 0, err);
	}
	back.phase = TPS_PHASE_BACKWARD;
	if (st == TPS_OK) {
		st = tps_dtensor_map(&g, mesh, &y->global, y->placements,
				     parallel_ce_grad_rank, &ce, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(
			&back, "loss", "cross_entropy_backward", "output.grad",
			"dz = (exp(z - M) / S - onehot(target)) / rows on each "
			"rank's own classes: no communication",
			&g, 0, err);
	}
	tps_dtensor_free(&max);
	tps_dtensor_free(&sum_exp);
	tps_dtensor_free(&logit);
	if (st != TPS_OK) {
		tps_dtensor_free(&value);
		tps_dtensor_free(&g);
		return st;
	}
	*loss = value;
	*dy = g;
	return TPS_OK;
}
