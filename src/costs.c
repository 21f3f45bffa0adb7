#include "tpsim/costs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpsim/comm.h"
#include "tpsim/model.h"

int64_t tps_cost_ring_steps(const char *op, int n)
{
	if (n <= 1) {
		return 0;
	}
	return strcmp(op, tps_comm_op_name(TPS_COMM_ALL_REDUCE)) == 0
		       ? 2 * (int64_t)(n - 1)
		       : (int64_t)(n - 1);
}

struct tps_link_spec tps_cost_link_of(const struct tps_cost_spec *cost,
				      const struct tps_mesh *mesh,
				      unsigned mask)
{
	struct tps_link_spec slow = {0.0, 0.0};
	bool first = true;
	for (int i = 0; i < mesh->ndim; i++) {
		const struct tps_link_spec *l = &cost->links[i];
		if (!(mask & (1u << i))) {
			continue;
		}
		if (first || l->gbps < slow.gbps) {
			slow.gbps = l->gbps;
		}
		if (first || l->latency_us > slow.latency_us) {
			slow.latency_us = l->latency_us;
		}
		first = false;
	}
	return slow;
}

double tps_cost_collective_seconds(const char *op, int n,
				   int64_t bytes_per_rank,
				   struct tps_link_spec link)
{
	return (double)tps_cost_ring_steps(op, n) * link.latency_us * 1e-6 +
	       (double)bytes_per_rank / (link.gbps * 1e9);
}

/* The sink: one row per (phase, op, module, group), by mode. */
struct tally {
	const struct tps_model_spec *spec;
	const struct tps_mesh *mesh;
	const struct tps_cost_spec *cost;
	enum tps_cost_mode mode;
	struct tps_cost_report *report;
};

static struct tps_cost_row *row_for(struct tps_cost_report *r,
				    const struct tps_event *ev,
				    const char *group, struct tps_error *err)
{
	for (int i = 0; i < r->n_rows; i++) {
		struct tps_cost_row *row = &r->rows[i];
		if (row->phase == ev->phase && row->mask == ev->mask &&
		    strcmp(row->op, ev->op) == 0 &&
		    strcmp(row->module, ev->module) == 0) {
			return row;
		}
	}
	if (r->n_rows == r->cap_rows) {
		int cap = r->cap_rows ? 2 * r->cap_rows : 16;
		struct tps_cost_row *grown =
			realloc(r->rows, (size_t)cap * sizeof *grown);
		if (!grown) {
			tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
			return NULL;
		}
		r->rows = grown;
		r->cap_rows = cap;
	}
	memset(&r->rows[r->n_rows], 0, sizeof r->rows[0]);
	r->rows[r->n_rows].phase = ev->phase;
	r->rows[r->n_rows].mask = ev->mask;
	snprintf(r->rows[r->n_rows].op, sizeof r->rows[0].op, "%s", ev->op);
	snprintf(r->rows[r->n_rows].module, sizeof r->rows[0].module, "%s",
		 ev->module);
	snprintf(r->rows[r->n_rows].mesh_dim, sizeof r->rows[0].mesh_dim, "%s",
		 group);
	return &r->rows[r->n_rows++];
}

/* A step's sum past int64_t: an error at the config key of the module
 * whose event pushed it over (its width: what grows the count). */
static enum tps_status too_many(const struct tally *t,
				const struct tps_event *ev, const char *what,
				struct tps_error *err)
{
	const char *pointer = "/model";
	for (int i = 0; i < t->spec->n_modules; i++) {
		const struct tps_module_spec *m = &t->spec->modules[i];
		if (strcmp(m->name, ev->module) == 0 && m->width_pointer[0]) {
			pointer = m->width_pointer;
		}
	}
	return tps_error_set(
		err, TPS_ERR_LIMIT, "%s: the %s step's %s pass 2^63 at %s's %s",
		pointer,
		t->mode == TPS_COST_TRAINING ? "training" : "inference", what,
		ev->module, ev->op);
}

static enum tps_status count(void *ctx, const struct tps_event *ev,
			     struct tps_error *err)
{
	struct tally *t = ctx;
	struct tps_cost_report *r = t->report;
	struct tps_cost_row *row;
	struct tps_link_spec link;
	char group[TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX];
	int n;
	double seconds;

	if (ev->kind == TPS_EVENT_COMPUTE) {
		double tflops = t->cost->tflops;
		/* Flops are even (2 per multiply-add): INT64_MAX is an
		 * event's count saturated (tps_sat_mul), not a count. */
		if (ev->flops == INT64_MAX ||
		    __builtin_add_overflow(r->flops[t->mode], ev->flops,
					   &r->flops[t->mode])) {
			return too_many(t, ev, "flops", err);
		}
		r->compute_seconds[t->mode] +=
			(double)ev->flops / (tflops * 1e12);
		return TPS_OK;
	}
	if (ev->kind != TPS_EVENT_COLLECTIVE) {
		return TPS_OK;
	}
	tps_mesh_mask_name(t->mesh, ev->mask, group, sizeof group);
	row = row_for(r, ev, group, err);
	if (!row) {
		return TPS_ERR_NOMEM;
	}
	n = tps_mesh_group_size(t->mesh, ev->mask);
	link = tps_cost_link_of(t->cost, t->mesh, ev->mask);
	seconds = tps_cost_collective_seconds(ev->op, n, ev->bytes_per_rank,
					      link);
	/* A row's bytes are part of the total's: one check covers both. */
	if (__builtin_add_overflow(r->total[t->mode].bytes_per_rank,
				   ev->bytes_per_rank,
				   &r->total[t->mode].bytes_per_rank)) {
		return too_many(t, ev, "collectives' bytes per rank", err);
	}
	row->mode[t->mode].count++;
	row->mode[t->mode].bytes_per_rank += ev->bytes_per_rank;
	row->mode[t->mode].seconds += seconds;
	r->total[t->mode].count++;
	r->total[t->mode].seconds += seconds;
	return TPS_OK;
}

/* One step of spec (as mode) on meta tensors, counted into report. */
static enum tps_status run_mode(const struct tps_model_spec *spec,
				const struct tps_cost_spec *cost,
				enum tps_cost_mode mode,
				struct tps_cost_report *report,
				struct tps_error *err)
{
	struct tps_model_spec s = *spec; /* shares modules; not freed */
	struct tally t = {spec, &spec->mesh, cost, mode, report};
	struct tps_event_sink sink = {count, &t};
	struct tps_model model = {0};
	struct tps_tensor input = {0}, target = {0};
	struct tps_shape oshape;
	struct tps_model_outcome out = {0};
	enum tps_status st;

	s.steps = 1;
	s.mode = mode == TPS_COST_TRAINING ? TPS_MODE_TRAINING
					   : TPS_MODE_INFERENCE;
	if (spec->mode == TPS_MODE_INFERENCE) {
		/* Training settings the config could not give. */
		s.loss = TPS_LOSS_MSE;
		s.dp_grad = TPS_DP_GRAD_GLOBAL;
		s.input_requires_grad = false;
		memset(&s.optimizer, 0, sizeof s.optimizer);
		s.optimizer.type = TPS_OPTIMIZER_SGD;
		s.optimizer.lr = 0.1;
	}
	oshape = tps_model_output_shape(&s);
	if (s.loss == TPS_LOSS_CROSS_ENTROPY) {
		oshape.ndim--; /* a class id per row */
	}
	st = tps_model_init_meta(&model, &s, err);
	if (st == TPS_OK) {
		st = tps_tensor_init_meta(&input, &s.input_shape, err);
	}
	if (st == TPS_OK) {
		st = tps_tensor_init_meta(&target, &oshape, err);
	}
	if (st == TPS_OK) {
		bool with_target =
			s.mode == TPS_MODE_TRAINING && s.loss != TPS_LOSS_SUM;
		st = tps_model_run(&model, &input, with_target ? &target : NULL,
				   sink, &out, err);
	}
	tps_model_outcome_free(&out);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
	tps_model_free(&model);
	return st;
}

enum tps_status tps_cost_estimate(const struct tps_model_spec *spec,
				  const struct tps_cost_spec *cost,
				  struct tps_cost_report *out,
				  struct tps_error *err)
{
	struct tps_cost_report r = {0};
	enum tps_status st = run_mode(spec, cost, TPS_COST_INFERENCE, &r, err);
	if (st == TPS_OK) {
		st = run_mode(spec, cost, TPS_COST_TRAINING, &r, err);
	}
	if (st != TPS_OK) {
		tps_cost_report_free(&r);
		return st;
	}
	*out = r;
	return TPS_OK;
}

void tps_cost_report_free(struct tps_cost_report *r)
{
	if (!r) {
		return;
	}
	free(r->rows);
	memset(r, 0, sizeof *r);
}
