/*
 * The cost model keys of `tpsim comm`: "links" (per mesh dim) and "device"
 * (spec.h, struct tps_cost_spec).
 *
 * Defaults by position, as clusters are built: the innermost (last) mesh
 * dim spans the GPUs of one node (NVLink class), every other dim crosses
 * nodes (InfiniBand class). That is also why TP belongs on the last dim.
 */
#include "config_internal.h"

#include <stdio.h>

#define INTRA_NODE_GBPS	      150.0
#define INTRA_NODE_LATENCY_US 3.0
#define INTER_NODE_GBPS	      25.0
#define INTER_NODE_LATENCY_US 10.0
#define DEVICE_TFLOPS	      100.0

struct links_ctx {
	const struct tps_mesh *mesh;
	struct tps_cost_spec *cost;
};

/* /links/<dim name>: {"GBps": > 0, "latency_us": >= 0}. */
static void link_entry(struct cfg *c, const cJSON *v, void *ctx)
{
	static const char *const keys[] = {"GBps", "latency_us", NULL};
	const struct links_ctx *x = ctx;
	int dim = tps_mesh_dim_index(x->mesh, v->string);
	struct tps_link_spec *link;

	if (dim < 0) {
		const char *names[TPS_MAX_MESH_DIMS + 1] = {NULL};
		char esc[96], list[TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX];
		char esc_list[sizeof list * 2];
		for (int i = 0; i < x->mesh->ndim; i++) {
			names[i] = x->mesh->dim_names[i];
		}
		cfg_fail(
			c, TPS_ERR_INPUT,
			"no mesh dim is named \"%s\" (expected one of %s)",
			tps_json_escape_for_message(v->string, esc, sizeof esc),
			tps_json_escape_for_message(
				cfg_join(names, ", ", list, sizeof list),
				esc_list, sizeof esc_list));
		return;
	}
	link = &x->cost->links[dim];
	if (cfg_expect(c, v, cJSON_IsObject, "an object") &&
	    cfg_check_keys(c, v, keys)) {
		cfg_number(c, v, "GBps", CFG_OPTIONAL, CFG_POSITIVE,
			   &link->gbps);
		cfg_number(c, v, "latency_us", CFG_OPTIONAL, CFG_NONNEG,
			   &link->latency_us);
	}
}

static void links_body(struct cfg *c, const cJSON *links, void *ctx)
{
	cfg_each_member(c, links, link_entry, ctx);
}

static void device_body(struct cfg *c, const cJSON *device, void *ctx)
{
	struct tps_cost_spec *cost = ctx;
	cfg_number(c, device, "TFLOPS", CFG_OPTIONAL, CFG_POSITIVE,
		   &cost->tflops);
}

void cfg_parse_cost(struct cfg *c, const cJSON *root,
		    const struct tps_mesh *mesh, struct tps_cost_spec *cost)
{
	static const char *const device_keys[] = {"TFLOPS", NULL};
	struct links_ctx x = {mesh, cost};

	for (int i = 0; i < mesh->ndim; i++) {
		bool inner = i == mesh->ndim - 1;
		cost->links[i].gbps = inner ? INTRA_NODE_GBPS : INTER_NODE_GBPS;
		cost->links[i].latency_us =
			inner ? INTRA_NODE_LATENCY_US : INTER_NODE_LATENCY_US;
	}
	cost->tflops = DEVICE_TFLOPS;
	cfg_object(c, root, "links", CFG_OPTIONAL, NULL, links_body, &x);
	cfg_object(c, root, "device", CFG_OPTIONAL, device_keys, device_body,
		   cost);
}
