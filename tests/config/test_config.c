/* Tests for the config parser (src/config/config.c, docs/design.md sections 4 and
 * 8). */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <locale.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config_internal.h"
#include "module_type.h"
#include "testutil.h"
#include "jsonio.h"
#include "model.h"

/*
 * Configs are written with ' for " so that the tables stay readable; dq()
 * turns them into JSON. No config below needs a literal '.
 */
static char *dq(const char *s)
{
	size_t len = strlen(s);
	char *out = malloc(len + 1);

	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i <= len; i++) {
		out[i] = s[i] == '\'' ? '"' : s[i];
	}
	return out;
}

/* Strictly parses a '-quoted config named "cfg.json". */
static enum tps_status parse_json(const char *squoted, cJSON **root,
				  struct tps_error *err)
{
	char *text = dq(squoted);
	enum tps_status st = tps_json_parse_strict("cfg.json", text,
						   strlen(text), root, err);
	free(text);
	return st;
}

/* parse_json as a config is read: "params" packed (jsonio.h). */
static enum tps_status parse_json_packed(const char *squoted, cJSON **root,
					 struct tps_error *err)
{
	char *text = dq(squoted);
	enum tps_status st = tps_json_parse_strict_packed(
		"cfg.json", text, strlen(text), TPS_CONFIG_PACK_KEY, root, err);
	free(text);
	return st;
}

/* tps_json_write_value's text, as the trace echoes v (caller frees). */
static char *written_text(const cJSON *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	tps_json_write_value(f, v);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

/* Both steps; the config must be accepted. */
static void parse_ok(const char *squoted, struct tps_run_spec *spec)
{
	struct tps_error err = {0};
	cJSON *root = NULL;
	enum tps_status st = parse_json(squoted, &root, &err);

	ck_assert_msg(st == TPS_OK, "JSON rejected: %s", err.message);
	st = tps_config_parse(root, "cfg.json", spec, &err);
	cJSON_Delete(root);
	ck_assert_msg(st == TPS_OK, "config rejected: %s", err.message);
	ck_assert_ptr_nonnull(spec->normalized);
}

/* The normalised config as compact JSON (caller frees). */
static char *normalized_text(const struct tps_run_spec *spec)
{
	char *s = cJSON_PrintUnformatted(spec->normalized);

	ck_assert_ptr_nonnull(s);
	return s;
}

static const struct tps_module_spec *module(const struct tps_run_spec *spec,
					    const char *name)
{
	for (int i = 0; i < spec->model.n_modules; i++) {
		if (strcmp(spec->model.modules[i].name, name) == 0) {
			return &spec->model.modules[i];
		}
	}
	ck_abort_msg("no module \"%s\"", name);
	return NULL;
}

static bool is_replicate(struct tps_placement p)
{
	return p.kind == TPS_PLACEMENT_REPLICATE;
}

/* shard(d) counts dims from the end when negative: compare normalised. */
static bool is_shard(struct tps_placement p, int dim, int ndim)
{
	return p.kind == TPS_PLACEMENT_SHARD &&
	       tps_dim_normalize(p.dim, ndim) == tps_dim_normalize(dim, ndim);
}

/* ------------------------------------------------------------------------ */
/* Building blocks of the configs below                                     */
/* ------------------------------------------------------------------------ */

#define MESH_TP "'mesh':{'shape':[2],'dim_names':['tp']}"
#define HDR	"{'tpsim':1," MESH_TP ","
#define FC1	"{'name':'fc1','type':'linear','in_features':4,'out_features':8}"
#define ACT	"{'name':'act','type':'relu'}"
#define FC2	"{'name':'fc2','type':'linear','in_features':8,'out_features':4}"
#define MODEL	"'model':[" FC1 "," ACT "," FC2 "]"
#define INPUT	"'input':{'shape':[2,4]}"
/* fc1 (4 -> 8), relu, fc2 (8 -> 4) on a 1-D tp mesh of 2, input (2, 4). */
#define BASE HDR MODEL "," INPUT
/* An embedding tok (6 ids, dim 4) and a linear head (4 -> 6) with
 * `keys`; the caller closes the object. */
#define TIED(keys)                                                             \
	HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':6,"    \
	    "'embedding_dim':4},{'name':'head','type':'linear','in_features':" \
	    "4,'out_features':6," keys "}],'input':{'shape':[2,"               \
	    "3],'init':'tokens'}"
/* An embedding tok (11 ids, dim 4) with `ekeys` and a linear head
 * (4 -> 11) with `hkeys`; the caller closes the object. */
#define VOCAB(ekeys, hkeys)                                                    \
	HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':11,"   \
	    "'embedding_dim':4" ekeys "},{'name':'head','type':'linear',"      \
	    "'in_features':4,'out_features':11" hkeys "}],'input':{'shape':"   \
	    "[2,3],'init':'tokens'}"
/* The same with a custom mesh. */
#define WITH_MESH(mesh) "{'tpsim':1,'mesh':" mesh "," MODEL "," INPUT
/* The same with a custom model. */
#define WITH_MODEL(...) HDR "'model':[" __VA_ARGS__ "]," INPUT
/* A model of one linear fc1 (4 -> 8) whose in_features is `v`. */
#define IN_FEATURES(v)                                                         \
	WITH_MODEL("{'name':'fc1','type':'linear','in_features':" v            \
		   ",'out_features':8}")
#define OUT_FEATURES(v)                                                        \
	WITH_MODEL("{'name':'fc1','type':'linear','in_features':4,"            \
		   "'out_features':" v "}")
#define MESH_SIZE(v)   WITH_MESH("{'shape':[" v "],'dim_names':['tp']}")
#define INPUT_SHAPE(s) HDR MODEL ",'input':{'shape':" s "}"
/* BASE in training mode; the caller adds keys and the closing brace. */
#define TRAIN BASE ",'mode':'training'"
/* A (2, 2) mesh (dp, tp) with dp_dim dp, and a batch of `b` rows. */
#define MESH_DP_TP "'mesh':{'shape':[2,2],'dim_names':['dp','tp']}"
#define DP_BATCH(b)                                                            \
	"{'tpsim':1," MESH_DP_TP ",'dp_dim':'dp'," MODEL                       \
	",'input':{'shape':[" b ",4]}"
/* A (2, 2, 2) mesh (dp, cp, tp), for several dp dims. */
#define MESH_DP_CP_TP                                                          \
	"{'tpsim':1,'mesh':{'shape':[2,2,2],'dim_names':['dp','cp','tp']}"     \
	"," MODEL "," INPUT
/* The shape (b, 4), where b may be an expression. */
#define BATCH_EXPR(b) HDR MODEL ",'input':{'shape':['" b "',4]}"
/* A sweep: sizes from "vars". */
#define SWEEP                                                                  \
	"{'tpsim':1,'vars':{'hidden':8,'batch':2}," MESH_TP ","                \
	"'model':[{'name':'fc1','type':'linear','in_features':4,"              \
	"'out_features':'4 * $hidden'},"                                       \
	"{'name':'fc2','type':'linear','in_features':'$hidden*4',"             \
	"'out_features':'$hidden / 2'}],"                                      \
	"'input':{'shape':['$batch',4]}}"
/* A (2, 2) mesh (pp, tp): fc1, act, fc2 (3 top-level modules) in
 * training on a batch of `b` rows, with "pipeline": `pipe`. */
#define MESH_PP_TP "'mesh':{'shape':[2,2],'dim_names':['pp','tp']}"
#define PP(b, pipe)                                                            \
	"{'tpsim':1," MESH_PP_TP "," MODEL ",'input':{'shape':[" b ",4]},"     \
	"'mode':'training','pipeline':" pipe "}"
/* The same on a (dp, pp, tp) mesh of `shape`, dp_dim dp. */
#define PP_DP(shape, b, pipe)                                                  \
	"{'tpsim':1,'mesh':{'shape':" shape ",'dim_names':['dp','pp','tp']},"  \
	"'dp_dim':'dp'," MODEL ",'input':{'shape':[" b ",4]},'mode':"          \
	"'training','pipeline':" pipe "}"
/* Two transformer blocks b.0, b.1 (4 top-level modules) on MESH_PP_TP,
 * in training with `keys`. */
#define PP_BLOCKS(keys)                                                        \
	"{'tpsim':1," MESH_PP_TP ",'model':[{'repeat':2,'name':'b','module':"  \
	"{'type':'transformer_block','dim':8,'num_heads':2}}],'input':{"       \
	"'shape':[2,3,8]},'mode':'training'," keys "}"
/* fc1 (4 -> 8), a1, fc2 (8 -> 8), a2, fc3 (8 -> 4), fc4 (4 -> 4), with
 * biases: 40, 0, 72, 0, 36 and 20 parameters; `mesh` (pp, tp), batch 4,
 * training with "pipeline": `pipe`. */
#define PP_SIX(mesh, pipe)                                                     \
	"{'tpsim':1,'mesh':{'shape':" mesh ",'dim_names':['pp','tp']},"        \
	"'model':[{'name':'fc1','type':'linear','in_features':4,"              \
	"'out_features':8},{'name':'a1','type':'relu'},{'name':'fc2','type':"  \
	"'linear','in_features':8,'out_features':8},{'name':'a2','type':"      \
	"'relu'},{'name':'fc3','type':'linear','in_features':8,"               \
	"'out_features':4},{'name':'fc4','type':'linear','in_features':4,"     \
	"'out_features':4}],'input':{'shape':[4,4]},'mode':'training',"        \
	"'pipeline':" pipe "}"

#define EIGHT_ROWS_OF(row)                                                     \
	"[" row "," row "," row "," row "," row "," row "," row "," row "]"

/* ------------------------------------------------------------------------ */
/* Bad configs, table-driven                                                */
/* ------------------------------------------------------------------------ */

enum stage {
	STAGE_CONFIG, /* valid JSON that tps_config_parse must refuse */
	STAGE_JSON,   /* tps_json_parse_strict must already refuse it */
};

struct bad_config {
	enum stage stage;
	const char *json; /* ' for " */
	enum tps_status status;
	const char *msg; /* substring: "cfg.json: <pointer>: ..." */
};

#define BAD(json, status, msg)                                                 \
	{                                                                      \
		STAGE_CONFIG, json, status, msg                                \
	}
#define BAD_JSON(json, msg)                                                    \
	{                                                                      \
		STAGE_JSON, json, TPS_ERR_INPUT, msg                           \
	}

static const struct bad_config bad_configs[] = {
	/* The document and the version. */
	BAD("[1]", TPS_ERR_INPUT,
	    "cfg.json: (root): expected a config object, got an array"),
	BAD("{" MESH_TP "," MODEL "," INPUT "}", TPS_ERR_INPUT,
	    "cfg.json: /tpsim: missing"),
	BAD("{'tpsim':2," MESH_TP "," MODEL "," INPUT "}", TPS_ERR_INPUT,
	    "cfg.json: /tpsim: unsupported config version 2 (expected 1)"),
	BAD("{'tpsim':'1'," MESH_TP "," MODEL "," INPUT "}", TPS_ERR_INPUT,
	    "cfg.json: /tpsim: expected an integer, got string \"1\""),
	BAD("{'tpsim':1.5," MESH_TP "," MODEL "," INPUT "}", TPS_ERR_INPUT,
	    "cfg.json: /tpsim: expected an integer, got 1.5"),
	/* A trace or a fixture given to `tpsim run` (issue 15, item 4). */
	BAD("{'format':'tpsim.trace','version':1," MESH_TP ",'events':[]}",
	    TPS_ERR_INPUT,
	    "cfg.json: /format: expected a tpsim config (\"tpsim\": 1), got "
	    "a tpsim trace: tpsim run takes a config and writes its trace"),
	BAD("{'format':'tpsim.trace','events':[{'match':{'op':'matmul'}}]}",
	    TPS_ERR_INPUT,
	    "cfg.json: /events/0/match: expected a tpsim config (\"tpsim\": "
	    "1), got a tpsim fixture: tpsim run takes a config"),

	/* Unknown keys, at every level. */
	BAD(BASE ",'steps_per_epoch':3}", TPS_ERR_INPUT,
	    "cfg.json: /steps_per_epoch: unknown key \"steps_per_epoch\""),
	BAD(BASE ",'a\\u001bb':3}", TPS_ERR_INPUT,
	    "cfg.json: /a\\u001bb: unknown key \"a\\u001bb\""),
	BAD(WITH_MESH("{'shape':[2],'dim_names':['tp'],'devices':[0,1]}") "}",
	    TPS_ERR_INPUT, "cfg.json: /mesh/devices: unknown key \"devices\""),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':4,"
		       "'out_features':8,'dropout':0.1}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/0/dropout: unknown key"),
	BAD(WITH_MODEL(FC1 ",{'name':'act','type':'relu','in_features':8}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/in_features: unknown key \"in_features\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','gather_output':true}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/gather_output: unknown key \"gather_output\""),
	BAD(BASE ",'plan':{'fc1':{'style':'replicate','input':'replicate'}}}",
	    TPS_ERR_INPUT, "cfg.json: /plan/fc1/input: unknown key \"input\""),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'dtype':'float32'}}",
	    TPS_ERR_INPUT, "cfg.json: /input/dtype: unknown key \"dtype\""),
	BAD(BASE ",'trace':{'values':'full','format':'json'}}", TPS_ERR_INPUT,
	    "cfg.json: /trace/format: unknown key \"format\""),
	BAD(BASE ",'tolerance':{'atol':0,'eps':1e-6}}", TPS_ERR_INPUT,
	    "cfg.json: /tolerance/eps: unknown key \"eps\""),
	BAD(BASE ",'init':{'method':'ones','std':1}}", TPS_ERR_INPUT,
	    "cfg.json: /init/std: unknown key \"std\""),

	/* The mesh. */
	BAD("{'tpsim':1," MODEL "," INPUT "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh: missing"),
	BAD(WITH_MESH("[2]") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh: expected an object, got an array"),
	BAD(WITH_MESH("{'dim_names':['tp']}") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape: missing"),
	BAD(WITH_MESH("{'shape':[2]}") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names: missing"),
	BAD(WITH_MESH("{'shape':'2','dim_names':['tp']}") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape: expected an array of sizes, "
	    "got string \"2\""),
	BAD(MESH_SIZE("'2'") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape/0: expected an integer, got string \"2\""),
	BAD(MESH_SIZE("0") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape/0: out of range"),
	BAD(MESH_SIZE("-2") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape/0: out of range"),
	BAD(MESH_SIZE("2.5") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape/0: expected an integer, got 2.5"),
	BAD(MESH_SIZE("1e30") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape/0: out of range"),
	BAD(MESH_SIZE("18446744073709551617") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape/0: out of range"),
	BAD(MESH_SIZE("true") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/shape/0: expected an integer, got true"),
	BAD(MESH_SIZE("8192") "}", TPS_ERR_LIMIT,
	    "cfg.json: /mesh/shape/0: world size 8192 exceeds"),
	BAD(WITH_MESH("{'shape':[64,128],'dim_names':['a','tp']}") "}",
	    TPS_ERR_LIMIT, "cfg.json: /mesh/shape/1: world size 8192 exceeds"),
	BAD(WITH_MESH("{'shape':[64,128,2],'dim_names':['a','b','tp']}") "}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /mesh/shape/1: world size of at least 8192 exceeds "
	    "4096"),
	BAD(WITH_MESH("{'shape':[1,1,1,1,2],'dim_names':['a','b','c','d',"
		      "'tp']}") "}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /mesh/shape: mesh has 5 dims (expected 1 to 4)"),
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['tp']}") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names: expected 2 names, one per entry of "
	    "/mesh/shape, got 1"),
	BAD(WITH_MESH("{'shape':[2],'dim_names':['dp','tp']}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names: expected 1 names, one per entry of "
	    "/mesh/shape, got 2"),
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['tp','tp']}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names/1: duplicate dim name \"tp\" "
	    "(also /mesh/dim_names/0)"),
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['a\\n','a\\n']}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names/1: duplicate dim name \"a\\n\""),
	BAD(WITH_MESH("{'shape':[2],'dim_names':'tp'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names: expected an array of names, "
	    "got string \"tp\""),
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['dp',3]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names/1: expected a string, "
	    "got 3"),
	BAD(WITH_MESH("{'shape':[2],'dim_names':['']}") "}", TPS_ERR_INPUT,
	    "cfg.json: /mesh/dim_names/0: expected a name of 1 to"),

	/* tp_dim and dp_dim. */
	BAD(BASE ",'tp_dim':'model'}", TPS_ERR_INPUT,
	    "cfg.json: /tp_dim: no mesh dim is named \"model\""),
	BAD(BASE ",'tp_dim':0}", TPS_ERR_INPUT,
	    "cfg.json: /tp_dim: expected a mesh dim name, got 0"),
	BAD(BASE ",'dp_dim':'data'}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim: no mesh dim is named \"data\""),
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['dp','tp']}") ",'dp_dim':'"
								 "tp'}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dp_dim: the dp dim must differ from the tp dim \"tp\""),
	BAD(WITH_MESH(
		    "{'shape':[2,2],'dim_names':['dp','tp']}") ",'tp_dim':'dp',"
							       "'dp_dim':'dp'}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dp_dim: the dp dim must differ from the tp dim \"dp\""),

	/* The model and its modules. */
	BAD(HDR INPUT "}", TPS_ERR_INPUT, "cfg.json: /model: missing"),
	BAD(HDR "'model':{'fc1':" FC1 "}," INPUT "}", TPS_ERR_INPUT,
	    "cfg.json: /model: expected an array of modules, got an object"),
	BAD(WITH_MODEL("") "}", TPS_ERR_INPUT,
	    "cfg.json: /model: expected at least one module"),
	BAD(WITH_MODEL("4") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0: expected a module object, got 4"),
	BAD(WITH_MODEL(FC1 ",{'type':'relu'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/name: missing"),
	BAD(WITH_MODEL(FC1 ",{'name':1,'type':'relu'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/name: expected a string, got 1"),
	BAD(WITH_MODEL(FC1 ",{'name':'my act','type':'relu'}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/name: invalid module name \"my act\""),
	BAD(WITH_MODEL(FC1 ",{'name':'a..b','type':'relu'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/name: invalid module name \"a..b\""),
	BAD(WITH_MODEL(FC1 ",{'name':'fc*','type':'relu'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/name: invalid module name \"fc*\""),
	BAD(WITH_MODEL(FC1 "," ACT ",{'name':'fc1','type':'linear',"
			   "'in_features':8,'out_features':4}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/2/name: duplicate module name \"fc1\" "
	    "(also that of the module at /model/0)"),
	BAD(WITH_MODEL(FC1 ",{'name':'act'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/type: missing"),
	BAD(WITH_MODEL(FC1 ",{'name':'act','type':['relu']}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/type: expected a string, "
	    "got an array"),
	BAD(WITH_MODEL(FC1 ",{'name':'act','type':'conv2d'}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/type: unknown module type \"conv2d\" "
	    "(expected one of linear, relu, gelu, layernorm, residual, "
	    "embedding, attention, rmsnorm, silu, gated, dropout, "
	    "transformer_block, swiglu_mlp)"),
	/* repeat: N copies of a module or a list of modules. */
	BAD(WITH_MODEL(FC1
		       ",{'repeat':0,'name':'r','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/repeat: out of range (expected 1 to 4096, got "
	    "0)"),
	BAD(WITH_MODEL(
		    FC1
		    ",{'repeat':-1,'name':'r','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/repeat: out of range (expected 1 to 4096, got "
	    "-1)"),
	BAD(WITH_MODEL(
		    FC1
		    ",{'repeat':2.5,'name':'r','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/repeat: expected an integer, got 2.5"),
	BAD(WITH_MODEL(
		    FC1
		    ",{'repeat':'2','name':'r','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/repeat: expected an integer, got string \"2\""),
	BAD(WITH_MODEL(
		    FC1
		    ",{'repeat':5000,'name':'r','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/repeat: out of range (expected 1 to 4096, got "
	    "5000)"),
	BAD(WITH_MODEL(FC1 ",{'repeat':400,'name':'r','module':{'type':"
			   "'transformer_block','dim':8,'num_heads':2}}") "}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/1/repeat: 400 repetitions take the model over "
	    "4096 modules, counting residual bodies and the parts of attention "
	    "and transformer_block"),
	BAD(WITH_MODEL(
		    FC1
		    ",{'repeat':4000,'name':'r','module':{'type':'relu'}},"
		    "{'repeat':100,'name':'s','module':{'type':'relu'}}") "}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/2/repeat: 100 repetitions take the model over "
	    "4096 modules"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/1/name: missing"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/module: missing (a repeat needs \"module\", or "
	    "a list, \"modules\")"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','module':{'type':'relu'},"
			   "'modules':[" ACT "]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/modules: \"module\" and \"modules\" both given "
	    "(expected one: a module, or a list of modules)"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','modules':[]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/modules: expected at least one module"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','module':[" ACT "]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/module: expected a module object, got an "
	    "array"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','module':{'type':'relu'},"
			   "'count':3}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/count: unknown key \"count\" (expected one of: "
	    "repeat, name, module, modules)"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','module':" ACT "}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/module/name: a repeated module is named by its "
	    "repetition, \"r.0\" (the name of /model/1/name and the index): "
	    "leave \"name\" out, or repeat a list, \"modules\""),
	BAD(WITH_MODEL(
		    FC1
		    ",{'repeat':2,'name':'r..x','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/name: invalid name \"r..x\" (expected "
	    "dot-separated parts of letters, digits, '_' and '-', under 120 "
	    "bytes with the repetitions' \".<index>\")"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','module':{'repeat':2,"
			   "'name':'s','module':{'type':'relu'}}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/module: a repeat's \"module\" is one module; "
	    "to "
	    "repeat a repeat, put it in a list, \"modules\""),
	/* Names that clash: two repeats, a module after one, one before. */
	BAD(WITH_MODEL(FC1
		       ",{'repeat':2,'name':'r','module':{'type':'relu'}},"
		       "{'repeat':2,'name':'r','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/2/name: a repetition is named \"r.0\", the name "
	    "of the module at /model/1/module"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','module':{'type':'relu'}},"
			   "{'name':'r.1','type':'relu'}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/2/name: duplicate module name \"r.1\""),
	BAD(WITH_MODEL(FC1 ",{'name':'r.0','type':'relu'},{'repeat':2,'name':"
			   "'r','module':{'type':'relu'}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/2/name: a repetition is named \"r.0\", the name "
	    "of the module at /model/1"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','modules':[" ACT "," ACT
			   "]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/modules/1/name: duplicate module name "
	    "\"r.0.act\" (also that of the module at /model/1/modules/0)"),
	BAD(WITH_MODEL("{'repeat':2,'name':'r','module':{'type':'linear',"
		       "'in_features':4,'out_features':8}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/module/in_features: expected 8, the "
	    "out_features of r.0, the repetition before (/model/0/module), "
	    "got 4: a repeated module must keep the width"),
	BAD(WITH_MODEL(FC1 ",{'repeat':2,'name':'r','module':{'type':'relu',"
			   "'dim':3}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/module/dim: unknown key \"dim\""),
	/* prepare_input, prepare_output */
	BAD(BASE ",'plan':{'act':'prepare_input'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/act: prepare_input needs its layouts: "
	    "{\"style\": \"prepare_input\", \"input\": L, "
	    "\"desired_input\": L}"),
	BAD(BASE
	    ",'plan':{'act':{'style':'prepare_input','input':'shard(1)'}}}",
	    TPS_ERR_INPUT, "cfg.json: /plan/act/desired_input: missing"),
	BAD(BASE ",'plan':{'act':{'style':'prepare_output','output':'shard(1)',"
		 "'desired_input':'replicate'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/act/desired_input: unknown key \"desired_input\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','desired_input':"
		 "'replicate'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/desired_input: desired layouts belong to "
	    "prepare_input and prepare_output"),
	BAD(BASE ",'plan':{'fc1':{'style':'prepare_input','input':'replicate',"
		 "'desired_input':'shard(1)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/style: prepare_input cannot apply to linear "
	    "module \"fc1\""),
	/* attention */
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':10,"
		"'num_heads':3}],'input':{'shape':[2,3,10]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/num_heads: embed_dim 10 is not a multiple of "
	    "num_heads 3 (each head takes embed_dim / num_heads features)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','num_heads':2}],"
		"'input':{'shape':[2,3,10]}}",
	    TPS_ERR_INPUT, "cfg.json: /model/0/embed_dim: missing"),
	/* grouped-query attention: num_kv_heads */
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':4,'num_kv_heads':3}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/num_kv_heads: num_heads 4 is not a multiple "
	    "of num_kv_heads 3 (each kv head serves num_heads / num_kv_heads "
	    "query heads)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':4,'num_kv_heads':0}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/num_kv_heads: out of range (expected 1 to "
	    "1048576, got 0)"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':8,"
		"'num_heads':4,'num_kv_heads':3}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/num_kv_heads: num_heads 4 is not a multiple "
	    "of num_kv_heads 3 (each kv head serves num_heads / num_kv_heads "
	    "query heads)"),
	/* More tp ranks than kv heads: torchtitan's error, not Megatron's
	 * replication (docs/transformer.md). */
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':4,'num_kv_heads':1}],'input':{'shape':[2,3,8]},"
		"'plan':{'attn.[qkv]':'colwise','attn.o':'rowwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/attn.[qkv]: attention \"attn\" has 1 kv heads "
	    "for 2 tp ranks: tp splits whole kv heads, so tp must be at most "
	    "num_kv_heads (torchtitan's rule; tpsim does not replicate kv "
	    "heads over tp / num_kv_heads ranks as Megatron and vLLM do)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2}],'input':{'shape':[2,3,8]},'plan':{'attn.q':"
		"'colwise','attn.k':'colwise','attn.v':'colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0: attention \"attn\" splits its heads with q, "
	    "k, v colwise and o rowwise, or replicates all four (attn.o is "
	    "replicate)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2}],'input':{'shape':[2,3,8]},'plan':{'attn.q':"
		"'colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0: attention \"attn\" splits its heads with q, "
	    "k, v colwise and o rowwise, or replicates all four (attn.k is "
	    "replicate)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2}],'input':{'shape':[2,3,8]},'plan':{'attn.*':"
		"'rowwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/attn.*: attention \"attn\" splits its heads with "
	    "q, k, v colwise and o rowwise, or replicates all four (attn.q is "
	    "rowwise)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2}],'input':{'shape':[3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0: attention needs (batch, seq, embed) "
	    "activations; the model's are 2-dim"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2}],'input':{'shape':[2,3,6]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/shape/2: expected 8, the embed_dim of /model/0, "
	    "got 6"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2},{'name':'attn.q','type':'relu'}],"
		"'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/name: duplicate module name \"attn.q\" (also "
	    "that of the module at /model/0)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2}],'input':{'shape':[2,3,8]},'plan':{'attn':"
		"'colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/attn: colwise cannot apply to attention module "
	    "\"attn\" (its heads are split by planning its linears: "
	    "\"<name>.q\", \".k\", \".v\" colwise and \".o\" rowwise)"),
	/* residual */
	BAD(WITH_MODEL("{'name':'res','type':'residual'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/body: missing"),
	BAD(WITH_MODEL("{'name':'res','type':'residual','body':[]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/body: expected at least one module"),
	BAD(WITH_MODEL("{'name':'res','type':'residual','body':{}}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/body: expected an array of modules, got an "
	    "object"),
	BAD(WITH_MODEL(FC1 ",{'name':'res','type':'residual','body':["
			   "{'name':'fc2','type':'linear','in_features':8,"
			   "'out_features':3}]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/body: the body ends with width 3 "
	    "(/model/1/body/0), but x + body(x) needs the input's, 8 "
	    "(/model/0)"),
	BAD(WITH_MODEL(FC1 ",{'name':'res','type':'residual','body':["
			   "{'name':'fc2','type':'linear','in_features':4,"
			   "'out_features':8}]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/body/0/in_features: expected 8, the "
	    "out_features of /model/0, got 4"),
	/* Nothing before the residual sets the width: its input is the
	 * model's, as wide as the body's first linear takes. */
	BAD(WITH_MODEL("{'name':'res','type':'residual','body':[" FC1 "]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/body: the body ends with width 8 "
	    "(/model/0/body/0), but x + body(x) needs the input's, 4 (the "
	    "in_features of /model/0/body/0)"),
	BAD(WITH_MODEL(ACT ",{'name':'res','type':'residual','body':[" FC1
			   "]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/body: the body ends with width 8 "
	    "(/model/1/body/0), but x + body(x) needs the input's, 4 (the "
	    "in_features of /model/1/body/0)"),
	BAD(WITH_MODEL("{'name':'res','type':'residual','body':[{'name':'in',"
		       "'type':'residual','body':[" FC1 "]}]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/body/0/body: the body ends with width 8 "
	    "(/model/0/body/0/body/0), but x + body(x) needs the input's, 4 "
	    "(the in_features of /model/0/body/0/body/0)"),
	BAD(WITH_MODEL("{'name':'res','type':'residual','body':[{'name':'in',"
		       "'type':'residual','body':[{'name':'ln','type':"
		       "'layernorm','dim':4}]}," FC1 "]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/body: the body ends with width 8 "
	    "(/model/0/body/1), but x + body(x) needs the input's, 4 (the dim "
	    "of /model/0/body/0/body/0)"),
	BAD(HDR "'model':[{'name':'res','type':'residual','body':[{'name':"
		"'attn','type':'attention','embed_dim':4,'num_heads':2}," FC1
		"]}],'input':{'shape':[2,3,4]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/body: the body ends with width 8 "
	    "(/model/0/body/1), but x + body(x) needs the input's, 4 (the "
	    "embed_dim of /model/0/body/0)"),
	BAD(WITH_MODEL(FC1 ",{'name':'res','type':'residual','body':["
			   "{'name':'fc1','type':'relu'}]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/body/0/name: duplicate module name \"fc1\" "
	    "(also that of the module at /model/0)"),
	BAD(WITH_MODEL(FC1 ",{'name':'res','type':'residual','body':["
			   "{'name':'act','type':'relu'}]}") ","
							     "'plan':{'res':'"
							     "colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/res: colwise cannot apply to residual module "
	    "\"res\" (it adds its body's output to its input; plan the "
	    "body's modules)"),
	/* rmsnorm: layernorm's keys but bias, layernorm's styles */
	BAD(WITH_MODEL(FC1 ",{'name':'n','type':'rmsnorm'}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/dim: missing"),
	BAD(WITH_MODEL(FC1 ",{'name':'n','type':'rmsnorm','dim':4}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/dim: expected 8, the out_features of "
	    "/model/0, got 4"),
	BAD(WITH_MODEL("{'name':'n','type':'rmsnorm','dim':4,'eps':-1}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/eps: expected a finite number > 0, got -1"),
	BAD(WITH_MODEL("{'name':'n','type':'rmsnorm','dim':4,"
		       "'bias':true}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/bias: unknown key \"bias\" "
	    "(expected one of: name, type, dim, eps)"),
	BAD(WITH_MODEL("{'name':'n','type':'rmsnorm','dim':4}") ","
								"'plan':{'n':'"
								"colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/n: colwise cannot apply to rmsnorm module "
	    "\"n\" (its weight is replicated: it runs \"sequence\" or "
	    "\"replicate\")"),
	/* layernorm */
	BAD(WITH_MODEL(FC1 ",{'name':'ln','type':'layernorm'}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/1/dim: missing"),
	BAD(WITH_MODEL(FC1 ",{'name':'ln','type':'layernorm','dim':4}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/dim: expected 8, the out_features of "
	    "/model/0, got 4"),
	BAD(WITH_MODEL("{'name':'ln','type':'layernorm','dim':4}," FC2) "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/in_features: expected 4, the dim of /model/0, "
	    "got 8"),
	BAD(WITH_MODEL("{'name':'ln','type':'layernorm','dim':4,'eps':0}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/eps: expected a finite number > 0, got 0"),
	BAD(WITH_MODEL("{'name':'ln','type':'layernorm','dim':4,"
		       "'in_features':4}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: unknown key \"in_features\" "
	    "(expected one of: name, type, dim, eps, bias)"),
	BAD(WITH_MODEL(
		    "{'name':'ln','type':'layernorm','dim':4}") ","
								"'plan':{'ln':'"
								"colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/ln: colwise cannot apply to layernorm module "
	    "\"ln\" (its weight is replicated: it runs \"sequence\" or "
	    "\"replicate\")"),
	BAD(WITH_MODEL(
		    "{'name':'ln','type':'layernorm','dim':4}") ","
								"'plan':{'ln':'"
								"sequence'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/ln: sequence parallel shards the sequence, dim 1 "
	    "of (batch, seq, features); this input has 2 dims"),
	BAD(HDR "'model':[{'name':'ln','type':'layernorm','dim':4}],"
		"'input':{'shape':[2,3,4]},'plan':{'ln':{'style':'sequence',"
		"'output':'shard(2)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/ln/output: sequence parallel shards a dim other "
	    "than the normalized last one"),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','out_features':8}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/0/in_features: missing"),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':4}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/0/out_features: missing"),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':4,"
		       "'out_features':8,'bias':'yes'}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/bias: expected true or false, "
	    "got string \"yes\""),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':4,"
		       "'out_features':8,'bias':1}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/bias: expected true or false, got 1"),

	/* Sizes: in_features, out_features. */
	BAD(IN_FEATURES("'4'") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: expected an integer, "
	    "got string \"4\""),
	BAD(IN_FEATURES("0") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: out of range (expected 1 to "
	    "2147483648, got 0)"),
	BAD(IN_FEATURES("-4") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: out of range"),
	BAD(IN_FEATURES("2.5") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: expected an integer, got 2.5"),
	BAD(IN_FEATURES("4.000001") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: expected an integer"),
	BAD(IN_FEATURES("1e30") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: out of range"),
	BAD(IN_FEATURES("2147483649") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: out of range"),
	BAD(IN_FEATURES("9223372036854775808") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: out of range"),
	BAD(IN_FEATURES("true") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: expected an integer, got true"),
	BAD(IN_FEATURES("[4]") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/in_features: expected an integer, "
	    "got an array"),
	BAD(OUT_FEATURES("'8'") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/out_features: expected an integer, "
	    "got string \"8\""),
	BAD(OUT_FEATURES("0") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/out_features: out of range"),
	BAD(OUT_FEATURES("-8") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/out_features: out of range"),
	BAD(OUT_FEATURES("2.5") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/out_features: expected an integer, got 2.5"),
	BAD(OUT_FEATURES("1e30") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/out_features: out of range"),
	BAD(OUT_FEATURES("4294967296") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/out_features: out of range"),
	BAD(OUT_FEATURES("{'n':8}") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/out_features: expected an integer, "
	    "got an object"),
	/* 32769 x 65536 = 2^31 + 65536 elements. */
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':65536,"
		       "'out_features':32769}") "}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/0/out_features: the weight (32769, 65536) has "
	    "more than 2^31 elements"),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':"
		       "2147483648,'out_features':2147483648}") "}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/0/out_features: the weight (2147483648, "
	    "2147483648) has more than 2^31 elements"),

	/* No output may pass 2^48 elements, even as a meta tensor: reported
	 * at the key of its width (its rows are the input's). */
	BAD(HDR "'model':[{'name':'fc','type':'linear','in_features':1,"
		"'out_features':2147483648}],'input':{'shape':[2147483648,1]}}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/0/out_features: the output of fc, (2147483648, "
	    "2147483648), has more than 2^48 elements, the most a tensor may "
	    "have even without values (its rows come from /input/shape)"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':16,"
		"'num_heads':1,'hidden':4194304}],'input':{'shape':[67108864,"
		"2,16]}}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/0/hidden: the output of b.mlp.fc1, (67108864, 2, "
	    "4194304), has more than 2^48 elements"),
	BAD(HDR "'model':[{'name':'e','type':'embedding','num_embeddings':1,"
		"'embedding_dim':1073741824}],'input':{'shape':[1048576,1024],"
		"'init':'tokens'}}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/0/embedding_dim: the output of e, (1048576, "
	    "1024, 1073741824), has more than 2^48 elements"),
	/* Cross-field: reported at the later field, naming the earlier. */
	BAD(WITH_MODEL(FC1 "," ACT ",{'name':'fc2','type':'linear',"
			   "'in_features':6,'out_features':4}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/2/in_features: expected 8, the out_features of "
	    "/model/0, got 6"),
	BAD(INPUT_SHAPE("[2,3]") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/1: expected 4, the in_features of "
	    "/model/0, got 3"),
	BAD(HDR "'model':[" ACT "," FC1 "],'input':{'shape':[2,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/shape/1: expected 4, the in_features of "
	    "/model/1, got 8"),
	/* The first module with a width names its own key, at its own
	 * pointer (a body's module is not /model/<its index in the list>). */
	BAD(HDR "'model':[{'name':'ln','type':'layernorm','dim':4}],'input':{"
		"'shape':[2,3]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/shape/1: expected 4, the dim of /model/0, got 3"),
	BAD(HDR "'model':[{'name':'r','type':'residual','body':[" FC1 ","
		"{'name':'fc2','type':'linear','in_features':8,"
		"'out_features':4}]}],'input':{'shape':[2,3]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/shape/1: expected 4, the in_features of "
	    "/model/0/body/0, got 3"),
	BAD(HDR "'model':[" ACT "," FC1 "],'input':{'values':[[1,2,3]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: expected rows of 4 values, the "
	    "in_features of /model/1, got 3"),

	/* The input. */
	BAD(HDR MODEL "}", TPS_ERR_INPUT, "cfg.json: /input: missing"),
	BAD(HDR MODEL ",'input':[2,4]}", TPS_ERR_INPUT,
	    "cfg.json: /input: expected an object, got an array"),
	BAD(HDR MODEL ",'input':{'init':'ones'}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape: missing"),
	BAD(INPUT_SHAPE("8") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape: expected an array of sizes, got 8"),
	BAD(INPUT_SHAPE("[1,1,1,2,4]") "}", TPS_ERR_LIMIT,
	    "cfg.json: /input/shape: the input has 5 dims (expected 1 to 4)"),
	BAD(INPUT_SHAPE("['2',4]") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: expected an integer, got string \"2\""),
	BAD(INPUT_SHAPE("[0,4]") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: out of range"),
	BAD(INPUT_SHAPE("[-2,4]") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: out of range"),
	BAD(INPUT_SHAPE("[2.5,4]") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: expected an integer, got 2.5"),
	BAD(INPUT_SHAPE("[1e30,4]") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: out of range"),
	BAD(INPUT_SHAPE("[2147483649,4]") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: out of range"),
	/* Every size in range, their product over 2^31. */
	BAD(INPUT_SHAPE("[65536,65536,4]") "}", TPS_ERR_LIMIT,
	    "cfg.json: /input/shape: "),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'init':'random'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/init: unknown init method \"random\""),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'init':{'method':'ones'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/init: expected a string, got an object"),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'seed':-1}}", TPS_ERR_INPUT,
	    "cfg.json: /input/seed: out of range"),
	/* Explicit input values. */
	BAD(HDR MODEL ",'input':{'values':[[1,2,3,4]],'init':'ones'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: explicit values and /input/init both "
	    "given (expected one: the values, or an init method)"),
	BAD(HDR MODEL ",'input':{'values':[[1,2,3,4]],'seed':3}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: explicit values and /input/seed both "
	    "given"),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'values':[[1,2,3,4]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: expected 2 elements (dim 0 of the "
	    "input's shape), got 1"),
	BAD(HDR MODEL ",'input':{'values':[[1,2,3,4],[5,6,7]]}}", TPS_ERR_INPUT,
	    "cfg.json: /input/values/1: expected 4 elements (dim 1 of the "
	    "input's shape), got 3"),
	BAD(HDR MODEL ",'input':{'values':[[1,2,3,'4']]}}", TPS_ERR_INPUT,
	    "cfg.json: /input/values/0/3: expected a number, got string "
	    "\"4\""),
	BAD(HDR MODEL ",'input':{'values':[[1,2,3,1e39]]}}", TPS_ERR_INPUT,
	    "cfg.json: /input/values/0/3: expected a finite float32 value"),
	BAD(HDR MODEL ",'input':{'values':[[1,2,3],[4,5,6]]}}", TPS_ERR_INPUT,
	    "cfg.json: /input/values: expected rows of 4 values, the "
	    "in_features of /model/0, got 3"),
	BAD(HDR MODEL ",'input':{'values':[]}}", TPS_ERR_INPUT,
	    "cfg.json: /input/values: an empty array leaves the input's "
	    "shape unknown (give \"shape\")"),
	BAD(HDR MODEL ",'input':{'values':7}}", TPS_ERR_INPUT,
	    "cfg.json: /input/values: expected nested arrays of numbers"),
	BAD(HDR MODEL ",'input':{'values':[[[[[1,2,3,4]]]]]}}", TPS_ERR_LIMIT,
	    "cfg.json: /input/values: the input's values nest more than 4 "
	    "deep"),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'seed':1.5}}", TPS_ERR_INPUT,
	    "cfg.json: /input/seed: expected an integer, got 1.5"),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'requires_grad':'yes'},"
		      "'mode':'training'}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/requires_grad: expected true or false"),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'requires_grad':false}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/requires_grad: \"requires_grad\" needs \"mode\": "
	    "\"training\" (this config runs inference)"),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'loaded_on':'rank0'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/loaded_on: unknown input source \"rank0\" "
	    "(expected one of every_rank, tp_root)"),

	/* The plan. */
	BAD(BASE ",'plan':['fc1']}", TPS_ERR_INPUT,
	    "cfg.json: /plan: expected an object, got an array"),
	BAD(BASE ",'plan':{'fc3':'colwise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc3: \"fc3\" matches no module of /model"),
	BAD(BASE ",'plan':{'block.*':'colwise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/block.*: \"block.*\" matches no module of /model"),
	BAD(BASE ",'plan':{'*.fc1':'colwise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/*.fc1: \"*.fc1\" matches no module of /model"),
	BAD(BASE ",'plan':{'fc1':'colwise','fc*':'rowwise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc*: module \"fc1\" is already planned by "
	    "/plan/fc1"),
	BAD(BASE ",'plan':{'fc*':'colwise','fc2':'rowwise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc2: module \"fc2\" is already planned by "
	    "/plan/fc*"),
	BAD(BASE ",'plan':{'act':'colwise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/act: colwise cannot apply to relu module \"act\""),
	BAD(BASE ",'plan':{'act':{'style':'rowwise'}}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/act/style: rowwise cannot apply to relu module "
	    "\"act\""),
	BAD(BASE ",'plan':{'*':'colwise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/*: colwise cannot apply to relu module \"act\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','bias':'after_reduce'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/bias: a bias mode applies to rowwise only"),
	BAD(BASE ",'plan':{'fc2':'rowise'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc2: unknown style \"rowise\" (expected one of "
	    "colwise, rowwise, replicate, sequence, vocab, prepare_input, "
	    "prepare_output)"),
	BAD(BASE ",'plan':{'fc2':{'style':'Rowwise'}}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc2/style: unknown style \"Rowwise\""),
	/* Injected mistakes. */
	BAD(BASE ",'inject':'bias_every_rank'}", TPS_ERR_INPUT,
	    "cfg.json: /inject: expected an array of mistakes, got string "),
	BAD(BASE ",'inject':['bias_everywhere']}", TPS_ERR_INPUT,
	    "cfg.json: /inject/0: unknown mistake \"bias_everywhere\" "
	    "(expected one of bias_every_rank, skip_all_reduce, skip_gather, "
	    "wrong_shard_dim, tp_allreduce_weight_grad, same_dropout_seed)"),
	BAD(BASE ",'plan':{'fc2':{'style':'rowwise','output':'shard(0)'}},"
		 "'inject':['skip_all_reduce']}",
	    TPS_ERR_INPUT,
	    "cfg.json: /inject/0: skip_all_reduce needs a rowwise linear "
	    "whose output is replicated (by its all_reduce), on a tp group "
	    "of 2 or more ranks (this model has none)"),
	BAD(BASE ",'plan':{'fc2':'rowwise'},'inject':['bias_every_rank',"
		 "'skip_all_reduce']}",
	    TPS_ERR_UNSUPPORTED,
	    "cfg.json: /inject/1: one mistake at a time, so that its symptom "
	    "is its own"),
	BAD(BASE ",'plan':{'fc1':'colwise'},'inject':['bias_every_rank']}",
	    TPS_ERR_INPUT,
	    "cfg.json: /inject/0: bias_every_rank needs a rowwise linear with "
	    "a bias, on a tp group of 2 or more ranks (this model has none)"),
	BAD(BASE ",'plan':{'fc2':'rowwise'},'inject':['bias_every_rank'],"
		 "'mode':'training'}",
	    TPS_ERR_UNSUPPORTED,
	    "cfg.json: /inject/0: bias_every_rank is injected in inference "
	    "only (this config trains)"),
	BAD(BASE ",'plan':{'fc2':'rowwise'},"
		 "'inject':['tp_allreduce_weight_grad']}",
	    TPS_ERR_UNSUPPORTED,
	    "cfg.json: /inject/0: tp_allreduce_weight_grad is injected in "
	    "training only (this config runs inference)"),
	BAD(BASE ",'plan':{'fc1':'colwise'},'inject':['skip_gather']}",
	    TPS_ERR_INPUT,
	    "cfg.json: /inject/0: skip_gather needs a colwise linear whose "
	    "output is replicated (by its all_gather), on a tp group of 2 or "
	    "more ranks (this model has none)"),
	BAD(BASE ",'inject':['wrong_shard_dim']}", TPS_ERR_INPUT,
	    "cfg.json: /inject/0: wrong_shard_dim needs a colwise or rowwise "
	    "linear, on a tp group of 2 or more ranks (this model has none)"),
	BAD(TRAIN ",'inject':['tp_allreduce_weight_grad']}", TPS_ERR_INPUT,
	    "cfg.json: /inject/0: tp_allreduce_weight_grad needs a colwise or "
	    "rowwise linear, on a tp group of 2 or more ranks (this model has "
	    "none)"),
	/* Names from PyTorch's API and from write-ups, with what to use. */
	BAD(BASE ",'plan':{'fc1':'ColwiseParallel'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1: unknown style \"ColwiseParallel\": "
	    "PyTorch's ColwiseParallel is \"colwise\" here"),
	BAD(BASE ",'plan':{'fc2':'RowwiseParallel'}}", TPS_ERR_INPUT,
	    "RowwiseParallel is \"rowwise\" here"),
	BAD(BASE ",'plan':{'fc2':'SequenceParallel'}}", TPS_ERR_INPUT,
	    "SequenceParallel is \"sequence\" here"),
	BAD(BASE ",'plan':{'fc1':'ShardingParallel'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1: unknown style \"ShardingParallel\": "
	    "PyTorch has no ShardingParallel; a sharded linear is \"colwise\" "
	    "(ColwiseParallel) or \"rowwise\" (RowwiseParallel)"),
	BAD(BASE ",'plan':{'fc1':{'style':'PipelineParallel'}}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/style: unknown style \"PipelineParallel\": "
	    "PipelineParallel is not a tensor-parallel style"),
	BAD(BASE ",'plan':{'fc1':'tp.einsum'}}", TPS_ERR_INPUT,
	    "unknown style \"tp.einsum\": PyTorch has no tp.einsum"),
	BAD(BASE ",'plan':{'fc1':'ColwiseParallel(dim=1)'}}", TPS_ERR_INPUT,
	    "unknown style \"ColwiseParallel(dim=1)\": ColwiseParallel takes "
	    "no dim; sharding a linear's input features (the weight's dim 1) "
	    "is RowwiseParallel, \"rowwise\""),
	BAD(BASE ",'plan':{'fc2':'RowwiseParallel(dim=0)'}}", TPS_ERR_INPUT,
	    "is ColwiseParallel, \"colwise\""),
	BAD(BASE ",'plan':{'fc1':'DataParallel'}}", TPS_ERR_INPUT,
	    "data parallelism is not a plan style"),
	BAD(BASE ",'plan':{'fc1':1}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1: expected a style string or an object with "
	    "\"style\", got 1"),
	BAD(BASE ",'plan':{'fc1':['colwise']}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1: expected a style string or an object with "
	    "\"style\", got an array"),
	BAD(BASE ",'plan':{'fc1':{'style':1}}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/style: expected a string, got 1"),
	BAD(BASE ",'plan':{'fc1':{'input':'replicate'}}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/style: missing"),
	BAD(BASE ",'plan':{'fc2':{'style':'rowwise','bias':'before_reduce'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc2/bias: unknown bias mode \"before_reduce\" "
	    "(expected one of after_reduce, partial_split, rank0)"),
	BAD(BASE ",'plan':{'fc2':{'style':'rowwise','bias':true}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc2/bias: expected a string, got true"),
	BAD(BASE ",'plan':{'fc1':'sequence'}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1: sequence cannot apply to linear module "
	    "\"fc1\" (a linear is split \"colwise\" or \"rowwise\", or "
	    "replicated)"),
	BAD(BASE ",'plan':{'fc1':{'style':'vocab'}}}", TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/style: vocab cannot apply to linear module "
	    "\"fc1\" (a linear is split \"colwise\" or \"rowwise\", or "
	    "replicated)"),
	/* embedding, token ids, cross_entropy */
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'values':[[0,6]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: token id 6 (value 1 in row-major order) "
	    "is not an integer in [0, 6), the vocabulary of /model/0"),
	/* Each type's own limits (its descriptor's), which the schema
	 * states too. */
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':"
		"16777217,'embedding_dim':4}],'input':{'shape':[2,3],'init':"
		"'tokens'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/num_embeddings: out of range (expected 1 to "
	    "16777216, got 16777217)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':"
		"1048577,'num_heads':1}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/embed_dim: out of range (expected 1 to "
	    "1048576, got 1048577)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':1048577}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/num_heads: out of range (expected 1 to "
	    "1048576, got 1048577)"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'values':[[0,1.5]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: token id 1.5 (value 1 in row-major "
	    "order) is not an integer in [0, 6)"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[2,3],'init':'uniform'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/init: the input of an embedding is token ids: "
	    "\"init\": \"tokens\", or explicit \"values\""),
	BAD(HDR MODEL ",'input':{'shape':[2,4],'init':'tokens'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/init: \"tokens\" draws token ids, for a model "
	    "that starts with an embedding"),
	BAD(HDR "'model':[" FC1 ",{'name':'emb','type':'embedding',"
		"'num_embeddings':6,'embedding_dim':4}]," INPUT "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1: an embedding reads the model's input token "
	    "ids: it must be the first module"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6}"
		"],'input':{'shape':[2,3]}}",
	    TPS_ERR_INPUT, "cfg.json: /model/0/embedding_dim: missing"),
	/* The embedding adds a dim: 4-dim ids would make 5-dim activations. */
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[1,1,2,3],'init':"
		"'tokens'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/shape: token ids have at most 3 dims: the "
	    "embedding /model/0 adds one (embedding_dim) and a tensor has at "
	    "most 4, got 4"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'values':[[[[1,2]]]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: token ids have at most 3 dims: the "
	    "embedding /model/0 adds one (embedding_dim) and a tensor has at "
	    "most 4, got 4"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[2,3]},"
		"'plan':{'emb':'colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/emb: colwise cannot apply to embedding module "
	    "\"emb\" (an embedding splits its vocabulary, \"vocab\", or is "
	    "replicated)"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'mode':'training',"
		"'input':{'shape':[2,3],'init':'tokens','requires_grad':true}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/requires_grad: token ids take no gradient "
	    "(/model/0 is an embedding)"),
	BAD(TRAIN ",'loss':'cross_entropy','target':{'values':[0,4]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /target/values: class id 4 (value 1 in row-major "
	    "order) is not an integer in [0, 4), the output's classes"),
	BAD(TRAIN ",'loss':'cross_entropy','target':{'init':'uniform'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /target/init: a cross_entropy target is class ids: "
	    "\"init\": \"tokens\", or explicit \"values\""),
	BAD(TRAIN ",'loss':'cross_entropy','target':{'shape':[2,4]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /target/shape: expected [2], the model output's shape "
	    "without its classes, got [2, 4]"),
	BAD(BASE ",'params':{'act.weight':[1]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/act.weight: no parameter \"act.weight\" in the "
	    "model (expected <module>.weight or .bias of a module that has "
	    "it)"),
	BAD(WITH_MODEL("{'name':'ln','type':'layernorm','dim':4}") ","
								   "'params':{'"
								   "ln.weight':"
								   "[1,2,3]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /params/ln.weight: expected 4 elements (dim 0 of the "
	    "parameter's shape), got 3"),
	BAD(TRAIN ",'loss_parallel':true}", TPS_ERR_INPUT,
	    "cfg.json: /loss_parallel: loss_parallel is a cross_entropy over "
	    "sharded logits (this config's loss is \"mse\")"),
	BAD(TRAIN ",'loss':'cross_entropy','loss_parallel':true}",
	    TPS_ERR_INPUT,
	    "cfg.json: /loss_parallel: loss_parallel takes the logits sharded "
	    "over their classes: the model must end with a colwise linear "
	    "whose output is shard(-1) (/model/2 is not)"),
	BAD(TRAIN ",'loss':'cross_entropy','loss_parallel':true,'plan':{'fc2':"
		  "{'style':'colwise','output':'replicate'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /loss_parallel: loss_parallel takes the logits sharded "
	    "over their classes: the model must end with a colwise linear "
	    "whose output is shard(-1) (/plan/fc2 is not)"),
	BAD(BASE ",'loss_parallel':true}", TPS_ERR_INPUT,
	    "cfg.json: /loss_parallel: \"loss_parallel\" needs \"mode\": "
	    "\"training\""),
	BAD(TRAIN ",'target':{'init':'tokens'}}", TPS_ERR_INPUT,
	    "cfg.json: /target/init: \"tokens\" draws class ids, for loss "
	    "\"cross_entropy\""),
	BAD(BASE ",'init':{'method':'tokens'}}", TPS_ERR_INPUT,
	    "cfg.json: /init/method: \"tokens\" draws token ids, for inputs "
	    "and targets, not parameters"),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','input':'shard(9)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/input: shard(9) is out of range for the "
	    "2-dim activations"),
	/* A vocab embedding looks up replicated token ids (2-dim here, its
	 * output 3-dim): an input layout that would split them is not one
	 * it uses, and its dims are the ids'. */
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[2,3],'init':'tokens'},"
		"'plan':{'emb':{'style':'vocab','input':'shard(1)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/emb/input: a vocab embedding looks up the token "
	    "ids on every rank, replicated: its input is \"replicate\" (got "
	    "shard(1))"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[2,3],'init':'tokens'},"
		"'plan':{'emb':{'style':'vocab','input':'shard(-1)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/emb/input: a vocab embedding looks up the token "
	    "ids on every rank, replicated: its input is \"replicate\" (got "
	    "shard(-1))"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[2,3],'init':'tokens'},"
		"'plan':{'emb':{'style':'vocab','input':'shard(9)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/emb/input: shard(9) is out of range for the "
	    "2-dim token ids"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[2,3],'init':'tokens'},"
		"'plan':{'emb':{'style':'vocab','input':'shard(2)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/emb/input: shard(2) is out of range for the "
	    "2-dim token ids"),
	BAD(HDR "'model':[{'name':'emb','type':'embedding','num_embeddings':6,"
		"'embedding_dim':4}],'input':{'shape':[2,3],'init':'tokens'},"
		"'plan':{'emb':{'style':'vocab','output':'shard(3)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/emb/output: shard(3) is out of range for the "
	    "3-dim activations"),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','output':'shard(-3)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/output: shard(-3) is out of range"),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','output':'shard(x)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/output: expected \"replicate\" or "
	    "\"shard(d)\", got string \"shard(x)\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','output':'shard(1'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/output: expected \"replicate\" or "
	    "\"shard(d)\", got string \"shard(1\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','output':'shard( 1)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/output: expected \"replicate\" or "
	    "\"shard(d)\", got string \"shard( 1)\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','output':'shard(+1)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/output: expected \"replicate\" or "
	    "\"shard(d)\", got string \"shard(+1)\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','output':'Shard(1)'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/output: expected \"replicate\" or "
	    "\"shard(d)\", got string \"Shard(1)\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','output':'partial'}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/output: expected \"replicate\" or "
	    "\"shard(d)\", got string \"partial\""),
	BAD(BASE ",'plan':{'fc1':{'style':'colwise','input':1}}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/fc1/input: expected \"replicate\" or "
	    "\"shard(d)\", got 1"),

	/* params. */
	BAD(BASE ",'params':[1]}", TPS_ERR_INPUT,
	    "cfg.json: /params: expected an object, got an array"),
	BAD(BASE ",'params':{'fc3.weight':[1]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc3.weight: no parameter \"fc3.weight\" in the "
	    "model"),
	BAD(BASE ",'params':{'act.weight':[1]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/act.weight: no parameter \"act.weight\""),
	BAD(BASE ",'params':{'fc1':[1]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1: no parameter \"fc1\""),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':4,"
		       "'out_features':2,'bias':false}") ",'params':{'fc1.bias'"
							 ":[0,0]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias: no parameter \"fc1.bias\""),
	BAD(BASE ",'params':{'fc1.bias':[1,2,3]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias: expected 8 elements (dim 0 of the "
	    "parameter's shape), got 3"),
	BAD(BASE ",'params':{'fc1.bias':1}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias: expected an array, got 1"),
	BAD(BASE ",'params':{'fc1.weight':[1,2,3,4,5,6,7,8]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/0: expected an array, got 1"),
	BAD(BASE ",'params':{'fc1.weight':" EIGHT_ROWS_OF("[1,2,3]") "}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/0: expected 4 elements (dim 1 of "
	    "the parameter's shape), got 3"),
	BAD(BASE ",'params':{'fc2.weight':" EIGHT_ROWS_OF("[1,2,3,4]") "}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc2.weight: expected 4 elements (dim 0 of "
	    "the parameter's shape), got 8"),
	BAD(BASE ",'params':{'fc1.bias':[0,0,'x',0,0,0,0,0]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias/2: expected a number, "
	    "got string \"x\""),
	BAD(BASE ",'params':{'fc1.bias':[0,0,0,1e39,0,0,0,0]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias/3: expected a finite float32 value"),
	BAD(BASE ",'params':{'fc1.bias':[0,0,0,0,0,0,0,-1e39]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias/7: expected a finite float32 value"),
	BAD(BASE ",'params':{'fc1.bias':[0,0,0,0,0,0,0,1e999]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias/7: "),
	BAD(BASE ",'params':{'fc1.bias':[0,0,0,0,0,0,0,[0]]}}", TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.bias/7: expected a number, got an array"),
	/* A 2^31-element weight: refused on its shape, not by allocating. */
	BAD(WITH_MODEL(
		    "{'name':'fc1','type':'linear','in_features':65536,"
		    "'out_features':32768}") ",'params':{'fc1.weight':[[1]]}}",
	    TPS_ERR_INPUT, "cfg.json: /input/shape/1: expected 65536"),
	BAD("{'tpsim':1," MESH_TP ",'model':[{'name':'fc1','type':'linear',"
	    "'in_features':65536,'out_features':32768}],'input':{'shape':"
	    "[1,65536]},'params':{'fc1.weight':[[1]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight: expected 32768 elements (dim 0 of "
	    "the parameter's shape), got 1"),

	/* The other top-level settings. */
	BAD(BASE ",'uneven':'ragged'}", TPS_ERR_INPUT,
	    "cfg.json: /uneven: unknown uneven policy \"ragged\" (expected "
	    "one of chunk, divisible)"),
	BAD(BASE ",'uneven':true}", TPS_ERR_INPUT,
	    "cfg.json: /uneven: expected a string, got true"),
	BAD(DP_BATCH("5") ",'sampler':'distributed'}", TPS_ERR_INPUT,
	    "cfg.json: /sampler: DistributedSampler needs the batch (5) "
	    "divisible by the dp size (2): PyTorch would pad by repeating "
	    "samples (drop_last=False)"),
	BAD(BASE ",'sampler':'strided'}", TPS_ERR_INPUT,
	    "cfg.json: /sampler: unknown sampler \"strided\""),
	BAD(BASE ",'mode':'eval'}", TPS_ERR_INPUT,
	    "cfg.json: /mode: unknown mode \"eval\""),
	BAD(BASE ",'init':'uniform'}", TPS_ERR_INPUT,
	    "cfg.json: /init: expected an object, got string \"uniform\""),
	BAD(BASE ",'init':{'method':'xavier'}}", TPS_ERR_INPUT,
	    "cfg.json: /init/method: unknown init method \"xavier\" (expected "
	    "one of arange, ones, zeros, uniform, normal, tokens, torch)"),
	/* "torch" is each parameter's PyTorch default: no input's or
	 * target's. */
	BAD(HDR MODEL ",'input':{'shape':[2,4],'init':'torch'}}", TPS_ERR_INPUT,
	    "cfg.json: /input/init: \"torch\" gives each parameter its "
	    "PyTorch default, for /init/method; the input is no module's "
	    "(expected arange, ones, zeros, uniform or normal)"),
	BAD(TRAIN ",'target':{'init':'torch'}}", TPS_ERR_INPUT,
	    "cfg.json: /target/init: \"torch\" gives each parameter its "
	    "PyTorch default, for /init/method; the target is no module's "
	    "(expected arange, ones, zeros, uniform or normal)"),
	BAD(TRAIN ",'loss':'cross_entropy','target':{'init':'torch'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /target/init: \"torch\" gives each parameter its "
	    "PyTorch default, for /init/method; the target is no module's "
	    "(expected tokens)"),
	BAD(BASE ",'init':{'method':'ones','seed':'7'}}", TPS_ERR_INPUT,
	    "cfg.json: /init/seed: expected an integer, got string \"7\""),
	BAD(BASE ",'init':{'seed':1e300}}", TPS_ERR_INPUT,
	    "cfg.json: /init/seed: out of range"),
	BAD(BASE ",'trace':'full'}", TPS_ERR_INPUT,
	    "cfg.json: /trace: expected an object, got string \"full\""),
	BAD(BASE ",'trace':{'values':'all'}}", TPS_ERR_INPUT,
	    "cfg.json: /trace/values: unknown values mode \"all\" (expected "
	    "one of full, summary, none)"),
	BAD(BASE ",'tolerance':1e-5}", TPS_ERR_INPUT,
	    "cfg.json: /tolerance: expected an object, got 0.00001"),
	BAD(BASE ",'tolerance':{'atol':-1}}", TPS_ERR_INPUT,
	    "cfg.json: /tolerance/atol: expected a finite number >= 0, got -1"),
	BAD(BASE ",'tolerance':{'rtol':-1e-9}}", TPS_ERR_INPUT,
	    "cfg.json: /tolerance/rtol: expected a finite number >= 0"),
	BAD(BASE ",'tolerance':{'atol':'0'}}", TPS_ERR_INPUT,
	    "cfg.json: /tolerance/atol: expected a number, got string \"0\""),
	/* dtype: one name, or an object by role (issue 17). */
	BAD(BASE ",'dtype':'bf16'}", TPS_ERR_INPUT,
	    "cfg.json: /dtype: unknown dtype \"bf16\" (expected one of "
	    "float32, bfloat16, float16)"),
	BAD(BASE ",'dtype':16}", TPS_ERR_INPUT,
	    "cfg.json: /dtype: expected a dtype (float32, bfloat16 or "
	    "float16) or an object of dtypes by role, got 16"),
	BAD(BASE ",'dtype':['bfloat16']}", TPS_ERR_INPUT,
	    "cfg.json: /dtype: expected a dtype (float32, bfloat16 or "
	    "float16) or an object of dtypes by role, got an array"),
	BAD(BASE ",'dtype':{'default':'bfloat16','grads':'fp32'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dtype/grads: unknown dtype \"fp32\" (expected one of "
	    "float32, bfloat16, float16)"),
	BAD(BASE ",'dtype':{'reduce':true}}", TPS_ERR_INPUT,
	    "cfg.json: /dtype/reduce: expected a string, got true"),
	BAD(BASE ",'dtype':{'weights':'bfloat16'}}", TPS_ERR_INPUT,
	    "cfg.json: /dtype/weights: unknown key \"weights\""),
	BAD(BASE ",'dtype':{'params':'float16','master_params':'bfloat16'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dtype/master_params: expected float32 or the params' "
	    "dtype float16 (a master copy is kept wider than the parameters), "
	    "got bfloat16"),
	BAD(BASE ",'dtype':{'master_params':'float16'}}", TPS_ERR_INPUT,
	    "cfg.json: /dtype/master_params: expected float32 or the params' "
	    "dtype float32"),

	/* Training keys outside training. */
	BAD(BASE ",'steps':2}", TPS_ERR_INPUT,
	    "cfg.json: /steps: \"steps\" needs \"mode\": \"training\" (this "
	    "config runs inference)"),
	BAD(BASE ",'loss':'mse'}", TPS_ERR_INPUT,
	    "cfg.json: /loss: \"loss\" needs \"mode\": \"training\""),
	BAD(BASE ",'target':{'init':'zeros'}}", TPS_ERR_INPUT,
	    "cfg.json: /target: \"target\" needs \"mode\": \"training\""),
	BAD(BASE ",'optimizer':{'type':'sgd','lr':0.1}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer: \"optimizer\" needs \"mode\": "
	    "\"training\""),
	BAD(BASE ",'dp_grad':'global','mode':'inference'}", TPS_ERR_INPUT,
	    "cfg.json: /dp_grad: \"dp_grad\" needs \"mode\": \"training\""),

	/* Training. */
	BAD(TRAIN ",'steps':0}", TPS_ERR_INPUT,
	    "cfg.json: /steps: out of range (expected 1 to 1000000, got 0)"),
	BAD(TRAIN ",'steps':1000001}", TPS_ERR_INPUT,
	    "cfg.json: /steps: out of range"),
	BAD(TRAIN ",'steps':1.5}", TPS_ERR_INPUT,
	    "cfg.json: /steps: expected an integer, got 1.5"),
	BAD(TRAIN ",'loss':'l1'}", TPS_ERR_INPUT,
	    "cfg.json: /loss: unknown loss \"l1\" (expected one of mse, sum, "
	    "cross_entropy)"),
	BAD(TRAIN ",'target':{'shape':[2,3]}}", TPS_ERR_INPUT,
	    "cfg.json: /target/shape: expected [2, 4], the model output's "
	    "shape, got [2, 3]"),
	BAD(TRAIN ",'target':{'shape':[2,4,1]}}", TPS_ERR_INPUT,
	    "cfg.json: /target/shape: expected [2, 4], the model output's "
	    "shape, got [2, 4, 1]"),
	BAD(TRAIN ",'target':{'shape':[2,0]}}", TPS_ERR_INPUT,
	    "cfg.json: /target/shape/1: out of range"),
	BAD(TRAIN ",'loss':'sum','target':{'init':'ones'}}", TPS_ERR_INPUT,
	    "cfg.json: /target: loss \"sum\" takes no target"),
	BAD(TRAIN ",'target':{'init':'ones','std':1}}", TPS_ERR_INPUT,
	    "cfg.json: /target/std: unknown key \"std\" (expected one of: "
	    "init, seed, shape, values)"),
	BAD(TRAIN ",'target':{'init':'random'}}", TPS_ERR_INPUT,
	    "cfg.json: /target/init: unknown init method \"random\""),
	BAD(TRAIN ",'target':'zeros'}", TPS_ERR_INPUT,
	    "cfg.json: /target: expected an object, got string \"zeros\""),
	BAD(TRAIN ",'optimizer':{'type':'adam'}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/type: unknown optimizer \"adam\" (expected "
	    "one of sgd, adamw)"),
	BAD(TRAIN ",'optimizer':'sgd'}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer: expected an object, got string \"sgd\""),
	BAD(TRAIN ",'optimizer':{'type':'adamw','momentum':0.9}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /optimizer/momentum: unknown key \"momentum\" (expected "
	    "one of: type, lr, betas, eps, weight_decay)"),
	BAD(TRAIN ",'optimizer':{'eps':1e-6}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/eps: unknown key \"eps\" (expected one of: "
	    "type, lr, momentum, dampening, weight_decay, nesterov)"),
	BAD(TRAIN ",'optimizer':{'type':'sgd','lr':-0.1}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/lr: expected a finite number >= 0, "
	    "got -0.1"),
	BAD(TRAIN ",'optimizer':{'type':'adamw','lr':-1e-3}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/lr: expected a finite number >= 0"),
	BAD(TRAIN ",'optimizer':{'lr':1e400}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/lr: expected a finite number >= 0, got a "
	    "number out of range"),
	BAD(TRAIN ",'optimizer':{'lr':'0.1'}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/lr: expected a number, got string \"0.1\""),
	BAD(TRAIN ",'optimizer':{'momentum':-0.9}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/momentum: expected a finite number >= 0, "
	    "got -0.9"),
	BAD(TRAIN ",'optimizer':{'weight_decay':-1}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/weight_decay: expected a finite number >= 0"),
	BAD(TRAIN ",'optimizer':{'dampening':-1e400}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/dampening: expected a finite number, got a "
	    "number out of range"),
	BAD(TRAIN ",'optimizer':{'nesterov':true}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/nesterov: Nesterov momentum requires a "
	    "momentum and zero dampening (PyTorch's SGD; got momentum 0, "
	    "dampening 0)"),
	BAD(TRAIN ",'optimizer':{'nesterov':true,'momentum':0.9,"
		  "'dampening':0.1}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /optimizer/nesterov: Nesterov momentum requires a "
	    "momentum and zero dampening (PyTorch's SGD; got momentum 0.9, "
	    "dampening 0.1)"),
	BAD(TRAIN ",'optimizer':{'nesterov':1}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/nesterov: expected true or false, got 1"),
	BAD(TRAIN ",'optimizer':{'type':'adamw','eps':-1e-8}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/eps: expected a finite number >= 0"),
	BAD(TRAIN ",'optimizer':{'type':'adamw','weight_decay':-0.01}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /optimizer/weight_decay: expected a finite number >= 0"),
	BAD(TRAIN ",'optimizer':{'type':'adamw','betas':0.9}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/betas: expected an array [beta1, beta2], "
	    "got 0.9"),
	BAD(TRAIN ",'optimizer':{'type':'adamw','betas':[0.9]}}", TPS_ERR_INPUT,
	    "cfg.json: /optimizer/betas: expected 2 numbers [beta1, beta2], "
	    "got 1"),
	BAD(TRAIN ",'optimizer':{'type':'adamw','betas':[0.9,1]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /optimizer/betas/1: expected a number in [0, 1), got 1"),
	BAD(TRAIN ",'optimizer':{'type':'adamw','betas':[-0.1,0.999]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /optimizer/betas/0: expected a number in [0, 1), "
	    "got -0.1"),
	BAD(TRAIN ",'dp_grad':'local'}", TPS_ERR_INPUT,
	    "cfg.json: /dp_grad: unknown dp_grad \"local\" (expected one of "
	    "global, ddp)"),
	/* What sequence parallel keeps for backward (issue 20). */
	BAD(BASE ",'sequence_parallel_save':'shard'}", TPS_ERR_INPUT,
	    "cfg.json: /sequence_parallel_save: \"sequence_parallel_save\" "
	    "needs \"mode\": \"training\" (this config runs inference)"),
	BAD(TRAIN ",'sequence_parallel_save':'input'}", TPS_ERR_INPUT,
	    "cfg.json: /sequence_parallel_save: unknown sequence_parallel_save "
	    "\"input\" (expected one of shard, gathered)"),
	BAD(TRAIN ",'sequence_parallel_save':true}", TPS_ERR_INPUT,
	    "cfg.json: /sequence_parallel_save: expected a string"),
	/* Activation recompute (issue 20): training only, a known kind,
	 * "full" needs transformer_blocks to run again and "selective" an
	 * attention (TRAIN's model is one linear). */
	BAD(BASE ",'recompute':'none'}", TPS_ERR_INPUT,
	    "cfg.json: /recompute: \"recompute\" needs \"mode\": "
	    "\"training\" (this config runs inference)"),
	BAD(TRAIN ",'recompute':'Selective'}", TPS_ERR_INPUT,
	    "cfg.json: /recompute: unknown recompute \"Selective\" (expected "
	    "one of none, selective, full)"),
	BAD(TRAIN ",'recompute':'selective'}", TPS_ERR_INPUT,
	    "cfg.json: /recompute: \"selective\" recomputes each attention's "
	    "core from its q, k and v, and this model has no attention"),
	BAD(BASE ",'recompute':'selective'}", TPS_ERR_INPUT,
	    "cfg.json: /recompute: \"recompute\" needs \"mode\": "
	    "\"training\" (this config runs inference)"),
	BAD(TRAIN ",'recompute':'Full'}", TPS_ERR_INPUT,
	    "cfg.json: /recompute: unknown recompute \"Full\""),
	BAD(TRAIN ",'recompute':1}", TPS_ERR_INPUT,
	    "cfg.json: /recompute: expected a string"),
	BAD(TRAIN ",'recompute':'full'}", TPS_ERR_INPUT,
	    "cfg.json: /recompute: \"full\" recomputes each transformer_block "
	    "from its input, and this model has none"),
	/* Batch 1 over dp 2: rank 1's local mse is a mean over nothing. */
	BAD(DP_BATCH("1") ",'mode':'training','dp_grad':'ddp'}", TPS_ERR_INPUT,
	    "cfg.json: /dp_grad: \"ddp\" with loss \"mse\" needs samples on "
	    "every dp rank, but dp rank 1 of 2 gets none of the batch of 1 "
	    "(chunk sampler): its loss, the mean over no elements, is NaN, "
	    "as in PyTorch"),
	/* 2 rows over dp and cp flattened: one chunk over the group, 1, 1,
	 * 0, 0; as a chunk of a chunk, 1, 0, 1, 0. */
	BAD(MESH_DP_CP_TP ",'dp_dim':['dp','cp'],'mode':'training',"
			  "'dp_grad':'ddp'}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dp_grad: \"ddp\" with loss \"mse\" needs samples on "
	    "every dp rank, but dp rank 2 of 4 gets none of the batch of 2 "
	    "(chunk sampler)"),
	BAD(MESH_DP_CP_TP ",'dp_dim':['dp','cp'],'mode':'training',"
			  "'dp_grad':'ddp','sampler':'chunk_of_chunks'}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dp_grad: \"ddp\" with loss \"mse\" needs samples on "
	    "every dp rank, but dp rank 1 of 4 gets none of the batch of 2 "
	    "(chunk_of_chunks sampler)"),

	/* ZeRO (docs/zero.md): over the dp dims, in training, stage 1-2. */
	BAD(TRAIN ",'zero':{'stage':2}}", TPS_ERR_INPUT,
	    "cfg.json: /zero: ZeRO shards over the dp dims, but the config "
	    "has no \"dp_dim\": expected a dp_dim, or no \"zero\""),
	BAD(DP_BATCH("4") ",'zero':{'stage':1}}", TPS_ERR_INPUT,
	    "cfg.json: /zero: \"zero\" needs \"mode\": \"training\" (this "
	    "config runs inference)"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{'stage':4}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero/stage: out of range (expected 1 to 3, got 4)"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{'stage':0}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero/stage: out of range (expected 1 to 3, got 0)"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{'stage':'2'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero/stage: expected an integer, got string "
	    "\"2\""),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{}}", TPS_ERR_INPUT,
	    "cfg.json: /zero/stage: missing"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':2}", TPS_ERR_INPUT,
	    "cfg.json: /zero: expected an object, got 2"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{'stage':1,'bucket':1}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero/bucket: unknown key \"bucket\" "
	    "(expected one of: stage, reshard_after_forward, "
	    "distributed_optimizer)"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{'stage':2,"
			  "'reshard_after_forward':false}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero/reshard_after_forward: \"reshard_after_forward\" "
	    "is stage 3's (FSDP's fully_shard): stage 2 keeps every parameter "
	    "whole"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{'stage':2,"
			  "'distributed_optimizer':true}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero/distributed_optimizer: \"distributed_optimizer\" "
	    "(Megatron's) is a stage 1 option: stage 2 reduce_scatters the "
	    "gradients already"),
	BAD(DP_BATCH("4") ",'mode':'training','zero':{'stage':1,"
			  "'distributed_optimizer':1}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero/distributed_optimizer: "
	    "expected true or false, got 1"),
	BAD("{'tpsim':1," MESH_DP_TP ",'dp_dim':'dp','model':[{'name':'tok',"
	    "'type':'embedding','num_embeddings':6,'embedding_dim':4},{'name':"
	    "'head','type':'linear','in_features':4,'out_features':6,'bias':"
	    "false,'tie':'tok'}],'input':{'shape':[2,3],'init':'tokens'},"
	    "'mode':'training','zero':{'stage':3}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /zero: stage 3 shards each module's own parameters, but "
	    "head ties its weight to tok's: expected no tie, or stage 1 or 2"),

	/* Pipeline parallelism (docs/pipeline.md): training only, on a dim
	 * of its own; microbatches cut every dp rank's part evenly;
	 * virtual_stages only interleaved, whose microbatches are a multiple
	 * of p; every virtual stage holds modules, the ranges in order and
	 * covering the model; a tie within one stage; recompute's blocks
	 * whole. */
	BAD("{'tpsim':1," MESH_PP_TP "," MODEL "," INPUT ",'pipeline':{'dim':"
	    "'pp','microbatches':1}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline: \"pipeline\" needs \"mode\": \"training\" "
	    "(this config runs inference)"),
	BAD(PP("4", "2"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline: expected an object, got 2"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'chunks':2}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/chunks: unknown key \"chunks\" (expected one "
	    "of: dim, microbatches, schedule, virtual_stages, stages)"),
	BAD(PP("4", "{'microbatches':2}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: missing"),
	BAD(PP("4", "{'dim':0,'microbatches':2}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: expected a mesh dim name, got 0"),
	BAD(PP("4", "{'dim':'pipe','microbatches':2}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: no mesh dim is named \"pipe\""),
	BAD(PP("4", "{'dim':'tp','microbatches':2}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: \"tp\" is the tp dim (/tp_dim, by "
	    "default the last mesh dim): expected a dim of its own, the "
	    "stages over it"),
	BAD(PP_DP("[2,2,2]", "4", "{'dim':'dp','microbatches':1}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: \"dp\" is a dp dim (/dp_dim): expected "
	    "a dim of its own, the stages over it"),
	BAD(PP("4", "{'dim':'pp'}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: missing"),
	BAD(PP("4", "{'dim':'pp','microbatches':0}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: out of range (expected 1 to "
	    "65536, got 0)"),
	BAD(PP("4", "{'dim':'pp','microbatches':1.5}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: expected an integer, got 1.5"),
	BAD(PP("4", "{'dim':'pp','microbatches':3}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: the batch of 4 rows "
	    "(/input/shape/0) is not a multiple of 3 microbatches (expected "
	    "equal microbatches of at least one row)"),
	BAD(PP("4", "{'dim':'pp','microbatches':8}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: the batch of 4 rows "
	    "(/input/shape/0) is not a multiple of 8 microbatches"),
	/* After the dp split, as Megatron cuts each dp rank's part: 6 rows
	 * over dp 2 are 3 and 3, and over dp 4 (chunk) 2, 2, 2, 0. */
	BAD(PP_DP("[2,2,2]", "6", "{'dim':'pp','microbatches':2}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: dp rank 0's part of the batch "
	    "is 3 rows (of 6, chunk sampler), not a multiple of 2 microbatches "
	    "(expected every dp rank's part cut in equal microbatches of at "
	    "least one row)"),
	BAD(PP_DP("[4,2,2]", "6", "{'dim':'pp','microbatches':2}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: dp rank 3's part of the batch "
	    "is 0 rows (of 6, chunk sampler), not a multiple of 2 "
	    "microbatches"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'schedule':'zero_bubble'}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/schedule: unknown schedule \"zero_bubble\" "
	    "(expected one of gpipe, 1f1b, interleaved_1f1b)"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'schedule':1}"),
	    TPS_ERR_INPUT, "cfg.json: /pipeline/schedule: expected a string"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'schedule':'gpipe',"
		    "'virtual_stages':2}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/virtual_stages: virtual_stages (model chunks "
	    "per stage) is interleaved_1f1b's: schedule gpipe runs one chunk "
	    "per stage"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'virtual_stages':2}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/virtual_stages: virtual_stages (model chunks "
	    "per stage) is interleaved_1f1b's: schedule 1f1b runs one chunk "
	    "per stage"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'schedule':"
		    "'interleaved_1f1b'}"),
	    TPS_ERR_INPUT, "cfg.json: /pipeline/virtual_stages: missing"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'schedule':"
		    "'interleaved_1f1b','virtual_stages':1}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/virtual_stages: out of range (expected 2 to "
	    "65536, got 1)"),
	BAD(PP("4", "{'dim':'pp','microbatches':4,'schedule':"
		    "'interleaved_1f1b','virtual_stages':65536}"),
	    TPS_ERR_LIMIT,
	    "cfg.json: /pipeline/virtual_stages: microbatches x "
	    "virtual_stages is 262144, past the limit 65536"),
	BAD(PP("3", "{'dim':'pp','microbatches':3,'schedule':"
		    "'interleaved_1f1b','virtual_stages':2}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/microbatches: 3 microbatches, not a multiple "
	    "of the 2 stages: interleaved_1f1b runs them in groups of p "
	    "(expected a multiple, as Megatron requires)"),
	/* A dropout's masks follow each element's place in the batch. */
	BAD("{'tpsim':1," MESH_PP_TP ",'model':[" FC1 ",{'name':'drop','type':"
	    "'dropout','p':0.5}," FC2 "],'input':{'shape':[4,4]},'mode':"
	    "'training','pipeline':{'dim':'pp','microbatches':2}}",
	    TPS_ERR_UNSUPPORTED,
	    "cfg.json: /pipeline/microbatches: dropout drop draws each "
	    "element's mask from its place in the batch, which tpsim does not "
	    "carry into 2 microbatches: expected 1 microbatch, no dropout, or "
	    "\"compute\": \"symbolic\" (which draws no mask)"),
	/* More virtual stages than top-level modules (fc1, act, fc2). */
	BAD("{'tpsim':1,'mesh':{'shape':[4,2],'dim_names':['pp','tp']}," MODEL
	    "," INPUT ",'mode':'training','pipeline':{'dim':'pp',"
	    "'microbatches':1}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: 4 virtual stages (4 stages x 1 "
	    "virtual_stages) for a model of 3 top-level modules: expected at "
	    "most one stage per module, no stage without modules"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'schedule':"
		    "'interleaved_1f1b','virtual_stages':2}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/virtual_stages: 4 virtual stages (2 stages x "
	    "2 virtual_stages) for a model of 3 top-level modules"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':{}}"), TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages: expected an array of [first, last] "
	    "ranges, got an object"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,2]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages: expected 2 ranges, one per virtual "
	    "stage (2 stages x 1 virtual_stages), got 1"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,1],2]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1: expected [first, last], top-level "
	    "module indices, got 2"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,1],[2]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1: expected [first, last], 2 "
	    "top-level module indices, got 1 numbers"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,1],[2,'2']]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1/1: expected an integer, got string "
	    "\"2\""),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[-1,1],[2,2]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/0/0: out of range (expected 0 to "
	    "4095, got -1)"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,2],[3,3]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1/0: expected a top-level module "
	    "index, 0 to 2 (the model has 3), got 3"),
	/* A stage with no modules. */
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,2],[2,1]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1/0: expected 3, the module after the "
	    "last of /pipeline/stages/0, got 2: module 2 would be in two "
	    "stages (the ranges overlap)"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,1],[2,1]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1/1: last 1 is before first 2: "
	    "virtual stage 1 would have no modules (expected last >= first)"),
	/* Overlapping, leaving a gap, out of order, not covering. */
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,1],[1,2]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1/0: expected 2, the module after the "
	    "last of /pipeline/stages/0, got 1: module 1 would be in two "
	    "stages (the ranges overlap)"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,0],[2,2]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1/0: expected 1, the module after the "
	    "last of /pipeline/stages/0, got 2: module 1 would be in no "
	    "stage"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[1,2],[0,0]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/0/0: expected 0, the model's first "
	    "top-level module, got 1: module 0 would be in no stage"),
	BAD(PP("4", "{'dim':'pp','microbatches':2,'stages':[[0,0],[1,1]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/1/1: expected 2, the model's last "
	    "top-level module, got 1: module 2 would be in no stage"),
	/* A tied weight on two stages (the even split puts tok and head
	 * apart), and a block cut under full recompute. */
	BAD("{'tpsim':1," MESH_PP_TP ",'model':[{'name':'tok','type':"
	    "'embedding','num_embeddings':6,'embedding_dim':4},{'name':'head',"
	    "'type':'linear','in_features':4,'out_features':6,'bias':false,"
	    "'tie':'tok'}],'input':{'shape':[2,3],'init':'tokens'},'mode':"
	    "'training','pipeline':{'dim':'pp','microbatches':1}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: head ties its weight to tok's, but they "
	    "are on virtual stages 1 and 0 (Megatron then all-reduces the tied "
	    "gradient between the two stages, which tpsim does not model): "
	    "expected both in one range, or no tie"),
	BAD(PP_BLOCKS("'recompute':'full','pipeline':{'dim':'pp',"
		      "'microbatches':1,'stages':[[0,0],[1,3]]}"),
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/stages/0/1: the range ends inside the "
	    "transformer_block that starts at b.0.attn_residual "
	    "(\"recompute\": "
	    "\"full\" runs a block again as one chunk, on one stage): expected "
	    "a range that ends at a block's end"),
	BAD("{'tpsim':1,'mesh':{'shape':[4,2],'dim_names':['pp','tp']},"
	    "'model':[{'repeat':2,'name':'b','module':{'type':"
	    "'transformer_block','dim':8,'num_heads':2}}],'input':{'shape':"
	    "[2,3,8]},'mode':'training','recompute':'full','pipeline':{'dim':"
	    "'pp','microbatches':1}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /pipeline/dim: 4 virtual stages (4 stages x 1 "
	    "virtual_stages) for a model of 2 top-level modules (under "
	    "\"recompute\": \"full\", a transformer_block counts as one): "
	    "expected at most one stage per module, no stage without "
	    "modules"),

	/* Several dp dims, strict_tp_innermost. */
	BAD(MESH_DP_CP_TP ",'dp_dim':['cp','dp']}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim/1: \"dp\" (mesh dim 0) comes after \"cp\" (mesh "
	    "dim 1): name the dp dims in mesh order (/mesh/dim_names), as "
	    "DeviceMesh slicing requires"),
	/* A 1-dim input has no batch dim for dp to split. */
	BAD("{'tpsim':1," MESH_DP_TP ",'dp_dim':'dp','model':[" FC1 "],"
	    "'input':{'shape':[4]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/shape: /dp_dim splits the batch, dim 0 of the "
	    "activations, and these have 1 dim (expected at least 2: batch, "
	    "features)"),
	BAD("{'tpsim':1," MESH_DP_TP ",'dp_dim':'dp','model':[" FC1 "],"
	    "'input':{'values':[1,2,3,4]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: /dp_dim splits the batch, dim 0 of the "
	    "activations, and these have 1 dim"),
	BAD(MESH_DP_CP_TP ",'dp_dim':['dp','tp']}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim/1: the dp dim must differ from the tp dim "
	    "\"tp\""),
	BAD(MESH_DP_CP_TP ",'dp_dim':['dp','dp']}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim/1: duplicate dim \"dp\" (also /dp_dim/0)"),
	/* Dim names may hold any character; messages stay one line. */
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['d\\np','tp']}") ",'dp_dim':"
								    "['d\\np','"
								    "d\\np']}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dp_dim/1: duplicate dim \"d\\np\" (also /dp_dim/0)"),
	BAD(WITH_MESH(
		    "{'shape':[2,2,2],'dim_names':['a\\n','b\\t','tp']}") ",'"
									  "dp_"
									  "dim'"
									  ":['"
									  "b\\t"
									  "','"
									  "a\\n"
									  "']}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dp_dim/1: \"a\\n\" (mesh dim 0) comes after \"b\\t\" "
	    "(mesh dim 1)"),
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['t\\np','dp']}") ",'tp_dim':"
								    "'t\\np','"
								    "dp_dim':'"
								    "t\\np'}",
	    TPS_ERR_INPUT,
	    "cfg.json: /dp_dim: the dp dim must differ from the tp dim "
	    "\"t\\np\""),
	BAD(MESH_DP_CP_TP ",'dp_dim':[]}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim: expected at least one mesh dim name"),
	BAD(MESH_DP_CP_TP ",'dp_dim':['dp',1]}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim/1: expected a mesh dim name, got 1"),
	BAD(MESH_DP_CP_TP ",'dp_dim':['dp','pp']}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim/1: no mesh dim is named \"pp\""),
	BAD(MESH_DP_CP_TP ",'dp_dim':0}", TPS_ERR_INPUT,
	    "cfg.json: /dp_dim: expected a mesh dim name or an array of them, "
	    "got 0"),
	BAD(WITH_MESH("{'shape':[2,2],'dim_names':['tp','dp']}") ",'tp_dim':'"
								 "tp',"
								 "'strict_tp_"
								 "innermost':"
								 "true}",
	    TPS_ERR_INPUT,
	    "cfg.json: /tp_dim: Found TP device_mesh on the 0 dimension of its "
	    "parent mesh. Currently we only support intranode TP and TP needs "
	    "to be the innermost dimension on its parent mesh. "
	    "(strict_tp_innermost)"),
	BAD(MESH_DP_CP_TP ",'tp_dim':'cp','strict_tp_innermost':true}",
	    TPS_ERR_INPUT,
	    "cfg.json: /tp_dim: Found TP device_mesh on the 1 dimension"),
	BAD(BASE ",'strict_tp_innermost':'yes'}", TPS_ERR_INPUT,
	    "cfg.json: /strict_tp_innermost: expected true or false"),

	/* Variables and expressions. */
	BAD(BATCH_EXPR("$bach") ",'vars':{'hidden':8,'batch':2}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: unknown variable \"$bach\" (defined: "
	    "batch, hidden)"),
	BAD(BATCH_EXPR("$batch") "}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: unknown variable \"$batch\" (the config "
	    "defines no \"vars\")"),
	BAD(BATCH_EXPR("4**$batch") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"4**$batch\": expected "
	    "a number or $name at column 3"),
	BAD(BATCH_EXPR("2 $batch") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"2 $batch\": expected * "
	    "or / at column 3"),
	BAD(BATCH_EXPR("$ batch") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"$ batch\": expected a "
	    "variable name after '$' at column 2"),
	BAD(BATCH_EXPR("$batch*") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"$batch*\": expected a "
	    "number or $name, got the end at column 8"),
	BAD(BATCH_EXPR("0x10*$batch") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"0x10*$batch\": "
	    "expected * or / at column 2"),
	/* Numbers in expressions are JSON's, as everywhere else. */
	BAD(BATCH_EXPR("04*$batch") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"04*$batch\": expected "
	    "a number as JSON writes one at column 1"),
	BAD(BATCH_EXPR("$batch * 2.") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"$batch * 2.\": "
	    "expected a number as JSON writes one at column 10"),
	BAD(BATCH_EXPR("+2*$batch") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: bad expression \"+2*$batch\": expected "
	    "a number as JSON writes one at column 1"),
	BAD(BATCH_EXPR("$batch / 0") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: expression \"$batch / 0\" divides by "
	    "zero"),
	BAD(BATCH_EXPR("$big * $big") ",'vars':{'big':1e300}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: expression \"$big * $big\" is not "
	    "finite"),
	/* A value is validated as if it were written: 2 / 4 is no size. */
	BAD(BATCH_EXPR("$batch/4") ",'vars':{'batch':2}}", TPS_ERR_INPUT,
	    "cfg.json: /input/shape/0: expected an integer, got 0.5"),
	BAD(BASE ",'mode':'$mode'}", TPS_ERR_INPUT,
	    "cfg.json: /mode: unknown variable \"$mode\""),
	BAD(BASE ",'vars':[1]}", TPS_ERR_INPUT,
	    "cfg.json: /vars: expected an object, got an array"),
	BAD(BASE ",'vars':{'2x':1}}", TPS_ERR_INPUT,
	    "cfg.json: /vars/2x: invalid variable name \"2x\""),
	BAD(BASE ",'vars':{'a-b':1}}", TPS_ERR_INPUT,
	    "cfg.json: /vars/a-b: invalid variable name \"a-b\""),
	BAD(BASE ",'vars':{'x':'1'}}", TPS_ERR_INPUT,
	    "cfg.json: /vars/x: expected a number, got string \"1\""),
	BAD(BASE ",'vars':{'x':1e400}}", TPS_ERR_INPUT,
	    "cfg.json: /vars/x: expected a finite number, got a number out of "
	    "range"),

	/* The cost model of `tpsim comm`. */
	BAD(BASE ",'links':{'dp':{'GBps':10}}}", TPS_ERR_INPUT,
	    "cfg.json: /links/dp: no mesh dim is named \"dp\" (expected one of "
	    "tp)"),
	BAD(WITH_MESH("{'shape':[2],'dim_names':['t\\np']}") ",'links':{'tp':{}"
							     "}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /links/tp: no mesh dim is named \"tp\" (expected one of "
	    "t\\np)"),
	BAD(BASE ",'links':{'tp':{'GBps':0}}}", TPS_ERR_INPUT,
	    "cfg.json: /links/tp/GBps: expected a finite number > 0, got 0"),
	BAD(BASE ",'links':{'tp':{'GBps':-25}}}", TPS_ERR_INPUT,
	    "cfg.json: /links/tp/GBps: expected a finite number > 0, got -25"),
	BAD(BASE ",'links':{'tp':{'GBps':'fast'}}}", TPS_ERR_INPUT,
	    "cfg.json: /links/tp/GBps: expected a number, got string "
	    "\"fast\""),
	BAD(BASE ",'links':{'tp':{'latency_us':-1}}}", TPS_ERR_INPUT,
	    "cfg.json: /links/tp/latency_us: expected a finite number >= 0"),
	BAD(BASE ",'links':{'tp':{'bandwidth':1}}}", TPS_ERR_INPUT,
	    "cfg.json: /links/tp/bandwidth: unknown key \"bandwidth\" "
	    "(expected one of: GBps, latency_us)"),
	BAD(BASE ",'links':{'tp':100}}", TPS_ERR_INPUT,
	    "cfg.json: /links/tp: expected an object, got 100"),
	BAD(BASE ",'links':[]}", TPS_ERR_INPUT,
	    "cfg.json: /links: expected an object, got an array"),
	BAD(BASE ",'device':{'TFLOPS':0}}", TPS_ERR_INPUT,
	    "cfg.json: /device/TFLOPS: expected a finite number > 0, got 0"),
	BAD(BASE ",'device':{'FLOPS':1e14}}", TPS_ERR_INPUT,
	    "cfg.json: /device/FLOPS: unknown key \"FLOPS\" (expected one of: "
	    "TFLOPS)"),
	/* gated: two bodies on one input, multiplied; swiglu_mlp; a LLaMA
	 * transformer_block (norm, mlp). */
	BAD(WITH_MODEL("{'name':'g','type':'gated','gate':[" FC1 "]}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/0/up: missing"),
	BAD(WITH_MODEL("{'name':'g','type':'gated','gate':[],'up':[" FC1
		       "]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/gate: expected at least one module"),
	BAD(WITH_MODEL("{'name':'g','type':'gated','gate':[" FC1 "],'up':[{"
		       "'name':'fc3','type':'linear','in_features':4,"
		       "'out_features':6}]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/up: the up body ends with width 6 "
	    "(/model/0/up/0), but gate(x) * up(x) needs the gate body's, 8 "
	    "(/model/0/gate/0)"),
	BAD(WITH_MODEL(
		    "{'name':'fc0','type':'linear','in_features':4,"
		    "'out_features':4},{'name':'g','type':'gated','gate':[" FC1
		    "],'up':[{'name':'fc3','type':'linear',"
		    "'in_features':8,'out_features':8}]}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/up/0/in_features: expected 4, the "
	    "out_features of /model/0, got 8"),
	BAD(WITH_MODEL("{'name':'g','type':'gated','gate':[" FC1 "],'up':["
		       "{'name':'fc3','type':'linear','in_features':4,"
		       "'out_features':8}]}") ",'plan':{'g':'colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/g: colwise cannot apply to gated module \"g\" "
	    "(it multiplies its bodies' outputs; plan the bodies' modules)"),
	BAD(WITH_MODEL("{'name':'mlp','type':'swiglu_mlp','dim':4}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/0/hidden: missing"),
	BAD(WITH_MODEL("{'name':'mlp','type':'swiglu_mlp','dim':4,"
		       "'hidden':6,'eps':0.1}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/eps: unknown key \"eps\" (expected one of: "
	    "name, type, dim, hidden, bias)"),
	BAD(WITH_MODEL(FC1 ",{'name':'mlp','type':'swiglu_mlp','dim':4,"
			   "'hidden':6}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/dim: expected 8, the out_features of "
	    "/model/0, got 4"),
	BAD(WITH_MODEL("{'name':'mlp','type':'swiglu_mlp','dim':4,"
		       "'hidden':6,'bias':1}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/bias: expected true or false, got 1"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':8,"
		"'num_heads':2,'norm':'batchnorm'}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/norm: unknown norm \"batchnorm\" (expected "
	    "one of layernorm, rmsnorm)"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':8,"
		"'num_heads':2,'mlp':'geglu'}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/mlp: unknown mlp \"geglu\" (expected one of "
	    "gelu, swiglu)"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':8,"
		"'num_heads':2,'mlp':true}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/mlp: expected a string, got true"),

	/* tied embeddings: "tie" on a linear (docs/transformer.md) */
	BAD(TIED("'bias':false,'tie':'emb'") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/tie: no module \"emb\" before \"head\" "
	    "(expected the name of an embedding earlier in the model)"),
	BAD(HDR "'model':[{'name':'head','type':'linear','in_features':4,"
		"'out_features':6,'bias':false,'tie':'tok'},{'name':'tok',"
		"'type':'embedding','num_embeddings':6,'embedding_dim':4}],"
		"'input':{'shape':[2,3,4]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/tie: no module \"tok\" before \"head\" "
	    "(expected the name of an embedding earlier in the model)"),
	BAD(HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':"
		"6,'embedding_dim':4},{'name':'fc','type':'linear',"
		"'in_features':4,'out_features':4},{'name':'head','type':"
		"'linear','in_features':4,'out_features':4,'bias':false,'tie':"
		"'fc'}],'input':{'shape':[2,3],'init':'tokens'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/2/tie: \"fc\" (/model/1) is a linear: a linear "
	    "ties its weight to an embedding's"),
	BAD(HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':"
		"6,'embedding_dim':4},{'name':'head','type':'linear',"
		"'in_features':4,'out_features':5,'bias':false,'tie':'tok'}],"
		"'input':{'shape':[2,3],'init':'tokens'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/tie: the weight of \"tok\" (/model/0) is "
	    "(num_embeddings 6, embedding_dim 4): a linear tied to it needs "
	    "out_features 6 and in_features 4, got 5 and 4"),
	BAD(TIED("'tie':'tok'") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/tie: a linear tied to \"tok\" has no bias (the "
	    "embedding has none to share; a linear's bias defaults to true): "
	    "add \"bias\": false"),
	BAD(TIED("'bias':false,'tie':7") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/tie: expected a module name, got 7"),
	BAD(TIED("'bias':false,'tie':'tok/0'") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/1/tie: invalid module name \"tok/0\""),
	BAD(TIED("'bias':false,'tie':'tok'") ",'plan':{'head':'colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/head: \"head\" is tied to \"tok\" and holds its "
	    "weight, but \"head\" is colwise (/plan/head) and \"tok\" "
	    "replicate (/model/0): a tied weight has one layout (expected "
	    "\"tok\" vocab with \"head\" colwise, or both replicated)"),
	BAD(TIED("'bias':false,'tie':'tok'") ",'plan':{'tok':'vocab'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1: \"head\" is tied to \"tok\" and holds its "
	    "weight, but \"head\" is replicate (/model/1) and \"tok\" vocab "
	    "(/plan/tok)"),
	BAD(TIED("'bias':false,'tie':'tok'") ",'plan':{'tok':'vocab',"
					     "'head':'rowwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/head: \"head\" is tied to \"tok\" and holds its "
	    "weight, but \"head\" is rowwise (/plan/head) and \"tok\" vocab "
	    "(/plan/tok)"),
	BAD(HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':"
		"6,'embedding_dim':6},{'name':'h1','type':'linear',"
		"'in_features':6,'out_features':6,'bias':false,'tie':'tok'},"
		"{'name':'h2','type':'linear','in_features':6,'out_features':6,"
		"'bias':false,'tie':'tok'}],'input':{'shape':[2,3],'init':"
		"'tokens'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/2/tie: the embedding \"tok\" is tied already, to "
	    "\"h1\" (/model/1): one head per embedding"),
	BAD(TIED("'bias':false,'tie':'tok'") ",'params':{'head.weight':"
					     "[[1,2,3,4],[1,2,3,4],[1,2,3,4],"
					     "[1,2,3,4],[1,2,3,4],[1,2,3,4]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /params/head.weight: no parameter \"head.weight\" in "
	    "the model"),
	BAD(HDR
	    "'model':[{'name':'tok','type':'embedding','num_embeddings':"
	    "6,'embedding_dim':4},{'name':'act','type':'relu','tie':'tok'}],"
	    "'input':{'shape':[2,3],'init':'tokens'}}",
	    TPS_ERR_INPUT, "cfg.json: /model/1/tie: unknown key \"tie\""),
	/* rotary embeddings: rope_theta, rope_style */
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':6,"
		"'num_heads':2,'rope_theta':10000}],'input':{'shape':[2,3,6]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_theta: rotary embeddings turn pairs of "
	    "features, so head_dim must be even, got 3 (6 features / 2 "
	    "heads)"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':6,"
		"'num_heads':2,'rope_theta':10000}],'input':{'shape':[2,3,6]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_theta: rotary embeddings turn pairs of "
	    "features, so head_dim must be even, got 3 (6 features / 2 "
	    "heads)"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2,'rope_theta':0}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_theta: expected a finite number > 0, got "
	    "0"),
	BAD(HDR
	    "'model':[{'name':'b','type':'transformer_block','dim':8,"
	    "'num_heads':2,'rope_theta':-10000}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_theta: expected a finite number > 0, got "
	    "-10000"),
	BAD(HDR
	    "'model':[{'name':'attn','type':'attention','embed_dim':8,"
	    "'num_heads':2,'rope_theta':'10000'}],'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_theta: expected a number, got string "
	    "\"10000\""),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2,'rope_theta':10000,'rope_style':'neox'}],"
		"'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_style: unknown rope_style \"neox\" "
	    "(expected one of rotate_half, interleaved)"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':8,"
		"'num_heads':2,'rope_theta':10000,'rope_style':true}],"
		"'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_style: expected a string, got true"),
	BAD(HDR "'model':[{'name':'attn','type':'attention','embed_dim':8,"
		"'num_heads':2,'rope_style':'interleaved'}],"
		"'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_style: rope_style without rope_theta "
	    "(expected rope_theta too: without it there is nothing for "
	    "rope_style to set)"),
	BAD(HDR "'model':[{'name':'b','type':'transformer_block','dim':8,"
		"'num_heads':2,'rope_style':'rotate_half'}],"
		"'input':{'shape':[2,3,8]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/rope_style: rope_style without rope_theta "
	    "(expected rope_theta too: without it there is nothing for "
	    "rope_style to set)"),

	/* vocabulary padding: make_vocab_size_divisible_by on an embedding
	 * or a head (docs/transformer.md, "The vocabulary"); tp is 2 */
	BAD(VOCAB(",'make_vocab_size_divisible_by':0", "") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: out of range "
	    "(expected 1 to 16777216, got 0)"),
	BAD(VOCAB(",'make_vocab_size_divisible_by':-128", "") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: out of range "
	    "(expected 1 to 16777216, got -128)"),
	BAD(VOCAB(",'make_vocab_size_divisible_by':2.5", "") "}", TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: expected an "
	    "integer, got 2.5"),
	BAD(VOCAB(",'make_vocab_size_divisible_by':'128'", "") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: expected an "
	    "integer, got string \"128\""),
	BAD(VOCAB("", ",'make_vocab_size_divisible_by':true") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/make_vocab_size_divisible_by: expected an "
	    "integer, got true"),
	BAD(VOCAB(",'make_vocab_size_divisible_by':16777217", "") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: out of range "
	    "(expected 1 to 16777216, got 16777217)"),
	BAD(WITH_MODEL(FC1 ",{'name':'act','type':'relu',"
			   "'make_vocab_size_divisible_by':2}," FC2) "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/make_vocab_size_divisible_by: unknown key "
	    "\"make_vocab_size_divisible_by\" (expected one of: name, type)"),
	BAD(WITH_MODEL("{'name':'n','type':'rmsnorm','dim':4,"
		       "'make_vocab_size_divisible_by':2}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: unknown key "
	    "\"make_vocab_size_divisible_by\" (expected one of: name, type, "
	    "dim, eps)"),
	BAD(WITH_MODEL("{'name':'fc1','type':'linear','in_features':4,"
		       "'out_features':8,'make_vocab_size_divisible_by':2}," ACT
		       "," FC2) "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: a padded "
	    "vocabulary is the logits' classes: \"fc1\" must be the model's "
	    "last module, whose output feeds the loss"),
	BAD(VOCAB(",'make_vocab_size_divisible_by':2",
		  ",'bias':false,'tie':'tok','make_vocab_size_divisible_by'"
		  ":4") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/make_vocab_size_divisible_by: expected 2, "
	    "the make_vocab_size_divisible_by of \"tok\" "
	    "(/model/0/make_vocab_size_divisible_by), the embedding "
	    "\"head\" is tied to, got 4"),
	BAD(VOCAB("", ",'bias':false,'tie':'tok',"
		      "'make_vocab_size_divisible_by':4") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/make_vocab_size_divisible_by: \"head\" is "
	    "tied to \"tok\" (/model/0), whose vocabulary is not padded: a "
	    "tied weight is padded as its embedding says (give "
	    "make_vocab_size_divisible_by to \"tok\")"),
	BAD(HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':"
		"11,'embedding_dim':4,'make_vocab_size_divisible_by':2},"
		"{'name':'head','type':'linear','in_features':4,"
		"'out_features':11,'bias':false,'tie':'tok'},{'name':'act',"
		"'type':'relu'}],'input':{'shape':[2,3],'init':'tokens'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: \"head\" is "
	    "tied to \"tok\" and gets its padded vocabulary, the logits' "
	    "classes: \"head\" must be the model's last module, whose "
	    "output feeds the loss"),
	BAD(VOCAB("", ",'make_vocab_size_divisible_by':2") ",'mode':"
							   "'training'}",
	    TPS_ERR_INPUT,
	    "cfg.json: /loss: the model's logits end in a padded vocabulary "
	    "(11 classes padded to 12, make_vocab_size_divisible_by): "
	    "expected loss \"cross_entropy\", which masks the padding, got "
	    "\"mse\""),
	BAD(HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':"
		"11,'embedding_dim':4,'make_vocab_size_divisible_by':2}],"
		"'input':{'values':[[1,2,11]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /input/values: token id 11 (value 2 in row-major "
	    "order) is not an integer in [0, 11), the vocabulary of "
	    "/model/0"),
	BAD(VOCAB(",'make_vocab_size_divisible_by':2",
		  ",'bias':false,'tie':'tok'") ",'mode':'training','loss':"
					       "'cross_entropy','target':{"
					       "'values':[[0,11,3],[1,2,3]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /target/values: class id 11 (value 1 in row-major "
	    "order) is not an integer in [0, 11), the output's classes"),
	/* "params" gives a padded weight whole: 12 rows, not 11. */
	BAD(VOCAB(",'make_vocab_size_divisible_by':2",
		  ",'bias':false,'tie':'tok'") ",'params':{'tok.weight':"
					       "[[1,2,3,4],[1,2,3,4],[1,2,3,4],"
					       "[1,2,3,4],[1,2,3,4],[1,2,3,4],"
					       "[1,2,3,4],[1,2,3,4],[1,2,3,4],"
					       "[1,2,3,4],[1,2,3,4]]}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /params/tok.weight: expected 12 elements (dim 0 of the "
	    "parameter's shape), got 11"),
	BAD(HDR "'model':[{'name':'tok','type':'embedding','num_embeddings':"
		"1,'embedding_dim':128,'make_vocab_size_divisible_by':"
		"16777216}],'input':{'shape':[2,3],'init':'tokens'}}",
	    TPS_ERR_LIMIT,
	    "cfg.json: /model/0/make_vocab_size_divisible_by: the "
	    "vocabulary 1 padded to a multiple of 16777216 x tp=2 is "
	    "33554432: its weight (33554432, 128) has more than 2^31 "
	    "elements"),

	/* JSON-level errors, refused by the strict reader. */
	BAD_JSON(BASE ",'tpsim':1}",
		 "cfg.json: /tpsim: duplicate key \"tpsim\""),
	BAD_JSON(BASE ",'plan':{'fc1':'colwise','fc1':'rowwise'}}",
		 "cfg.json: /plan/fc1: duplicate key \"fc1\""),
	BAD_JSON(WITH_MESH("{'shape':[2],'shape':[2],'dim_names':['tp']}") "}",
		 "cfg.json: /mesh/shape: duplicate key \"shape\""),
	BAD_JSON(HDR MODEL ",'input':{'shape':[2,",
		 "cfg.json: /input/shape/1: unexpected end of input"),
	BAD_JSON(HDR "'model':[{'name':'fc1','type':'lin",
		 "cfg.json: /model/0/type: unexpected end of input"),
	BAD_JSON(BASE "}}", "cfg.json: (root): invalid JSON at line 1, "),
	BAD_JSON(BASE "} x", "trailing content after the JSON value"),
	BAD_JSON(BASE ",'dp_dim':null}",
		 "cfg.json: /dp_dim: null is not allowed"),
	BAD_JSON(WITH_MODEL("{'name':'fc1','type':'linear','in_features':04,"
			    "'out_features':8}") "}",
		 "cfg.json: /model/0/in_features: invalid JSON"),
	/* dropout: p in [0, 1), no other key, no weight to shard; its
	 * mistake needs training and a dropout that drops. */
	BAD(WITH_MODEL(FC1 ",{'name':'d','type':'dropout','p':1}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/p: expected a number in [0, 1), got 1"),
	BAD(WITH_MODEL(FC1 ",{'name':'d','type':'dropout','p':-0.1}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/p: expected a number in [0, 1), got -0.1"),
	BAD(WITH_MODEL(FC1 ",{'name':'d','type':'dropout','p':'0.1'}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/p: expected a number, got string \"0.1\""),
	BAD(WITH_MODEL(FC1 ",{'name':'d','type':'dropout','p':1e999}") "}",
	    TPS_ERR_INPUT, "cfg.json: /model/1/p: expected a number in [0, 1)"),
	BAD(WITH_MODEL(FC1 ",{'name':'d','type':'dropout','dim':8}") "}",
	    TPS_ERR_INPUT,
	    "cfg.json: /model/1/dim: unknown key \"dim\" (expected one of: "
	    "name, type, p)"),
	BAD(WITH_MODEL(
		    FC1
		    ",{'name':'d','type':'dropout'}") ","
						      "'plan':{'d':'colwise'}}",
	    TPS_ERR_INPUT,
	    "cfg.json: /plan/d: colwise cannot apply to dropout module \"d\" "
	    "(it has no weight to shard)"),
	BAD(WITH_MODEL(FC1 ",{'name':'d','type':'dropout'}") ","
							     "'inject':['same_"
							     "dropout_seed']}",
	    TPS_ERR_UNSUPPORTED,
	    "cfg.json: /inject/0: same_dropout_seed is injected in training "
	    "only (this config runs inference)"),
	BAD(WITH_MODEL(
		    FC1
		    ",{'name':'d','type':'dropout','p':0}") ","
							    "'mode':'training',"
							    "'inject':['same_"
							    "dropout_seed']}",
	    TPS_ERR_INPUT,
	    "cfg.json: /inject/0: same_dropout_seed needs a dropout with p > "
	    "0, on a tp group of 2 or more ranks (this model has none)"),
	BAD(TRAIN ",'inject':['same_dropout_seed']}", TPS_ERR_INPUT,
	    "cfg.json: /inject/0: same_dropout_seed needs a dropout with p > "
	    "0, on a tp group of 2 or more ranks (this model has none)"),
};

#define N_BAD_CONFIGS ((int)(sizeof bad_configs / sizeof bad_configs[0]))

/*
 * The error's place apart from its words (tps_error_set_at; the public
 * API's tpsim_error_file, _pointer and _what): where the row's message
 * names the file and a pointer ("cfg.json: /model/0/type: ..."), the
 * error holds the file as given, the pointer (escaped as the message
 * writes it; "(root)" is ""), and the words after them.
 */
static void check_place(int row, const char *want, const struct tps_error *err)
{
	const char *ptr = want + strlen("cfg.json: ");
	const char *end = strstr(ptr, ": ");
	char esc[TPS_ERROR_POINTER_MAX];

	if (strncmp(want, "cfg.json: ", 10) != 0 || !end ||
	    (ptr[0] != '/' && strncmp(ptr, "(root)", 6) != 0)) {
		return;
	}
	ck_assert_msg(err->at, "row %d: no place in \"%s\"", row,
		      err->message);
	ck_assert_str_eq(err->file, "cfg.json");
	tps_json_escape_for_message(err->pointer[0] ? err->pointer : "(root)",
				    esc, sizeof esc);
	ck_assert_msg(strlen(esc) == (size_t)(end - ptr) &&
			      strncmp(esc, ptr, (size_t)(end - ptr)) == 0,
		      "row %d: pointer \"%s\", want the one of \"%s\"", row,
		      err->pointer, want);
	ck_assert_msg(err->what < sizeof err->message &&
			      strncmp(err->message + err->what, end + 2,
				      strlen(end + 2)) == 0,
		      "row %d: words \"%s\", want \"%s\"", row,
		      err->message + err->what, end + 2);
}

START_TEST(bad_config_is_rejected_at_its_pointer)
{
	const struct bad_config *bc = &bad_configs[_i];
	struct tps_error err = {0};
	struct tps_run_spec spec, before;
	cJSON *root = NULL;
	enum tps_status st = parse_json(bc->json, &root, &err);

	if (bc->stage == STAGE_JSON) {
		ck_assert_msg(st != TPS_OK, "row %d: the JSON was accepted",
			      _i);
		ck_assert_ptr_null(root);
	} else {
		ck_assert_msg(st == TPS_OK, "row %d: JSON rejected: %s", _i,
			      err.message);
		/* On error, the spec stays untouched. */
		memset(&spec, 0x5a, sizeof spec);
		before = spec;
		st = tps_config_parse(root, "cfg.json", &spec, &err);
		cJSON_Delete(root);
		if (st == TPS_OK) {
			tps_run_spec_free(&spec);
			ck_abort_msg("row %d: accepted, want status %d and "
				     "\"%s\"",
				     _i, (int)bc->status, bc->msg);
		}
		ck_assert_msg(memcmp(&spec, &before, sizeof spec) == 0,
			      "row %d: the spec was changed on error", _i);
	}
	ck_assert_msg(st == bc->status && err.status == bc->status,
		      "row %d: status %d (err %d), want %d: %s", _i, (int)st,
		      (int)err.status, (int)bc->status, err.message);
	ck_assert_msg(strncmp(err.message, "cfg.json: ", 10) == 0,
		      "row %d: message \"%s\" does not start with the file", _i,
		      err.message);
	ck_assert_msg(strstr(err.message, bc->msg) != NULL,
		      "row %d: message \"%s\" lacks \"%s\"", _i, err.message,
		      bc->msg);
	ck_assert_msg(strchr(err.message, '\n') == NULL,
		      "row %d: message spans lines: \"%s\"", _i, err.message);
	check_place(_i, bc->msg, &err);
}
END_TEST

/* Whether `list` (", "-separated names, " or " before the last) holds
 * `name` as a whole item. */
static bool lists_name(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(list, name); p; p = strstr(p + 1, name)) {
		bool starts = p == list || p[-1] == ' ';
		bool ends = p[n] == ',' || p[n] == ')' || p[n] == '\0' ||
			    strncmp(p + n, " or ", 4) == 0;
		if (starts && ends) {
			return true;
		}
	}
	return false;
}

/* The one table of module types: every enum tps_module_type is a row, by
 * its name, and the message that lists the types lists every row. */
START_TEST(module_type_messages_list_every_type_of_the_table)
{
	static const char *const configs[] = {
		WITH_MODEL(FC1 ",{'name':'act','type':'conv2d'}") "}",
	};
	bool seen[TPS_MODULE_TYPE_COUNT] = {false};
	size_t n = cfg_module_type_count();
	int type;

	ck_assert_uint_gt(n, TPS_MODULE_TYPE_COUNT);
	ck_assert_ptr_null(cfg_module_type_name(n, &type));
	for (size_t i = 0; i < n; i++) {
		const char *name = cfg_module_type_name(i, &type);
		ck_assert_ptr_nonnull(name);
		if (type >= 0) {
			ck_assert_int_lt(type, TPS_MODULE_TYPE_COUNT);
			ck_assert_str_eq(name, tps_module_types[type].name);
			seen[type] = true;
		}
	}
	for (int t = 0; t < TPS_MODULE_TYPE_COUNT; t++) {
		ck_assert_msg(seen[t], "type %s is not in the table",
			      tps_module_types[t].name);
	}
	for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
		struct tps_error err = {0};
		struct tps_run_spec spec = {0};
		cJSON *root = NULL;
		const char *list;
		ck_assert_int_eq(parse_json(configs[k], &root, &err), TPS_OK);
		ck_assert_int_ne(
			tps_config_parse(root, "cfg.json", &spec, &err),
			TPS_OK);
		cJSON_Delete(root);
		list = strstr(err.message, "(expected ");
		ck_assert_msg(list != NULL, "no list: %s", err.message);
		for (size_t i = 0; i < n; i++) {
			const char *name = cfg_module_type_name(i, &type);
			ck_assert_msg(lists_name(list, name),
				      "\"%s\" lacks type %s", err.message,
				      name);
		}
	}
}
END_TEST

/* One dumped row, {"KEY": text, "message": message}, as a line of out. */
static void dump_row(FILE *out, const char *key, const char *squoted,
		     const char *message)
{
	char *text = dq(squoted);
	cJSON *line = cJSON_CreateObject();
	cJSON_AddStringToObject(line, key, text);
	cJSON_AddStringToObject(line, "message", message);
	free(text);
	text = cJSON_PrintUnformatted(line);
	ck_assert_ptr_nonnull(text);
	fprintf(out, "%s\n", text);
	free(text);
	cJSON_Delete(line);
}

/*
 * The bad-config table for tests/schema_check.py and the Python tests
 * (python/tests/test_bad_input.py): with TPSIM_DUMP_BAD_CONFIGS=FILE,
 * one JSON line per row that is valid JSON, {"config": text, "message":
 * tpsim's error}; with TPSIM_DUMP_BAD_JSON=FILE, one per row that is
 * not, {"text": text, "message": the strict parser's error}. Every row
 * must be refused with a message either way.
 */
START_TEST(bad_configs_are_dumped_for_the_schema_check)
{
	const char *path = getenv("TPSIM_DUMP_BAD_CONFIGS");
	const char *json_path = getenv("TPSIM_DUMP_BAD_JSON");
	FILE *out = path ? fopen(path, "w") : NULL;
	FILE *json_out = json_path ? fopen(json_path, "w") : NULL;
	size_t rows = 0, json_rows = 0;
	ck_assert(!path || out);
	ck_assert(!json_path || json_out);
	for (size_t i = 0; i < sizeof bad_configs / sizeof bad_configs[0];
	     i++) {
		const struct bad_config *bc = &bad_configs[i];
		struct tps_error err = {0};
		struct tps_run_spec spec = {0};
		cJSON *root = NULL;
		if (bc->stage != STAGE_CONFIG) {
			ck_assert_int_ne(parse_json(bc->json, &root, &err),
					 TPS_OK);
			ck_assert_ptr_nonnull(
				strstr(err.message, "cfg.json: "));
			json_rows++;
			if (json_out) {
				dump_row(json_out, "text", bc->json,
					 err.message);
			}
			continue;
		}
		ck_assert_int_eq(parse_json(bc->json, &root, &err), TPS_OK);
		ck_assert_int_ne(
			tps_config_parse(root, "cfg.json", &spec, &err),
			TPS_OK);
		cJSON_Delete(root);
		ck_assert_ptr_nonnull(strstr(err.message, "cfg.json: "));
		rows++;
		if (out) {
			dump_row(out, "config", bc->json, err.message);
		}
	}
	ck_assert_uint_gt(rows, 100);
	ck_assert_uint_gt(json_rows, 5);
	if (out) {
		ck_assert_int_eq(fclose(out), 0);
	}
	if (json_out) {
		ck_assert_int_eq(fclose(json_out), 0);
	}
}
END_TEST

/* The same rows with err NULL: the status alone, and no crash (the
 * message helpers must not read through a NULL err). */
/* One descriptor key as JSON: {"name", "kind", "required", and "min",
 * "max" for a size, "default" for an optional key}. */
static cJSON *key_json(const struct tps_module_key *key)
{
	static const char *const kinds[] = {
		[TPS_KEY_SIZE] = "size",
		[TPS_KEY_POSITIVE] = "positive",
		[TPS_KEY_UNIT] = "unit",
		[TPS_KEY_BOOL] = "bool",
		[TPS_KEY_CHOICE] = "choice",
		[TPS_KEY_MODULES] = "modules",
		[TPS_KEY_MODULE_NAME] = "module",
	};
	cJSON *o = cJSON_CreateObject();
	ck_assert_ptr_nonnull(o);
	cJSON_AddStringToObject(o, "name", key->name);
	cJSON_AddStringToObject(o, "kind", kinds[key->kind]);
	cJSON_AddBoolToObject(o, "required", key->required);
	if (key->kind == TPS_KEY_SIZE) {
		cJSON_AddNumberToObject(o, "min", (double)key->min);
		cJSON_AddNumberToObject(o, "max", (double)key->max);
	}
	if (key->kind == TPS_KEY_CHOICE) {
		cJSON *c = cJSON_AddArrayToObject(o, "choices");
		for (int i = 0; i < key->n_choices; i++) {
			cJSON_AddItemToArray(c,
					     cJSON_CreateString(key->choices[i]));
		}
	}
	if (key->needs) {
		cJSON_AddStringToObject(o, "needs", key->needs);
	}
	if (key->same_as) {
		/* Absent: another key's value, which a schema cannot say. */
		cJSON_AddStringToObject(o, "same_as", key->same_as);
	} else if (key->kind == TPS_KEY_MODULE_NAME) {
		/* Absent: no module named, which has no default to state. */
	} else if (key->off_when_absent) {
		/* Absent: the feature is off (no RoPE, no vocabulary
		 * padding), no value to default to. */
		cJSON_AddBoolToObject(o, "off_when_absent", true);
	} else if (!key->required && key->kind == TPS_KEY_CHOICE) {
		cJSON_AddStringToObject(o, "default",
					key->choices[(int)key->fallback]);
	} else if (!key->required && key->kind == TPS_KEY_BOOL) {
		cJSON_AddBoolToObject(o, "default", key->fallback != 0);
	} else if (!key->required) {
		cJSON_AddNumberToObject(o, "default", key->fallback);
	}
	return o;
}

/*
 * The module types for tests/schema_check.py, which compares them with
 * the schema's: with TPSIM_DUMP_MODULE_TYPES=FILE, {"types": [{"name",
 * "keys": [...]}, ...], "shorthands": [{"name", "keys": [names]}]}, the
 * keys besides "name" and "type" (key_json), every type by its enum.
 */
START_TEST(module_types_are_dumped_for_the_schema_check)
{
	const char *path = getenv("TPSIM_DUMP_MODULE_TYPES");
	cJSON *root = cJSON_CreateObject();
	cJSON *types = cJSON_AddArrayToObject(root, "types");
	cJSON *shorthands = cJSON_AddArrayToObject(root, "shorthands");
	char *text;
	int type;

	ck_assert_ptr_nonnull(shorthands);
	for (int t = 0; t < TPS_MODULE_TYPE_COUNT; t++) {
		const struct tps_module_type_desc *d = &tps_module_types[t];
		cJSON *o = cJSON_CreateObject();
		cJSON *keys = cJSON_AddArrayToObject(o, "keys");
		ck_assert_ptr_nonnull(keys);
		cJSON_AddStringToObject(o, "name", d->name);
		for (int k = 0; k < TPS_MODULE_MAX_KEYS && d->keys[k].name;
		     k++) {
			cJSON_AddItemToArray(keys, key_json(&d->keys[k]));
		}
		cJSON_AddItemToArray(types, o);
	}
	for (size_t i = TPS_MODULE_TYPE_COUNT; i < cfg_module_type_count();
	     i++) {
		const char *const *names = cfg_shorthand_keys(i);
		cJSON *o = cJSON_CreateObject();
		cJSON *keys = cJSON_AddArrayToObject(o, "keys");
		ck_assert_ptr_nonnull(names);
		cJSON_AddStringToObject(o, "name",
					cfg_module_type_name(i, &type));
		ck_assert_int_eq(type, -1);
		for (int k = 0; names[k]; k++) {
			if (strcmp(names[k], "name") != 0 &&
			    strcmp(names[k], "type") != 0) {
				cJSON_AddItemToArray(
					keys, cJSON_CreateString(names[k]));
			}
		}
		cJSON_AddItemToArray(shorthands, o);
	}
	ck_assert_int_eq(cJSON_GetArraySize(types), TPS_MODULE_TYPE_COUNT);
	ck_assert_int_gt(cJSON_GetArraySize(shorthands), 0);
	text = cJSON_Print(root);
	ck_assert_ptr_nonnull(text);
	if (path) {
		FILE *out = fopen(path, "w");
		ck_assert_ptr_nonnull(out);
		fprintf(out, "%s\n", text);
		ck_assert_int_eq(fclose(out), 0);
	}
	free(text);
	cJSON_Delete(root);
}
END_TEST

START_TEST(bad_config_without_err_returns_its_status)
{
	const struct bad_config *bc = &bad_configs[_i];
	struct tps_run_spec spec = {0};
	cJSON *root = NULL;
	enum tps_status st;

	if (bc->stage == STAGE_JSON) {
		return;
	}
	ck_assert_int_eq(parse_json(bc->json, &root, NULL), TPS_OK);
	st = tps_config_parse(root, "cfg.json", &spec, NULL);
	cJSON_Delete(root);
	ck_assert_msg(st == bc->status, "row %d: status %d, want %d", _i,
		      (int)st, (int)bc->status);
}
END_TEST

START_TEST(input_over_2_31_elements_without_err_is_a_limit)
{
	/* Each size is in range, the product is 2^32: the numel check fails
	 * after read_sizes, where the message used to be read through err. */
	struct tps_run_spec spec = {0};
	cJSON *root = NULL;

	ck_assert_int_eq(
		parse_json(INPUT_SHAPE("[1073741824,4]") "}", &root, NULL),
		TPS_OK);
	ck_assert_int_eq(tps_config_parse(root, "cfg.json", &spec, NULL),
			 TPS_ERR_LIMIT);
	cJSON_Delete(root);
}
END_TEST

/* Configs too big to write inline. */

/* n modules "m0", "m1", ... of type relu, in a config that is otherwise
 * valid. Caller frees. */
static char *many_modules_config(int n)
{
	size_t cap = (size_t)n * 40 + 256, used = 0;
	char *s = malloc(cap);

	ck_assert_ptr_nonnull(s);
	used += (size_t)snprintf(s, cap,
				 "{\"tpsim\":1,\"mesh\":{\"shape\":"
				 "[2],\"dim_names\":[\"tp\"]},\"model\":[");
	for (int i = 0; i < n; i++) {
		used += (size_t)snprintf(s + used, cap - used,
					 "%s{\"name\":\"m%d\",\"type\":"
					 "\"relu\"}",
					 i ? "," : "", i);
	}
	snprintf(s + used, cap - used, "],\"input\":{\"shape\":[2,4]}}");
	return s;
}

static enum tps_status parse_text(const char *text, struct tps_run_spec *spec,
				  struct tps_error *err)
{
	cJSON *root = NULL;
	enum tps_status st = tps_json_parse_strict("cfg.json", text,
						   strlen(text), &root, err);

	ck_assert_msg(st == TPS_OK, "JSON rejected: %s", err->message);
	st = tps_config_parse(root, "cfg.json", spec, err);
	cJSON_Delete(root);
	return st;
}

/* Variable names are ASCII ([A-Za-z_][A-Za-z0-9_]*) in every locale: under
 * an 8-bit one, isalpha took the bytes of a UTF-8 "ª" (c2 aa) for
 * letters, and "xª" was a name. */
START_TEST(var_names_are_ascii_whatever_the_locale)
{
	const char *dir = tu_tempdir();
	const char *latin1 = tu_latin1_locale(dir);
	struct tps_error err = {0};
	struct tps_run_spec spec = {0};
	enum tps_status st;
	ck_assert_ptr_nonnull(setlocale(LC_CTYPE, latin1));
	ck_assert(isalpha(0xaa)); /* the locale is in force */
	st = parse_text("{\"tpsim\": 1, \"vars\": {\"x\u00aa\": 4},"
			" \"mesh\": {\"shape\": [1], \"dim_names\": "
			"[\"tp\"]}, \"model\": [{\"name\": \"act\", "
			"\"type\": \"relu\"}], \"input\": {\"shape\": [2, 4]}}",
			&spec, &err);
	ck_assert_ptr_nonnull(setlocale(LC_CTYPE, "C"));
	ck_assert_int_eq(st, TPS_ERR_INPUT);
	ck_assert_msg(strstr(err.message, "invalid variable name") != NULL,
		      "%s", err.message);
	tps_run_spec_free(&spec);
	tu_rmtree(dir);
}
END_TEST

START_TEST(model_with_4097_modules_is_refused_as_a_limit)
{
	struct tps_error err = {0};
	struct tps_run_spec spec = {0};
	char *text = many_modules_config(4096);

	ck_assert_int_eq(parse_text(text, &spec, &err), TPS_OK);
	ck_assert_int_eq(spec.model.n_modules, 4096);
	tps_run_spec_free(&spec);
	free(text);

	text = many_modules_config(4097);
	ck_assert_int_eq(parse_text(text, &spec, &err), TPS_ERR_LIMIT);
	ck_assert_msg(strstr(err.message, "cfg.json: /model: over 4096 "
					  "modules, counting residual "
					  "bodies") != NULL,
		      "message: %s", err.message);
	free(text);
}
END_TEST

/* A plan key of many '*' must not take exponential time to match. */
START_TEST(plan_pattern_of_many_stars_is_matched_quickly)
{
	char name[121], key[64], *text;
	size_t cap = 1024;
	struct tps_error err = {0};
	struct tps_run_spec spec = {0};
	clock_t start = clock();
	double seconds;

	memset(name, 'a', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	memset(key, '*', sizeof key - 2);
	key[sizeof key - 2] = 'x';
	key[sizeof key - 1] = '\0';
	text = malloc(cap);
	ck_assert_ptr_nonnull(text);
	snprintf(text, cap,
		 "{\"tpsim\":1,\"mesh\":{\"shape\":[2],\"dim_names\":[\"tp\"]},"
		 "\"model\":[{\"name\":\"%s\",\"type\":\"relu\"}],"
		 "\"input\":{\"shape\":[2,4]},\"plan\":{\"%s\":\"replicate\"}}",
		 name, key);
	ck_assert_int_eq(parse_text(text, &spec, &err), TPS_ERR_INPUT);
	ck_assert_msg(strstr(err.message, "matches no module of /model"),
		      "message: %s", err.message);
	seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
	ck_assert_msg(seconds < 1.0, "took %.2f s", seconds);
	free(text);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Good configs                                                             */
/* ------------------------------------------------------------------------ */

/* docs/design.md section 4's example without the training keys. */
#define DESIGN_EXAMPLE                                                         \
	"{'tpsim':1,"                                                          \
	"'mesh':{'shape':[2,2],'dim_names':['dp','tp']},"                      \
	"'tp_dim':'tp','dp_dim':'dp',"                                         \
	"'model':["                                                            \
	"{'name':'fc1','type':'linear','in_features':4,'out_features':8,"      \
	"'bias':true},"                                                        \
	"{'name':'act','type':'relu'},"                                        \
	"{'name':'fc2','type':'linear','in_features':8,'out_features':4,"      \
	"'bias':true}],"                                                       \
	"'plan':{'fc1':'colwise','fc2':{'style':'rowwise',"                    \
	"'bias':'after_reduce'}},"                                             \
	"'input':{'shape':[2,4],'init':'arange'},"                             \
	"'init':{'method':'uniform','seed':7},"                                \
	"'params':{'fc1.bias':[0,0,0,0,1,1,1,1]},"                             \
	"'uneven':'chunk',"                                                    \
	"'mode':'inference',"                                                  \
	"'trace':{'values':'full'}}"

START_TEST(design_example_parses_into_spec)
{
	struct tps_run_spec spec = {0};
	const struct tps_model_spec *m;
	const struct tps_module_spec *fc1, *act, *fc2;

	parse_ok(DESIGN_EXAMPLE, &spec);
	m = &spec.model;
	ck_assert_int_eq(m->mesh.ndim, 2);
	ck_assert_int_eq(m->mesh.shape[0], 2);
	ck_assert_int_eq(m->mesh.shape[1], 2);
	ck_assert_int_eq(m->mesh.world_size, 4);
	ck_assert_str_eq(m->mesh.dim_names[0], "dp");
	ck_assert_str_eq(m->mesh.dim_names[1], "tp");
	ck_assert_int_eq(m->tp_dim, 1);
	ck_assert_uint_eq(m->dp_mask, 1u);
	ck_assert_int_eq(m->n_modules, 3);

	fc1 = &m->modules[0];
	act = &m->modules[1];
	fc2 = &m->modules[2];
	ck_assert_str_eq(fc1->name, "fc1");
	ck_assert_int_eq(fc1->type, TPS_MODULE_LINEAR);
	ck_assert_int_eq(fc1->in_features, 4);
	ck_assert_int_eq(fc1->out_features, 8);
	ck_assert(fc1->bias);
	ck_assert_int_eq(fc1->style, TPS_STYLE_COLWISE);
	ck_assert(is_replicate(fc1->input));
	ck_assert(is_shard(fc1->output, -1, 2));
	ck_assert_str_eq(fc1->plan_pointer, "/plan/fc1");

	ck_assert_str_eq(act->name, "act");
	ck_assert_int_eq(act->type, TPS_MODULE_RELU);
	ck_assert(!act->planned);
	ck_assert_str_eq(act->plan_pointer, "/model/1");

	ck_assert_str_eq(fc2->name, "fc2");
	ck_assert_int_eq(fc2->in_features, 8);
	ck_assert_int_eq(fc2->out_features, 4);
	ck_assert_int_eq(fc2->style, TPS_STYLE_ROWWISE);
	ck_assert_int_eq(fc2->bias_mode, TPS_BIAS_AFTER_REDUCE);
	ck_assert(is_shard(fc2->input, -1, 2));
	ck_assert(is_replicate(fc2->output));
	ck_assert_str_eq(fc2->plan_pointer, "/plan/fc2");

	ck_assert_int_eq(m->input_shape.ndim, 2);
	ck_assert_int_eq(m->input_shape.dim[0], 2);
	ck_assert_int_eq(m->input_shape.dim[1], 4);
	ck_assert_int_eq(m->input_init.method, TPS_INIT_ARANGE);
	ck_assert_int_eq(m->param_init.method, TPS_INIT_UNIFORM);
	ck_assert_uint_eq(m->param_init.seed, 7);
	ck_assert_int_eq(m->uneven, TPS_UNEVEN_CHUNK);
	ck_assert_int_eq(spec.values, TPS_TRACE_VALUES_FULL);
	ck_assert_int_eq(m->n_overrides, 1);
	ck_assert_str_eq(m->overrides[0].name, "fc1.bias");
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(design_example_normalizes_in_documented_order)
{
	static const char *const want =
		"{\"tpsim\":1,"
		"\"mesh\":{\"shape\":[2,2],\"dim_names\":[\"dp\",\"tp\"]},"
		"\"tp_dim\":\"tp\",\"dp_dim\":\"dp\","
		"\"strict_tp_innermost\":false,"
		"\"model\":["
		"{\"name\":\"fc1\",\"type\":\"linear\",\"in_features\":4,"
		"\"out_features\":8,\"bias\":true},"
		"{\"name\":\"act\",\"type\":\"relu\"},"
		"{\"name\":\"fc2\",\"type\":\"linear\",\"in_features\":8,"
		"\"out_features\":4,\"bias\":true}],"
		"\"plan\":{"
		"\"fc1\":{\"style\":\"colwise\",\"input\":\"replicate\","
		"\"output\":\"shard(-1)\"},"
		"\"fc2\":{\"style\":\"rowwise\",\"input\":\"shard(-1)\","
		"\"output\":\"replicate\",\"bias\":\"after_reduce\"}},"
		"\"input\":{\"shape\":[2,4],\"init\":\"arange\",\"seed\":0,"
		"\"loaded_on\":\"every_rank\"},"
		"\"init\":{\"method\":\"uniform\",\"seed\":7},"
		"\"params\":{\"fc1.bias\":[0,0,0,0,1,1,1,1]},"
		"\"uneven\":\"chunk\",\"sampler\":\"chunk\","
		"\"mode\":\"inference\","
		"\"links\":{\"dp\":{\"GBps\":25,\"latency_us\":10},"
		"\"tp\":{\"GBps\":150,\"latency_us\":3}},"
		"\"device\":{\"TFLOPS\":100},"
		"\"trace\":{\"values\":\"full\"}}";
	struct tps_run_spec spec = {0};
	char *got;

	parse_ok(DESIGN_EXAMPLE, &spec);
	got = normalized_text(&spec);
	ck_assert_str_eq(got, want);
	free(got);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(minimal_config_gets_defaults)
{
	static const char *const want =
		"{\"tpsim\":1,"
		"\"mesh\":{\"shape\":[3,2],\"dim_names\":[\"row\",\"col\"]},"
		"\"tp_dim\":\"col\",\"strict_tp_innermost\":false,"
		"\"model\":["
		"{\"name\":\"fc1\",\"type\":\"linear\",\"in_features\":4,"
		"\"out_features\":8,\"bias\":true},"
		"{\"name\":\"act\",\"type\":\"relu\"},"
		"{\"name\":\"fc2\",\"type\":\"linear\",\"in_features\":8,"
		"\"out_features\":4,\"bias\":true}],"
		"\"plan\":{},"
		"\"input\":{\"shape\":[2,4],\"init\":\"uniform\",\"seed\":0,"
		"\"loaded_on\":\"every_rank\"},"
		"\"init\":{\"method\":\"uniform\",\"seed\":0},"
		"\"uneven\":\"chunk\",\"sampler\":\"chunk\","
		"\"mode\":\"inference\","
		"\"links\":{\"row\":{\"GBps\":25,\"latency_us\":10},"
		"\"col\":{\"GBps\":150,\"latency_us\":3}},"
		"\"device\":{\"TFLOPS\":100},"
		"\"trace\":{\"values\":\"full\"}}";
	struct tps_run_spec spec = {0};
	char *got;

	parse_ok(WITH_MESH("{'shape':[3,2],'dim_names':['row','col']}") "}",
		 &spec);
	ck_assert_int_eq(spec.model.tp_dim, 1); /* the last mesh dim */
	ck_assert_uint_eq(spec.model.dp_mask, 0u);
	ck_assert_int_eq(spec.model.uneven, TPS_UNEVEN_CHUNK);
	ck_assert_int_eq(spec.values, TPS_TRACE_VALUES_FULL);
	/* No tolerance given: its defaults are the fallback's, and it adds
	 * no slack to the error bounds (so the normalised config has
	 * none). */
	ck_assert(spec.atol == 1e-5);
	ck_assert(spec.rtol == 1e-5);
	ck_assert(!spec.atol_given && !spec.rtol_given);
	ck_assert_int_eq(spec.model.n_overrides, 0);
	for (int i = 0; i < spec.model.n_modules; i++) {
		const struct tps_module_spec *ms = &spec.model.modules[i];
		char ptr[32];
		snprintf(ptr, sizeof ptr, "/model/%d", i);
		ck_assert(!ms->planned);
		ck_assert(is_replicate(ms->input));
		ck_assert(is_replicate(ms->output));
		ck_assert_str_eq(ms->plan_pointer, ptr);
	}
	ck_assert(spec.model.modules[0].bias); /* as nn.Linear */
	ck_assert(spec.model.modules[2].bias);
	got = normalized_text(&spec);
	ck_assert_str_eq(got, want);
	free(got);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(rowwise_bias_defaults_to_after_reduce)
{
	struct tps_run_spec spec = {0};

	parse_ok(BASE ",'plan':{'fc1':'colwise','fc2':'rowwise'}}", &spec);
	ck_assert_int_eq(module(&spec, "fc2")->style, TPS_STYLE_ROWWISE);
	ck_assert_int_eq(module(&spec, "fc2")->bias_mode,
			 TPS_BIAS_AFTER_REDUCE);
	ck_assert(!module(&spec, "act")->planned);
	tps_run_spec_free(&spec);

	parse_ok(BASE ",'plan':{'fc2':{'style':'rowwise'}}}", &spec);
	ck_assert_int_eq(module(&spec, "fc2")->bias_mode,
			 TPS_BIAS_AFTER_REDUCE);
	ck_assert(!module(&spec, "fc1")->planned);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(explicit_settings_override_defaults)
{
	struct tps_run_spec spec = {0};

	parse_ok(
		WITH_MESH(
			"{'shape':[2,3],'dim_names':['tp','dp']}") ",'tp_dim':'"
								   "tp','dp_"
								   "dim':'dp','"
								   "uneven':'"
								   "divisible',"
								   "'sampler':'"
								   "chunk','"
								   "trace':{'"
								   "values':'"
								   "summary'},"
								   "'tolerance'"
								   ":{'atol':0,"
								   "'rtol':0.5}"
								   ","
								   "'init':{'"
								   "method':'"
								   "normal','"
								   "seed':"
								   "90071992547"
								   "40992}}",
		&spec);
	ck_assert_int_eq(spec.model.tp_dim, 0);
	ck_assert_uint_eq(spec.model.dp_mask, 2u);
	ck_assert_int_eq(spec.model.uneven, TPS_UNEVEN_DIVISIBLE);
	ck_assert_int_eq(spec.values, TPS_TRACE_VALUES_SUMMARY);
	ck_assert(spec.atol == 0.0);
	ck_assert(spec.rtol == 0.5);
	ck_assert_int_eq(spec.model.param_init.method, TPS_INIT_NORMAL);
	ck_assert_uint_eq(spec.model.param_init.seed, UINT64_C(1) << 53);
	tps_run_spec_free(&spec);

	parse_ok(BASE ",'trace':{'values':'none'},'tolerance':{'rtol':0}}",
		 &spec);
	ck_assert_int_eq(spec.values, TPS_TRACE_VALUES_NONE);
	ck_assert(spec.atol == 1e-5); /* the other one keeps its default */
	ck_assert(spec.rtol == 0.0);
	ck_assert(!spec.atol_given && spec.rtol_given);
	/* ... and the normalised config records only what was given, so
	 * that it parses back to the same meaning. */
	{
		char *got = normalized_text(&spec);
		ck_assert_ptr_nonnull(strstr(got, ",\"tolerance\":{\"rtol\":0}}"));
		free(got);
	}
	tps_run_spec_free(&spec);

	/* A narrower dtype's fallback: torch.testing.assert_close's rtol for
	 * it (bfloat16 1.6e-2, float16 1e-3), atol 1e-5; a given one wins. */
	parse_ok(BASE ",'dtype':'bfloat16'}", &spec);
	ck_assert(spec.rtol == 1.6e-2 && spec.atol == 1e-5);
	tps_run_spec_free(&spec);
	parse_ok(BASE ",'dtype':{'grads':'float16'}}", &spec);
	ck_assert(spec.rtol == 1e-3 && spec.atol == 1e-5);
	tps_run_spec_free(&spec);
	parse_ok(BASE ",'dtype':'bfloat16','tolerance':{'rtol':1e-4}}", &spec);
	ck_assert(spec.rtol == 1e-4 && spec.rtol_given);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(sequence_parallel_save_is_read_and_recorded_when_not_default)
{
	/* "shard" (the default, Megatron's) is left out of the normalised
	 * config, so that traces of configs without the key keep their
	 * bytes; "gathered" is recorded after dp_grad, and parses back. */
	struct tps_run_spec spec = {0}, again = {0};
	char *got, *back;

	parse_ok(TRAIN "}", &spec);
	ck_assert_int_eq(spec.model.sp_save, TPS_SP_SAVE_SHARD);
	got = normalized_text(&spec);
	ck_assert_ptr_null(strstr(got, "sequence_parallel_save"));
	free(got);
	tps_run_spec_free(&spec);
	parse_ok(TRAIN ",'sequence_parallel_save':'shard'}", &spec);
	ck_assert_int_eq(spec.model.sp_save, TPS_SP_SAVE_SHARD);
	tps_run_spec_free(&spec);

	parse_ok(TRAIN ",'sequence_parallel_save':'gathered'}", &spec);
	ck_assert_int_eq(spec.model.sp_save, TPS_SP_SAVE_GATHERED);
	got = normalized_text(&spec);
	ck_assert_ptr_nonnull(strstr(
		got, "\"dp_grad\":\"global\","
		     "\"sequence_parallel_save\":\"gathered\","));
	ck_assert_int_eq(tps_config_parse(spec.normalized, "cfg.json", &again,
					  NULL),
			 TPS_OK);
	ck_assert_int_eq(again.model.sp_save, TPS_SP_SAVE_GATHERED);
	back = normalized_text(&again);
	ck_assert_str_eq(back, got);
	free(back);
	free(got);
	tps_run_spec_free(&again);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(recompute_is_read_and_recorded_when_not_none)
{
	/* "none" (the default) is left out of the normalised config;
	 * "selective" and "full" are recorded after dp_grad, and parse
	 * back. A
	 * transformer_block's first residual starts a block of 2 top-level
	 * modules, which "full" runs again. */
	static const char block[] =
		"{'tpsim':1,'mesh':{'shape':[2],'dim_names':['tp']},"
		"'model':[{'name':'b','type':'transformer_block','dim':8,"
		"'num_heads':2}],'input':{'shape':[1,2,8]},"
		"'mode':'training'";
	char text[512];
	struct tps_run_spec spec = {0}, again = {0};
	char *got, *back;

	snprintf(text, sizeof text, "%s}", block);
	parse_ok(text, &spec);
	ck_assert_int_eq(spec.model.recompute, TPS_RECOMPUTE_NONE);
	ck_assert_int_eq(module(&spec, "b.attn_residual")->block_span, 2);
	ck_assert_int_eq(module(&spec, "b.mlp_residual")->block_span, 0);
	got = normalized_text(&spec);
	ck_assert_ptr_null(strstr(got, "recompute"));
	free(got);
	tps_run_spec_free(&spec);

	for (int k = TPS_RECOMPUTE_SELECTIVE; k <= TPS_RECOMPUTE_FULL; k++) {
		const char *name = tps_recompute_names[k];
		char want[96];
		snprintf(text, sizeof text, "%s,'recompute':'%s'}", block,
			 name);
		parse_ok(text, &spec);
		ck_assert_int_eq(spec.model.recompute, k);
		got = normalized_text(&spec);
		snprintf(want, sizeof want,
			 "\"dp_grad\":\"global\",\"recompute\":\"%s\",", name);
		ck_assert_ptr_nonnull(strstr(got, want));
		ck_assert_int_eq(tps_config_parse(spec.normalized, "cfg.json",
						  &again, NULL),
				 TPS_OK);
		ck_assert_int_eq(again.model.recompute, k);
		back = normalized_text(&again);
		ck_assert_str_eq(back, got);
		free(back);
		free(got);
		tps_run_spec_free(&again);
		tps_run_spec_free(&spec);
	}
}
END_TEST

START_TEST(integral_floats_are_accepted_as_sizes)
{
	struct tps_run_spec spec = {0};

	parse_ok("{'tpsim':1.0,'mesh':{'shape':[2.0,1e0],'dim_names':['dp',"
		 "'tp']},'model':[{'name':'fc1','type':'linear',"
		 "'in_features':4.0,'out_features':8.00},"
		 "{'name':'fc2','type':'linear','in_features':0.8e1,"
		 "'out_features':40e-1}],"
		 "'input':{'shape':[2.0,4.0],'seed':3.0}}",
		 &spec);
	ck_assert_int_eq(spec.model.mesh.shape[0], 2);
	ck_assert_int_eq(spec.model.mesh.shape[1], 1);
	ck_assert_int_eq(spec.model.modules[0].in_features, 4);
	ck_assert_int_eq(spec.model.modules[0].out_features, 8);
	ck_assert_int_eq(spec.model.modules[1].in_features, 8);
	ck_assert_int_eq(spec.model.modules[1].out_features, 4);
	ck_assert_int_eq(spec.model.input_shape.dim[0], 2);
	ck_assert_int_eq(spec.model.input_shape.dim[1], 4);
	ck_assert_uint_eq(spec.model.input_init.seed, 3);
	tps_run_spec_free(&spec);
}
END_TEST

/*
 * Each size lands in the field named for what it holds, for every module
 * type: in_features is the input's width (a linear's in_features, a
 * layernorm's and an attention's dim), out_features the output's; an
 * embedding takes token ids, not features: its vocabulary is
 * num_embeddings (in_features held it once).
 */
START_TEST(module_sizes_land_in_the_fields_that_name_them)
{
	struct tps_run_spec spec = {0};
	const struct tps_module_spec *m;

	parse_ok("{'tpsim':1,'mesh':{'shape':[2],'dim_names':['tp']},"
		 "'model':[{'name':'tok','type':'embedding',"
		 "'num_embeddings':50,'embedding_dim':16},"
		 "{'name':'ln','type':'layernorm','dim':16},"
		 "{'name':'attn','type':'attention','embed_dim':16,"
		 "'num_heads':4},"
		 "{'name':'out','type':'linear','in_features':16,"
		 "'out_features':50}],"
		 "'input':{'shape':[2,8],'init':'tokens'}}",
		 &spec);
	m = spec.model.modules;
	ck_assert_str_eq(m[0].name, "tok");
	ck_assert_int_eq(m[0].num_embeddings, 50);
	ck_assert_int_eq(m[0].in_features, 0);
	ck_assert_int_eq(m[0].out_features, 16);
	ck_assert_str_eq(m[1].name, "ln");
	ck_assert_int_eq(m[1].in_features, 16);
	ck_assert_int_eq(m[1].out_features, 16);
	ck_assert_int_eq(m[1].num_embeddings, 0);
	ck_assert_str_eq(m[2].name, "attn");
	ck_assert_int_eq(m[2].in_features, 16);
	ck_assert_int_eq(m[2].out_features, 16);
	ck_assert_str_eq(m[7].name, "out");
	ck_assert_int_eq(m[7].in_features, 16);
	ck_assert_int_eq(m[7].out_features, 50);
	ck_assert_int_eq(m[7].num_embeddings, 0);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(sizes_at_the_limits_are_accepted)
{
	struct tps_run_spec spec = {0};

	/* A world of exactly 4096 on 4 dims; a weight of exactly 2^31. */
	parse_ok("{'tpsim':1,'mesh':{'shape':[8,8,8,8],'dim_names':['a','b',"
		 "'c','tp']},'model':[{'name':'fc1','type':'linear',"
		 "'in_features':65536,'out_features':32768,'bias':false}],"
		 "'input':{'shape':[1,1,1,65536]}}",
		 &spec);
	ck_assert_int_eq(spec.model.mesh.world_size, 4096);
	ck_assert_int_eq(spec.model.mesh.ndim, 4);
	ck_assert_int_eq(spec.model.tp_dim, 3);
	ck_assert(!spec.model.modules[0].bias);
	ck_assert_int_eq(spec.model.input_shape.ndim, 4);
	tps_run_spec_free(&spec);

	parse_ok(MESH_SIZE("4096") "}", &spec);
	ck_assert_int_eq(spec.model.mesh.world_size, 4096);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(star_patterns_expand_per_path_component)
{
	struct tps_run_spec spec = {0};
	char *got;

	parse_ok(HDR "'model':["
		     "{'name':'block.fc1','type':'linear','in_features':4,"
		     "'out_features':8},"
		     "{'name':'block.act','type':'gelu'},"
		     "{'name':'block.fc2','type':'linear','in_features':8,"
		     "'out_features':4},"
		     "{'name':'fc3','type':'linear','in_features':4,"
		     "'out_features':4},"
		     "{'name':'head.fc4','type':'linear','in_features':4,"
		     "'out_features':4}]," INPUT
		     ",'plan':{'block.*':'replicate','fc*':'colwise',"
		     "'*.fc4':{'style':'rowwise','bias':'rank0'}}}",
		 &spec);
	ck_assert_int_eq(module(&spec, "block.fc1")->style,
			 TPS_STYLE_REPLICATE);
	ck_assert_int_eq(module(&spec, "block.act")->style,
			 TPS_STYLE_REPLICATE);
	ck_assert_int_eq(module(&spec, "block.fc2")->style,
			 TPS_STYLE_REPLICATE);
	ck_assert_str_eq(module(&spec, "block.act")->plan_pointer,
			 "/plan/block.*");
	/* "fc*" stays within one component: fc3, not block.fc1. */
	ck_assert_int_eq(module(&spec, "fc3")->style, TPS_STYLE_COLWISE);
	ck_assert_str_eq(module(&spec, "fc3")->plan_pointer, "/plan/fc*");
	ck_assert_int_eq(module(&spec, "head.fc4")->style, TPS_STYLE_ROWWISE);
	ck_assert_int_eq(module(&spec, "head.fc4")->bias_mode, TPS_BIAS_RANK0);
	ck_assert_str_eq(module(&spec, "head.fc4")->plan_pointer,
			 "/plan/*.fc4");

	got = normalized_text(&spec);
	ck_assert_msg(strstr(got,
			     "\"plan\":{"
			     "\"block.fc1\":{\"style\":\"replicate\"},"
			     "\"block.act\":{\"style\":\"replicate\"},"
			     "\"block.fc2\":{\"style\":\"replicate\"},"
			     "\"fc3\":{\"style\":\"colwise\","
			     "\"input\":\"replicate\","
			     "\"output\":\"shard(-1)\"},"
			     "\"head.fc4\":{\"style\":\"rowwise\","
			     "\"input\":\"shard(-1)\",\"output\":\"replicate\","
			     "\"bias\":\"rank0\"}},") != NULL,
		      "normalized: %s", got);
	free(got);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(star_matches_every_module_of_one_component)
{
	struct tps_run_spec spec = {0};

	parse_ok(BASE ",'plan':{'*':'replicate'}}", &spec);
	for (int i = 0; i < spec.model.n_modules; i++) {
		ck_assert_int_eq(spec.model.modules[i].style,
				 TPS_STYLE_REPLICATE);
		ck_assert_str_eq(spec.model.modules[i].plan_pointer, "/plan/*");
	}
	tps_run_spec_free(&spec);

	/* A '*' in the middle and at both ends of a component. */
	parse_ok(BASE ",'plan':{'f*1':'colwise','*c*2':'rowwise'}}", &spec);
	ck_assert_int_eq(module(&spec, "fc1")->style, TPS_STYLE_COLWISE);
	ck_assert_int_eq(module(&spec, "fc2")->style, TPS_STYLE_ROWWISE);
	ck_assert(!module(&spec, "act")->planned);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(object_plan_sets_input_output_and_bias)
{
	struct tps_run_spec spec = {0};
	const struct tps_module_spec *fc1, *fc2;
	char *got;

	parse_ok(INPUT_SHAPE("[2,3,4]") ",'plan':{"
					"'fc1':{'style':'colwise','input':'"
					"shard(1)',"
					"'output':'replicate'},"
					"'fc2':{'style':'rowwise','input':'"
					"shard(-1)',"
					"'output':'shard(1)','bias':'partial_"
					"split'}}}",
		 &spec);
	fc1 = module(&spec, "fc1");
	fc2 = module(&spec, "fc2");
	ck_assert_int_eq(fc1->style, TPS_STYLE_COLWISE);
	ck_assert(is_shard(fc1->input, 1, 3));
	ck_assert(is_replicate(fc1->output));
	ck_assert_int_eq(fc2->style, TPS_STYLE_ROWWISE);
	ck_assert(is_shard(fc2->input, -1, 3));
	ck_assert(is_shard(fc2->output, 1, 3));
	ck_assert_int_eq(fc2->bias_mode, TPS_BIAS_PARTIAL_SPLIT);
	got = normalized_text(&spec);
	ck_assert_msg(strstr(got,
			     "\"plan\":{"
			     "\"fc1\":{\"style\":\"colwise\","
			     "\"input\":\"shard(1)\","
			     "\"output\":\"replicate\"},"
			     "\"fc2\":{\"style\":\"rowwise\","
			     "\"input\":\"shard(-1)\",\"output\":\"shard(1)\","
			     "\"bias\":\"partial_split\"}},") != NULL,
		      "normalized: %s", got);
	free(got);
	tps_run_spec_free(&spec);

	/* Object form without extra keys gives the style's defaults. */
	parse_ok(BASE ",'plan':{'fc1':{'style':'colwise'},"
		      "'act':{'style':'replicate'}}}",
		 &spec);
	ck_assert(is_replicate(module(&spec, "fc1")->input));
	ck_assert(is_shard(module(&spec, "fc1")->output, -1, 2));
	ck_assert_int_eq(module(&spec, "act")->style, TPS_STYLE_REPLICATE);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(params_values_land_in_spec)
{
	struct tps_run_spec spec = {0};
	const struct tps_param_override *w = NULL, *b = NULL;

	parse_ok(HDR "'model':[{'name':'fc1','type':'linear','in_features':3,"
		     "'out_features':2}],'input':{'shape':[1,3]},"
		     "'params':{'fc1.weight':[[1,2.5,-3],[0.1,1e-3,65504]],"
		     "'fc1.bias':[-0.5,3.4e38]}}",
		 &spec);
	ck_assert_int_eq(spec.model.n_overrides, 2);
	for (int i = 0; i < spec.model.n_overrides; i++) {
		const struct tps_param_override *o = &spec.model.overrides[i];
		if (strcmp(o->name, "fc1.weight") == 0) {
			w = o;
		} else if (strcmp(o->name, "fc1.bias") == 0) {
			b = o;
		}
	}
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(b);
	/* The weight is (out_features, in_features), row-major. */
	ck_assert_int_eq(w->value.shape.ndim, 2);
	ck_assert_int_eq(w->value.shape.dim[0], 2);
	ck_assert_int_eq(w->value.shape.dim[1], 3);
	ck_assert(w->value.data[0] == 1.0f);
	ck_assert(w->value.data[1] == 2.5f);
	ck_assert(w->value.data[2] == -3.0f);
	ck_assert(w->value.data[3] == 0.1f);
	ck_assert(w->value.data[4] == 1e-3f);
	ck_assert(w->value.data[5] == 65504.0f);
	ck_assert_int_eq(b->value.shape.ndim, 1);
	ck_assert_int_eq(b->value.shape.dim[0], 2);
	ck_assert(b->value.data[0] == -0.5f);
	ck_assert(b->value.data[1] == 3.4e38f);
	tps_run_spec_free(&spec);
}
END_TEST

/* An fc1.weight of BASE's fc1 (8 x 4) from eight rows. */
#define WEIGHT_ROWS(r0, r1, r2, r3, r4, r5, r6, r7)                            \
	BASE ",'params':{'fc1.weight':[" r0 "," r1 "," r2 "," r3 "," r4 "," r5 \
	     "," r6 "," r7 "]}}"
#define ROW "[1,2,3,4]"

/* A bad value inside a row of a 2-D weight, where rows are read whole
 * (config_model.c): the message names its own pointer, and the first bad
 * one in document order. */
static const struct bad_config bad_weight_rows[] = {
	BAD(WEIGHT_ROWS(ROW, ROW, ROW, ROW, ROW, "[1,2,'x',4]", ROW, ROW),
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/5/2: expected a number, got string "
	    "\"x\""),
	BAD(WEIGHT_ROWS(ROW, ROW, ROW, ROW, ROW, ROW, ROW, "[1,2,3,1e39]"),
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/7/3: expected a finite float32 "
	    "value, got 1e39"),
	BAD(WEIGHT_ROWS(ROW, ROW, ROW, ROW, ROW, ROW, ROW, "[1,2,3,-1e999]"),
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/7/3: expected a finite float32 "
	    "value, got a number out of range"),
	BAD(WEIGHT_ROWS("[[1],2,3,4]", ROW, ROW, ROW, ROW, ROW, ROW, ROW),
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/0/0: expected a number, got an "
	    "array"),
	BAD(WEIGHT_ROWS(ROW, ROW, "[1,true,3,4]", ROW, ROW, ROW, ROW, ROW),
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/2/1: expected a number, got true"),
	BAD(WEIGHT_ROWS(ROW, ROW, ROW, "[1,2,3,4,5]", ROW, ROW, ROW, ROW),
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/3: expected 4 elements (dim 1 of the "
	    "parameter's shape), got 5"),
	BAD(WEIGHT_ROWS(ROW, "[1,2,3,'x']", ROW, ROW, ROW, ROW, "[-1e39,2,3,4]",
			ROW),
	    TPS_ERR_INPUT,
	    "cfg.json: /params/fc1.weight/1/3: expected a number, got string "
	    "\"x\""),
};

START_TEST(input_values_land_in_spec_with_their_shape)
{
	/* Without "shape" the nesting gives it: (2, 1, 4). */
	struct tps_run_spec spec = {0};
	parse_ok(HDR MODEL ",'input':{'values':[[[1,2,3,4]],[[5,6,7,-0.5]]]}}",
		 &spec);
	ck_assert(spec.model.input_explicit);
	ck_assert_int_eq(spec.model.input_shape.ndim, 3);
	ck_assert_int_eq(spec.model.input_shape.dim[0], 2);
	ck_assert_int_eq(spec.model.input_shape.dim[1], 1);
	ck_assert_int_eq(spec.model.input_shape.dim[2], 4);
	ck_assert(tps_shape_equal(&spec.model.input_values.shape,
				  &spec.model.input_shape));
	ck_assert(spec.model.input_values.data[0] == 1.0f);
	ck_assert(spec.model.input_values.data[7] == -0.5f);
	tps_run_spec_free(&spec);
	/* With "shape", the values must fill it. */
	parse_ok(HDR MODEL ",'input':{'shape':[1,4],'values':[[4,3,2,1]]}}",
		 &spec);
	ck_assert(spec.model.input_explicit);
	ck_assert(spec.model.input_values.data[3] == 1.0f);
	tps_run_spec_free(&spec);
	parse_ok(HDR MODEL ",'input':{'shape':[1,4]}}", &spec);
	ck_assert(!spec.model.input_explicit);
	ck_assert_ptr_null(spec.model.input_values.data);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(params_bad_value_in_a_row_is_reported_at_its_pointer)
{
	const struct bad_config *bc = &bad_weight_rows[_i];
	struct tps_error err = {0};
	struct tps_run_spec spec = {0};
	cJSON *root = NULL;
	enum tps_status st = parse_json(bc->json, &root, &err);

	ck_assert_msg(st == TPS_OK, "row %d: JSON rejected: %s", _i,
		      err.message);
	st = tps_config_parse(root, "cfg.json", &spec, &err);
	cJSON_Delete(root);
	ck_assert_int_eq(st, bc->status);
	ck_assert_str_eq(err.message, bc->msg);
}
END_TEST

/* Every bad config, its "params" packed as a config file's are: the same
 * status and the same message, word for word, as unpacked. */
static void expect_packed_message(const struct bad_config *bc, int row)
{
	struct tps_error plain_err = {0}, packed_err = {0};
	struct tps_run_spec spec = {0};
	enum tps_status plain_st, packed_st;
	cJSON *root = NULL;

	plain_st = parse_json(bc->json, &root, &plain_err);
	if (plain_st == TPS_OK) {
		plain_st =
			tps_config_parse(root, "cfg.json", &spec, &plain_err);
		cJSON_Delete(root);
		root = NULL;
		ck_assert_int_ne(plain_st, TPS_OK);
	}
	packed_st = parse_json_packed(bc->json, &root, &packed_err);
	if (packed_st == TPS_OK) {
		packed_st =
			tps_config_parse(root, "cfg.json", &spec, &packed_err);
		cJSON_Delete(root);
	}
	ck_assert_msg(packed_st == plain_st, "row %d: status %d, unpacked %d",
		      row, (int)packed_st, (int)plain_st);
	ck_assert_msg(strcmp(packed_err.message, plain_err.message) == 0,
		      "row %d: packed \"%s\", unpacked \"%s\"", row,
		      packed_err.message, plain_err.message);
}

START_TEST(packed_bad_config_gives_the_unpacked_message)
{
	expect_packed_message(&bad_configs[_i], _i);
}
END_TEST

START_TEST(packed_bad_weight_row_gives_the_unpacked_message)
{
	expect_packed_message(&bad_weight_rows[_i], _i);
}
END_TEST

/* Good configs with "params": packed or not, the same override values, bit
 * for bit, and the same normalised config as the trace writes it. */
START_TEST(packed_params_give_the_same_spec_and_normalized_config)
{
	static const char *const configs[] = {
		HDR "'model':[{'name':'fc1','type':'linear','in_features':3,"
		    "'out_features':2}],'input':{'shape':[1,3]},"
		    "'params':{'fc1.weight':[[1,2.5,-3],[0.1,1e-3,65504]],"
		    "'fc1.bias':[-0.5,3.4e38]}}",
		BASE ",'params':{'fc1.bias':[0,0.5,0,0,1,1,1,-2.25],"
		     "'fc1.weight':" EIGHT_ROWS_OF("[1,2,3,4]") "}}",
		/* With an expression: read from the substituted copy. */
		HDR MODEL ",'input':{'shape':['$b',4]},'vars':{'b':2},"
			  "'params':{'fc1.bias':[0,0.5,0,0,1,1,1,-2.25]}}",
	};

	for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
		struct tps_run_spec plain = {0}, packed = {0};
		struct tps_error err = {0};
		cJSON *root = NULL, *entry;
		char *a, *b;

		ck_assert_int_eq(parse_json(configs[i], &root, &err), TPS_OK);
		ck_assert_msg(tps_config_parse(root, "cfg.json", &plain,
					       &err) == TPS_OK,
			      "%s", err.message);
		cJSON_Delete(root);
		ck_assert_int_eq(parse_json_packed(configs[i], &root, &err),
				 TPS_OK);
		/* A bias, or a weight's rows. */
		entry = cJSON_GetObjectItemCaseSensitive(root, "params")->child;
		ck_assert(tps_json_is_packed(entry) ||
			  tps_json_is_packed(entry->child));
		ck_assert_msg(tps_config_parse(root, "cfg.json", &packed,
					       &err) == TPS_OK,
			      "%s", err.message);
		cJSON_Delete(root);
		ck_assert_int_eq(packed.model.n_overrides,
				 plain.model.n_overrides);
		for (int k = 0; k < plain.model.n_overrides; k++) {
			const struct tps_tensor *p =
				&plain.model.overrides[k].value;
			const struct tps_tensor *q =
				&packed.model.overrides[k].value;
			int64_t n = 0;
			ck_assert(tps_shape_equal(&p->shape, &q->shape));
			ck_assert_int_eq(tps_shape_numel(&p->shape, &n, NULL),
					 TPS_OK);
			ck_assert(memcmp(p->data, q->data,
					 (size_t)n * sizeof *p->data) == 0);
		}
		a = written_text(plain.normalized);
		b = written_text(packed.normalized);
		ck_assert_str_eq(a, b);
		free(a);
		free(b);
		tps_run_spec_free(&plain);
		tps_run_spec_free(&packed);
	}
}
END_TEST

/* A repeat of a module (a residual, whose body is named under each copy),
 * a repeat of a list holding a repeat, and a transformer_block repeated
 * "$n" times. */
#define REPEATS                                                                \
	"{'tpsim':1,'vars':{'n':2}," MESH_TP ",'model':[" FC1 ","              \
	"{'repeat':2,'name':'res','module':{'type':'residual','body':["     \
	"{'name':'fc','type':'linear','in_features':8,'out_features':8}]}},"   \
	"{'repeat':2,'name':'a','modules':[" ACT ",{'repeat':3,'name':'b',"    \
	"'module':{'type':'gelu'}}]},"                                         \
	"{'repeat':'$n','name':'h','module':{'type':'transformer_block',"      \
	"'dim':8,'num_heads':2}}],'input':{'shape':[2,3,4]}"

START_TEST(repeat_names_each_copy_under_its_index)
{
	static const char *const names[] = {
		"fc1",	     "res.0",	  "res.0.fc",  "res.1",	  "res.1.fc",
		"a.0.act",   "a.0.b.0",	  "a.0.b.1",   "a.0.b.2", "a.1.act",
		"a.1.b.0",   "a.1.b.1",	  "a.1.b.2",   "h.0.attn_residual"};
	struct tps_run_spec spec = {0};
	char *text;
	parse_ok(REPEATS "}", &spec);
	/* fc1, 2 x 2, 2 x 4, 2 x 12 */
	ck_assert_int_eq(spec.model.n_modules, 1 + 4 + 8 + 24);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		ck_assert_str_eq(spec.model.modules[i].name, names[i]);
	}
	ck_assert_int_eq(module(&spec, "res.1")->n_descendants, 1);
	ck_assert_str_eq(spec.model.modules[36].name, "h.1.mlp.fc2");
	/* The normalised config lists the copies, not the repeats. */
	text = normalized_text(&spec);
	ck_assert_ptr_null(strstr(text, "repeat"));
	ck_assert_ptr_nonnull(strstr(text, "\"name\":\"a.1.b.2\""));
	free(text);
	tps_run_spec_free(&spec);
}
END_TEST

/* "dtype": a name sets every role; an object sets "default" and then each
 * role it names; master_params defaults to params (no master copy). The
 * normalised config writes every role, and only when one is not float32
 * (a float32 run's config is as it was before dtypes). */
START_TEST(dtype_sets_each_role_and_is_normalised_only_when_not_float32)
{
	static const struct {
		const char *json;
		enum tps_dtype want[TPS_DTYPE_ROLE_COUNT]; /* spec.h order */
		const char *normalized; /* NULL: no "dtype" key */
	} cases[] = {
		{BASE "}", {0}, NULL},
		{BASE ",'dtype':'float32'}", {0}, NULL},
		{BASE ",'dtype':{'reduce':'float32'}}", {0}, NULL},
		{BASE ",'dtype':'bfloat16'}",
		 {TPS_DTYPE_BF16, TPS_DTYPE_BF16, TPS_DTYPE_BF16,
		  TPS_DTYPE_BF16, TPS_DTYPE_BF16, TPS_DTYPE_BF16},
		 "\"dtype\":{\"params\":\"bfloat16\",\"master_params\":"
		 "\"bfloat16\",\"activations\":\"bfloat16\",\"grads\":"
		 "\"bfloat16\",\"optimizer_state\":\"bfloat16\",\"reduce\":"
		 "\"bfloat16\"}}"},
		/* Megatron's bf16 with fp32 main params and grad reduce. */
		{BASE ",'dtype':{'default':'bfloat16','master_params':"
		      "'float32','reduce':'float32'}}",
		 {TPS_DTYPE_BF16, TPS_DTYPE_F32, TPS_DTYPE_BF16, TPS_DTYPE_BF16,
		  TPS_DTYPE_BF16, TPS_DTYPE_F32},
		 "\"dtype\":{\"params\":\"bfloat16\",\"master_params\":"
		 "\"float32\",\"activations\":\"bfloat16\",\"grads\":"
		 "\"bfloat16\",\"optimizer_state\":\"bfloat16\",\"reduce\":"
		 "\"float32\"}}"},
		/* Only the activations in float16: no default needed. */
		{BASE ",'dtype':{'activations':'float16'}}",
		 {TPS_DTYPE_F32, TPS_DTYPE_F32, TPS_DTYPE_F16, TPS_DTYPE_F32,
		  TPS_DTYPE_F32, TPS_DTYPE_F32},
		 "\"activations\":\"float16\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tps_run_spec spec = {0};
		char *text;
		parse_ok(cases[i].json, &spec);
		for (int r = 0; r < TPS_DTYPE_ROLE_COUNT; r++) {
			ck_assert_msg(spec.model.dtypes.of[r] ==
					      cases[i].want[r],
				      "case %zu: %s is %s, expected %s", i,
				      tps_dtype_role_names[r],
				      tps_dtype_names[spec.model.dtypes.of[r]],
				      tps_dtype_names[cases[i].want[r]]);
		}
		text = normalized_text(&spec);
		if (cases[i].normalized) {
			ck_assert_msg(strstr(text, cases[i].normalized),
				      "case %zu: %s", i, text);
		} else {
			ck_assert_msg(!strstr(text, "dtype"), "case %zu: %s", i,
				      text);
		}
		free(text);
		tps_run_spec_free(&spec);
	}
}
END_TEST

START_TEST(normalized_config_parses_to_itself)
{
	static const char *const configs[] = {
		DESIGN_EXAMPLE,
		BASE "}",
		INPUT_SHAPE("[2,3,4]") ",'plan':{'fc1':{'style':'colwise',"
				       "'input':'shard(1)','output':'replicate'"
				       "},'fc2':{'style':"
				       "'rowwise','bias':'rank0'}},'uneven':'"
				       "divisible',"
				       "'trace':{'values':'none'},'tolerance':{"
				       "'atol':0.25}}",
		TRAIN "}",
		HDR MODEL ",'input':{'shape':[2,4],'requires_grad':true,"
			  "'loaded_on':'tp_root'},'mode':'training',"
			  "'loss':'sum','steps':7,'optimizer':{'type':'adamw',"
			  "'betas':[0.5,0.25],'lr':0.01},'dp_grad':'ddp'}",
		DP_BATCH(
			"4") ",'mode':'training','sampler':'distributed',"
			     "'target':{'init':'ones','seed':3,'shape':[4,4]},"
			     "'optimizer':{'momentum':0.9,'nesterov':true,"
			     "'weight_decay':1e-4},'strict_tp_innermost':true}",
		MESH_DP_CP_TP ",'dp_dim':['dp','cp'],'links':{'cp':{'GBps':"
			      "50}},'device':{'TFLOPS':312}}",
		SWEEP,
		HDR MODEL ",'input':{'values':[[1,2.5,-3,0.1],[5,6,7,8e-3]]}}",
		BASE ",'plan':{'fc2':'rowwise'},'inject':['bias_every_rank']}",
		REPEATS "}",
		/* A vocab embedding's input is written "replicate". */
		HDR "'model':[{'name':'emb','type':'embedding',"
		    "'num_embeddings':6,'embedding_dim':4}],'input':{'shape':"
		    "[2,3],'init':'tokens'},'plan':{'emb':{'style':'vocab',"
		    "'output':'shard(1)'}}}",
		BASE ",'dtype':'bfloat16'}",
		TRAIN ",'dtype':{'default':'bfloat16','master_params':"
		      "'float32','reduce':'float32','grads':'float16'}}",
		DP_BATCH("4") ",'mode':'training','zero':{'stage':2}}",
		DP_BATCH("4") ",'mode':'training','zero':{'stage':1}}",
		DP_BATCH("4") ",'mode':'training','zero':{'stage':3,"
			      "'reshard_after_forward':false}}",
		PP("4", "{'dim':'pp','microbatches':2}"),
		PP("4", "{'dim':'pp','microbatches':4,'schedule':'gpipe',"
			"'stages':[[0,0],[1,2]]}"),
		PP_SIX("[2,2]", "{'dim':'pp','microbatches':2,'schedule':"
				"'interleaved_1f1b','virtual_stages':2}"),
	};
	for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
		struct tps_run_spec a = {0}, b = {0};
		struct tps_error err = {0};
		char *ta, *tb;

		parse_ok(configs[i], &a);
		ta = normalized_text(&a);
		ck_assert_msg(parse_text(ta, &b, &err) == TPS_OK,
			      "normalized config %zu rejected: %s", i,
			      err.message);
		tb = normalized_text(&b);
		ck_assert_str_eq(ta, tb);
		free(ta);
		free(tb);
		tps_run_spec_free(&a);
		tps_run_spec_free(&b);
	}
}
END_TEST

/*
 * One config per module type, its module "m" giving every key the type
 * has, each optional one away from its default: the normalised config
 * must hold the module exactly as written (every key, in the type's
 * order: none dropped, none added), and must parse back to itself.
 */
static const struct {
	const char *type;
	const char *config;
} every_key[] = {
	{"linear", HDR "'model':[{'name':'e','type':'embedding',"
		   "'num_embeddings':6,'embedding_dim':4,"
		   "'make_vocab_size_divisible_by':4},{'name':'m','type':"
		   "'linear','in_features':4,'out_features':6,'bias':false,"
		   "'tie':'e','make_vocab_size_divisible_by':4}],'input':{"
		   "'shape':[2,3],'init':'tokens'}}"},
	{"relu", HDR "'model':[{'name':'m','type':'relu'}]," INPUT "}"},
	{"gelu", HDR "'model':[{'name':'m','type':'gelu'}]," INPUT "}"},
	{"layernorm", HDR "'model':[{'name':'m','type':'layernorm','dim':4,"
			  "'eps':0.001,'bias':false}]," INPUT "}"},
	{"residual", HDR "'model':[{'name':'m','type':'residual','body':[{"
			 "'name':'fc','type':'linear','in_features':4,"
			 "'out_features':4,'bias':false}]}]," INPUT "}"},
	{"embedding", HDR "'model':[{'name':'m','type':'embedding',"
		      "'num_embeddings':6,'embedding_dim':4,"
		      "'make_vocab_size_divisible_by':3}],'input':{"
		      "'shape':[2,3],'init':'tokens'}}"},
	{"attention", HDR "'model':[{'name':'m','type':'attention',"
		      "'embed_dim':4,'num_heads':2,'num_kv_heads':1,"
		      "'causal':true,'bias':false,'rope_theta':500000,"
		      "'rope_style':'interleaved'"
		      "}],'input':{'shape':[2,3,4]}}"},
	{"rmsnorm", HDR "'model':[{'name':'m','type':'rmsnorm','dim':4,"
			"'eps':0.001}]," INPUT "}"},
	{"silu", HDR "'model':[{'name':'m','type':'silu'}]," INPUT "}"},
	{"gated", HDR "'model':[{'name':'m','type':'gated','gate':[{'name':"
		      "'a','type':'linear','in_features':4,'out_features':6,"
		      "'bias':false},{'name':'s','type':'silu'}],'up':[{'name':"
		      "'b','type':'linear','in_features':4,'out_features':6,"
		      "'bias':false}]}]," INPUT "}"},
	{"dropout", HDR "'model':[{'name':'m','type':'dropout','p':0.25}]," INPUT
			"}"},
};

/* The top-level module "m" of a parsed config (a '-quoted one, or a
 * normalised one), as compact JSON (caller frees). */
static char *module_m_text(const cJSON *root)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(root, "model"))
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
		if (cJSON_IsString(name) && strcmp(name->valuestring, "m") == 0) {
			char *s = cJSON_PrintUnformatted(m);
			ck_assert_ptr_nonnull(s);
			return s;
		}
	}
	ck_abort_msg("no module \"m\"");
	return NULL;
}

/* The module "m" of a normalised config holds "name", "type" and every
 * key of type t's descriptor, in its order; each optional one away from
 * its default, so that the config above shows it is read. */
static void check_keys_of_type(const cJSON *root, enum tps_module_type t)
{
	const struct tps_module_type_desc *d = &tps_module_types[t];
	const cJSON *m, *v;
	int k = 0;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(root, "model"))
	{
		if (strcmp(cJSON_GetObjectItemCaseSensitive(m, "name")
				   ->valuestring,
			   "m") == 0) {
			break;
		}
	}
	ck_assert_ptr_nonnull(m);
	v = m->child;
	ck_assert_str_eq(v->string, "name");
	v = v->next;
	ck_assert_str_eq(v->string, "type");
	ck_assert_str_eq(v->valuestring, d->name);
	for (v = v->next; v; v = v->next, k++) {
		const struct tps_module_key *key = &d->keys[k];
		ck_assert_int_lt(k, TPS_MODULE_MAX_KEYS);
		ck_assert_msg(key->name != NULL, "%s: extra key %s", d->name,
			      v->string);
		ck_assert_str_eq(v->string, key->name);
		if (key->kind == TPS_KEY_BOOL) {
			ck_assert_msg(cJSON_IsTrue(v) != (key->fallback != 0),
				      "%s: %s is its default", d->name,
				      key->name);
		} else if (key->kind == TPS_KEY_MODULE_NAME) {
			ck_assert_msg(cJSON_IsString(v) && v->valuestring[0],
				      "%s: %s names no module", d->name,
				      key->name);
		} else if (key->kind == TPS_KEY_CHOICE) {
			ck_assert_msg(
				strcmp(v->valuestring,
				       key->choices[(int)key->fallback]) != 0,
				"%s: %s is its default", d->name, key->name);
		} else if (!key->required) {
			ck_assert_msg(v->valuedouble != key->fallback,
				      "%s: %s is its default", d->name,
				      key->name);
		}
	}
	ck_assert_msg(k == TPS_MODULE_MAX_KEYS || !d->keys[k].name,
		      "%s: key %s not in the normalised config", d->name,
		      d->keys[k].name);
}

/* Llama-3-8B's attention (dim 4096, 32 heads of 128, 8 kv heads) at tp
 * `tp` with Megatron's plan, symbolic; *st the parse's status. */
static void llama3_8b_attention(int tp, struct tps_run_spec *spec,
				struct tps_error *err, enum tps_status *st)
{
	char text[1024];
	int n = snprintf(
		text, sizeof text,
		"{\"tpsim\":1,\"compute\":\"symbolic\",\"mesh\":{\"shape\":[%d],"
		"\"dim_names\":[\"tp\"]},\"model\":[{\"name\":\"b\","
		"\"type\":\"transformer_block\",\"dim\":4096,"
		"\"num_heads\":32,\"num_kv_heads\":8,\"hidden\":14336,"
		"\"bias\":false}],\"input\":{\"shape\":[1,8,4096]},"
		"\"plan\":{\"b.attn.[qkv]\":\"colwise\","
		"\"b.attn.o\":\"rowwise\"}}",
		tp);
	ck_assert_int_lt(n, (int)sizeof text);
	*st = parse_text(text, spec, err);
}

/* tp splits the kv heads with their query groups: at tp 8 each rank has
 * one kv head (k, v blocks of 128 features) and its 4 query heads (q, o
 * blocks of 4 x 128 = 512); at tp 16 there are two ranks per kv head,
 * which tpsim refuses as torchtitan does. */
START_TEST(gqa_llama3_8b_at_tp_8_and_16)
{
	struct tps_run_spec spec = {0};
	struct tps_error err = {0};
	enum tps_status st;
	const struct tps_module_spec *a = NULL;

	llama3_8b_attention(8, &spec, &err, &st);
	ck_assert_msg(st == TPS_OK, "%s", err.message);
	for (int i = 0; i < spec.model.n_modules; i++) {
		if (strcmp(spec.model.modules[i].name, "b.attn") == 0) {
			a = &spec.model.modules[i];
		}
	}
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(a->num_heads, 32);
	ck_assert_int_eq(a->num_kv_heads, 8);
	/* q, k, v, o: (out, in) and their tp blocks */
	ck_assert_int_eq(a[1].out_features, 4096);
	ck_assert_int_eq(a[2].out_features, 1024);
	ck_assert_int_eq(a[3].out_features, 1024);
	ck_assert_int_eq(a[4].in_features, 4096);
	ck_assert_int_eq(a[1].shard_block, 512);
	ck_assert_int_eq(a[2].shard_block, 128);
	ck_assert_int_eq(a[3].shard_block, 128);
	ck_assert_int_eq(a[4].shard_block, 512);
	ck_assert_int_eq(a[1].output.block, 512);
	ck_assert_int_eq(a[2].output.block, 128);
	ck_assert_int_eq(a[4].input.block, 512);
	tps_run_spec_free(&spec);

	memset(&spec, 0, sizeof spec);
	llama3_8b_attention(16, &spec, &err, &st);
	ck_assert_int_eq(st, TPS_ERR_INPUT);
	ck_assert_str_eq(err.message,
			 "cfg.json: /plan/b.attn.[qkv]: attention \"b.attn\" "
			 "has 8 kv heads for 16 tp ranks: tp splits whole kv "
			 "heads, so tp must be at most num_kv_heads "
			 "(torchtitan's rule; tpsim does not replicate kv "
			 "heads over tp / num_kv_heads ranks as Megatron and "
			 "vLLM do)");
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(every_module_type_keeps_every_key_through_normalisation)
{
	size_t n = sizeof every_key / sizeof every_key[0];
	ck_assert_uint_eq(n, TPS_MODULE_TYPE_COUNT);
	for (int t = 0; t < TPS_MODULE_TYPE_COUNT; t++) {
		struct tps_run_spec a = {0}, b = {0};
		struct tps_error err = {0};
		cJSON *root = NULL;
		char *given, *kept, *ta, *tb;
		size_t k = 0;

		while (k < n && strcmp(every_key[k].type,
				       tps_module_types[t].name) != 0) {
			k++;
		}
		ck_assert_msg(k < n, "no config for type %s",
			      tps_module_types[t].name);
		ck_assert_int_eq(parse_json(every_key[k].config, &root, &err),
				 TPS_OK);
		given = module_m_text(root);
		cJSON_Delete(root);
		parse_ok(every_key[k].config, &a);
		kept = module_m_text(a.normalized);
		ck_assert_str_eq(kept, given);
		check_keys_of_type(a.normalized, (enum tps_module_type)t);
		ta = normalized_text(&a);
		ck_assert_msg(parse_text(ta, &b, &err) == TPS_OK,
			      "%s: normalised config rejected: %s",
			      every_key[k].type, err.message);
		tb = normalized_text(&b);
		ck_assert_str_eq(tb, ta);
		free(given);
		free(kept);
		free(ta);
		free(tb);
		tps_run_spec_free(&a);
		tps_run_spec_free(&b);
	}
}
END_TEST

START_TEST(free_accepts_null_and_zeroed_spec)
{
	struct tps_run_spec spec = {0};

	tps_run_spec_free(NULL);
	tps_run_spec_free(&spec);
	parse_ok(DESIGN_EXAMPLE, &spec);
	tps_run_spec_free(&spec);
	ck_assert_ptr_null(spec.normalized);
	tps_run_spec_free(&spec); /* twice is harmless */
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Training                                                                 */
/* ------------------------------------------------------------------------ */

START_TEST(training_defaults_land_in_spec)
{
	struct tps_run_spec spec = {0};
	const struct tps_model_spec *m = &spec.model;

	parse_ok(TRAIN "}", &spec);
	ck_assert_int_eq(m->mode, TPS_MODE_TRAINING);
	ck_assert_int_eq(m->steps, 1);
	ck_assert_int_eq(m->loss, TPS_LOSS_MSE);
	ck_assert_int_eq(m->target_init.method, TPS_INIT_ZEROS);
	ck_assert_uint_eq(m->target_init.seed, 0);
	ck_assert_int_eq(m->optimizer.type, TPS_OPTIMIZER_SGD);
	ck_assert(m->optimizer.lr == 0.1); /* docs/design.md's default */
	ck_assert(m->optimizer.momentum == 0);
	ck_assert(m->optimizer.dampening == 0);
	ck_assert(m->optimizer.weight_decay == 0);
	ck_assert(!m->optimizer.nesterov);
	ck_assert_int_eq(m->dp_grad, TPS_DP_GRAD_GLOBAL);
	ck_assert(!m->input_requires_grad);
	ck_assert_int_eq(m->input_source, TPS_INPUT_EVERY_RANK);
	ck_assert_int_eq(m->sampler, TPS_SAMPLER_CHUNK);
	ck_assert(!m->strict_tp_innermost);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(zero_lands_in_spec_with_its_stage_options)
{
	struct tps_run_spec spec = {0};
	const struct tps_model_spec *m = &spec.model;
	parse_ok(DP_BATCH("4") ",'mode':'training'}", &spec);
	ck_assert_int_eq(m->zero.stage, 0);
	tps_run_spec_free(&spec);
	parse_ok(DP_BATCH("4") ",'mode':'training','zero':{'stage':2}}", &spec);
	ck_assert_int_eq(m->zero.stage, 2);
	ck_assert(!m->zero.distributed_optimizer);
	tps_run_spec_free(&spec);
	parse_ok(DP_BATCH("4") ",'mode':'training','zero':{'stage':1,"
			       "'distributed_optimizer':true}}",
		 &spec);
	ck_assert_int_eq(m->zero.stage, 1);
	ck_assert(m->zero.distributed_optimizer);
	tps_run_spec_free(&spec);
	parse_ok(DP_BATCH("4") ",'mode':'training','zero':{'stage':3}}", &spec);
	ck_assert_int_eq(m->zero.stage, 3);
	ck_assert(m->zero.reshard_after_forward); /* fully_shard's default */
	tps_run_spec_free(&spec);
	parse_ok(DP_BATCH("4") ",'mode':'training','zero':{'stage':3,"
			       "'reshard_after_forward':false}}",
		 &spec);
	ck_assert(!m->zero.reshard_after_forward);
	tps_run_spec_free(&spec);
}
END_TEST

static void check_ranges(const struct tps_pipeline_spec *pp, int n,
			 const int (*want)[2])
{
	for (int k = 0; k < n; k++) {
		ck_assert_msg(pp->ranges[k].first == want[k][0] &&
				      pp->ranges[k].last == want[k][1],
			      "virtual stage %d: [%d, %d], want [%d, %d]", k,
			      pp->ranges[k].first, pp->ranges[k].last,
			      want[k][0], want[k][1]);
	}
}

/* The bad table's dropout row, symbolic: a meta tensor draws no mask
 * (nn_dropout.c returns before drawing), so the microbatches are taken,
 * as examples/gpt3_175b_3d needs (GPT-3's dropout, 16 microbatches). */
START_TEST(pipeline_takes_dropout_with_microbatches_when_symbolic)
{
	struct tps_run_spec spec = {0};
	parse_ok("{'tpsim':1,'compute':'symbolic'," MESH_PP_TP ",'model':["
		 FC1 ",{'name':'drop','type':'dropout','p':0.5}," FC2 "],"
		 "'input':{'shape':[4,4]},'mode':'training','pipeline':"
		 "{'dim':'pp','microbatches':2}}",
		 &spec);
	ck_assert(spec.model.pipeline.enabled);
	ck_assert_int_eq(spec.model.pipeline.microbatches, 2);
	ck_assert_int_eq(spec.compute, TPS_COMPUTE_SYMBOLIC);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(pipeline_lands_in_spec_and_normalises_with_its_ranges)
{
	struct tps_run_spec spec = {0};
	const struct tps_pipeline_spec *pp = &spec.model.pipeline;
	char *got;

	parse_ok(TRAIN "}", &spec);
	ck_assert(!pp->enabled);
	got = normalized_text(&spec);
	ck_assert_ptr_null(strstr(got, "pipeline"));
	free(got);
	tps_run_spec_free(&spec);

	/* fc1 40, act 0, fc2 36 over 2 stages: no split holds fewer than
	 * 40 on its heaviest stage; the first stage fills to 40 with fc1
	 * and act, fc2 is left for the second. */
	parse_ok(PP("4", "{'dim':'pp','microbatches':2}"), &spec);
	ck_assert(pp->enabled);
	ck_assert_int_eq(pp->dim, 0);
	ck_assert_int_eq(pp->p, 2);
	ck_assert_int_eq(pp->microbatches, 2);
	ck_assert_int_eq(pp->schedule, TPS_PP_1F1B);
	ck_assert_int_eq(pp->virtual_stages, 1);
	check_ranges(pp, 2, (const int[][2]){{0, 1}, {2, 2}});
	got = normalized_text(&spec);
	ck_assert_ptr_nonnull(
		strstr(got, "\"dp_grad\":\"global\",\"pipeline\":{\"dim\":"
			    "\"pp\",\"microbatches\":2,\"schedule\":\"1f1b\","
			    "\"stages\":[[0,1],[2,2]]},\"links\""));
	free(got);
	tps_run_spec_free(&spec);

	/* 40, 0, 72, 0, 36, 20 over 4: the heaviest stage holds at least
	 * fc2's 72, and 72 is enough: [fc1, a1] 40, [fc2, a2] 72, then fc3
	 * 36 (fc4 would fit under 72, but the last stage needs a module)
	 * and fc4 20. */
	parse_ok(PP_SIX("[4,2]", "{'dim':'pp','microbatches':1}"), &spec);
	check_ranges(pp, 4, (const int[][2]){{0, 1}, {2, 3}, {4, 4}, {5, 5}});
	tps_run_spec_free(&spec);

	/* The same 4 virtual stages as p 2 x v 2: stage 0 runs virtual
	 * stages 0 and 2 (chunks 0 and 1). */
	parse_ok(PP_SIX("[2,2]", "{'dim':'pp','microbatches':2,'schedule':"
				 "'interleaved_1f1b','virtual_stages':2}"),
		 &spec);
	ck_assert_int_eq(pp->schedule, TPS_PP_INTERLEAVED_1F1B);
	ck_assert_int_eq(pp->virtual_stages, 2);
	check_ranges(pp, 4, (const int[][2]){{0, 1}, {2, 3}, {4, 4}, {5, 5}});
	got = normalized_text(&spec);
	ck_assert_ptr_nonnull(
		strstr(got, "\"pipeline\":{\"dim\":\"pp\",\"microbatches\":2,"
			    "\"schedule\":\"interleaved_1f1b\","
			    "\"virtual_stages\":2,\"stages\":[[0,1],[2,3],[4,"
			    "4],[5,5]]}"));
	free(got);
	tps_run_spec_free(&spec);

	/* Explicit ranges are kept as given. */
	parse_ok(PP("4", "{'dim':'pp','microbatches':4,'schedule':'gpipe',"
			 "'stages':[[0,0],[1,2]]}"),
		 &spec);
	ck_assert_int_eq(pp->schedule, TPS_PP_GPIPE);
	check_ranges(pp, 2, (const int[][2]){{0, 0}, {1, 2}});
	tps_run_spec_free(&spec);

	/* Under full recompute a block is one unit: b.0's two residuals
	 * on stage 0, b.1's on stage 1. */
	parse_ok(PP_BLOCKS("'recompute':'full','pipeline':{'dim':'pp',"
			   "'microbatches':2}"),
		 &spec);
	check_ranges(pp, 2, (const int[][2]){{0, 1}, {2, 3}});
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(adamw_gets_pytorchs_defaults)
{
	struct tps_run_spec spec = {0};
	const struct tps_optimizer_spec *o = &spec.model.optimizer;

	parse_ok(TRAIN ",'optimizer':{'type':'adamw'}}", &spec);
	ck_assert_int_eq(o->type, TPS_OPTIMIZER_ADAMW);
	ck_assert(o->lr == 1e-3);
	ck_assert(o->beta1 == 0.9);
	ck_assert(o->beta2 == 0.999);
	ck_assert(o->eps == 1e-8);
	ck_assert(o->weight_decay == 0.01);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(explicit_training_settings_land_in_spec)
{
	struct tps_run_spec spec = {0};
	const struct tps_model_spec *m = &spec.model;

	parse_ok(DP_BATCH("6") ",'mode':'training','steps':3,'loss':'mse',"
			       "'target':{'init':'normal','seed':5,"
			       "'shape':[6,4]},"
			       "'optimizer':{'type':'sgd','lr':0.01,"
			       "'momentum':0.9,'weight_decay':1e-4,"
			       "'nesterov':true},'dp_grad':'ddp',"
			       "'sampler':'distributed'}",
		 &spec);
	ck_assert_int_eq(m->steps, 3);
	ck_assert_int_eq(m->target_init.method, TPS_INIT_NORMAL);
	ck_assert_uint_eq(m->target_init.seed, 5);
	ck_assert(m->optimizer.lr == 0.01);
	ck_assert(m->optimizer.momentum == 0.9);
	ck_assert(m->optimizer.weight_decay == 1e-4);
	ck_assert(m->optimizer.nesterov);
	ck_assert_int_eq(m->dp_grad, TPS_DP_GRAD_DDP);
	ck_assert_int_eq(m->sampler, TPS_SAMPLER_DISTRIBUTED);
	tps_run_spec_free(&spec);

	/* Seed 004: loss sum, the input broadcast from each tp group's root,
	 * and the input's own gradient. */
	parse_ok(HDR MODEL ",'input':{'shape':[2,4],'requires_grad':true,"
			   "'loaded_on':'tp_root'},'mode':'training',"
			   "'loss':'sum','optimizer':{'type':'adamw','lr':0,"
			   "'betas':[0,0.5],'eps':0,'weight_decay':0}}",
		 &spec);
	ck_assert_int_eq(m->loss, TPS_LOSS_SUM);
	ck_assert(m->input_requires_grad);
	ck_assert_int_eq(m->input_source, TPS_INPUT_TP_ROOT);
	ck_assert(m->optimizer.lr == 0);
	ck_assert(m->optimizer.beta1 == 0);
	ck_assert(m->optimizer.beta2 == 0.5);
	ck_assert(m->optimizer.eps == 0);
	ck_assert(m->optimizer.weight_decay == 0);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(loaded_on_is_valid_in_inference)
{
	struct tps_run_spec spec = {0};

	parse_ok(HDR MODEL ",'input':{'shape':[2,4],'loaded_on':'tp_root'}}",
		 &spec);
	ck_assert_int_eq(spec.model.mode, TPS_MODE_INFERENCE);
	ck_assert_int_eq(spec.model.input_source, TPS_INPUT_TP_ROOT);
	tps_run_spec_free(&spec);
}
END_TEST

/* ddp's trouble is an empty rank's mean; a sum over nothing is 0, and
 * the global mode scales the losses instead. */
START_TEST(empty_dp_rank_is_accepted_unless_ddp_takes_its_mean)
{
	struct tps_run_spec spec = {0};

	parse_ok(DP_BATCH("1") ",'mode':'training','dp_grad':'ddp',"
			       "'loss':'sum'}",
		 &spec);
	tps_run_spec_free(&spec);
	parse_ok(DP_BATCH("1") ",'mode':'training'}", &spec);
	tps_run_spec_free(&spec);
	parse_ok(DP_BATCH("3") ",'mode':'training','dp_grad':'ddp'}", &spec);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(distributed_sampler_accepts_a_divisible_batch)
{
	struct tps_run_spec spec = {0};

	parse_ok(DP_BATCH("4") ",'sampler':'distributed'}", &spec);
	ck_assert_int_eq(spec.model.sampler, TPS_SAMPLER_DISTRIBUTED);
	tps_run_spec_free(&spec);
	/* Without data parallelism the dp size is 1. */
	parse_ok(BASE ",'sampler':'distributed'}", &spec);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(dp_dim_array_flattens_dims_into_the_mask)
{
	struct tps_run_spec spec = {0};
	char *got;

	parse_ok(MESH_DP_CP_TP ",'dp_dim':['dp','cp']}", &spec);
	ck_assert_uint_eq(spec.model.dp_mask, 3u);
	ck_assert_int_eq(spec.model.tp_dim, 2);
	got = normalized_text(&spec);
	ck_assert_msg(strstr(got, "\"tp_dim\":\"tp\",\"dp_dim\":[\"dp\","
				  "\"cp\"],") != NULL,
		      "normalized: %s", got);
	free(got);
	tps_run_spec_free(&spec);

	/* Not adjacent, and one dim in an array is written as a string. */
	parse_ok(MESH_DP_CP_TP ",'tp_dim':'cp','dp_dim':['dp','tp']}", &spec);
	ck_assert_uint_eq(spec.model.dp_mask, 5u);
	tps_run_spec_free(&spec);
	parse_ok(MESH_DP_CP_TP ",'dp_dim':['cp']}", &spec);
	ck_assert_uint_eq(spec.model.dp_mask, 2u);
	got = normalized_text(&spec);
	ck_assert_msg(strstr(got, "\"dp_dim\":\"cp\",") != NULL,
		      "normalized: %s", got);
	free(got);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(strict_tp_innermost_accepts_tp_on_the_last_dim)
{
	struct tps_run_spec spec = {0};

	parse_ok(MESH_DP_CP_TP ",'strict_tp_innermost':true}", &spec);
	ck_assert(spec.model.strict_tp_innermost);
	tps_run_spec_free(&spec);
	/* Without it, TP elsewhere is tpsim's warning, not an error. */
	parse_ok(MESH_DP_CP_TP ",'tp_dim':'dp'}", &spec);
	ck_assert_int_eq(spec.model.tp_dim, 0);
	tps_run_spec_free(&spec);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The cost model                                                           */
/* ------------------------------------------------------------------------ */

START_TEST(links_default_by_mesh_position)
{
	struct tps_run_spec spec = {0};
	const struct tps_cost_spec *cost = &spec.cost;

	parse_ok(MESH_DP_CP_TP "}", &spec);
	/* The last dim is intra-node (NVLink), the others inter-node. */
	ck_assert(cost->links[0].gbps == 25 && cost->links[0].latency_us == 10);
	ck_assert(cost->links[1].gbps == 25 && cost->links[1].latency_us == 10);
	ck_assert(cost->links[2].gbps == 150 && cost->links[2].latency_us == 3);
	ck_assert(cost->tflops == 100);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(links_and_device_override_the_defaults_per_key)
{
	struct tps_run_spec spec = {0};
	const struct tps_cost_spec *cost = &spec.cost;
	char *got;

	parse_ok(MESH_DP_CP_TP ",'links':{'tp':{'GBps':450,'latency_us':0},"
			       "'dp':{'latency_us':20}},"
			       "'device':{'TFLOPS':989.5}}",
		 &spec);
	ck_assert(cost->links[0].gbps == 25 && cost->links[0].latency_us == 20);
	ck_assert(cost->links[1].gbps == 25 && cost->links[1].latency_us == 10);
	ck_assert(cost->links[2].gbps == 450 && cost->links[2].latency_us == 0);
	ck_assert(cost->tflops == 989.5);
	got = normalized_text(&spec);
	ck_assert_msg(strstr(got, "\"links\":{"
				  "\"dp\":{\"GBps\":25,\"latency_us\":20},"
				  "\"cp\":{\"GBps\":25,\"latency_us\":10},"
				  "\"tp\":{\"GBps\":450,\"latency_us\":0}},"
				  "\"device\":{\"TFLOPS\":989.5},") != NULL,
		      "normalized: %s", got);
	free(got);
	tps_run_spec_free(&spec);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Variables                                                                */
/* ------------------------------------------------------------------------ */

START_TEST(vars_are_substituted_before_validation)
{
	struct tps_run_spec spec = {0};
	char *got;

	parse_ok(SWEEP, &spec);
	ck_assert_int_eq(spec.model.modules[0].out_features, 32);
	ck_assert_int_eq(spec.model.modules[1].in_features, 32);
	ck_assert_int_eq(spec.model.modules[1].out_features, 4);
	ck_assert_int_eq(spec.model.input_shape.dim[0], 2);
	/* In definition order, for the labels of `tpsim comm`. */
	ck_assert_int_eq(spec.n_vars, 2);
	ck_assert_str_eq(spec.vars[0].name, "hidden");
	ck_assert(spec.vars[0].value == 8);
	ck_assert_str_eq(spec.vars[1].name, "batch");
	ck_assert(spec.vars[1].value == 2);
	got = normalized_text(&spec);
	/* Right after "tpsim", as resolved. */
	ck_assert_msg(strstr(got, "{\"tpsim\":1,\"vars\":{\"hidden\":8,"
				  "\"batch\":2},\"mesh\":") == got,
		      "normalized: %s", got);
	ck_assert_msg(strstr(got, "\"in_features\":32,\"out_features\":4,") !=
			      NULL,
		      "normalized: %s", got);
	free(got);
	tps_run_spec_free(&spec);
}
END_TEST

/* Left to right: "$h / 2 * 4" is ($h / 2) * 4, and literals may be
 * fractional or negative. */
START_TEST(expressions_evaluate_left_to_right)
{
	struct tps_run_spec spec = {0};

	parse_ok(BATCH_EXPR(" $h / 2 * 4 ") ",'vars':{'h':3}}", &spec);
	ck_assert_int_eq(spec.model.input_shape.dim[0], 6);
	tps_run_spec_free(&spec);
	parse_ok(BATCH_EXPR("0.5*$h*-2e0/-1") ",'vars':{'h':4}}", &spec);
	ck_assert_int_eq(spec.model.input_shape.dim[0], 4);
	tps_run_spec_free(&spec);
	parse_ok(BATCH_EXPR("$_x1") ",'vars':{'_x1':7}}", &spec);
	ck_assert_int_eq(spec.model.input_shape.dim[0], 7);
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(overrides_replace_var_values)
{
	static const struct tps_config_var set[] = {
		{"batch", 4}, {"hidden", 16}, {"batch", 6}};
	struct tps_run_spec spec = {0};
	struct tps_error err = {0};
	cJSON *root = NULL;
	char *before, *after, *got;

	ck_assert_int_eq(parse_json(SWEEP, &root, &err), TPS_OK);
	before = cJSON_PrintUnformatted(root);
	ck_assert_msg(tps_config_parse_with(root, "cfg.json", set, 3, &spec,
					    &err) == TPS_OK,
		      "%s", err.message);
	/* The last override of a name wins. */
	ck_assert_int_eq(spec.model.input_shape.dim[0], 6);
	ck_assert_int_eq(spec.model.modules[0].out_features, 64);
	ck_assert(spec.vars[0].value == 16);
	ck_assert(spec.vars[1].value == 6);
	got = normalized_text(&spec);
	ck_assert_msg(strstr(got, "\"vars\":{\"hidden\":16,\"batch\":6},"),
		      "normalized: %s", got);
	/* The caller's tree is not changed. */
	after = cJSON_PrintUnformatted(root);
	ck_assert_str_eq(before, after);
	free(got);
	free(before);
	free(after);
	tps_run_spec_free(&spec);
	cJSON_Delete(root);
}
END_TEST

START_TEST(override_of_an_undefined_var_is_an_error_at_vars)
{
	struct tps_config_var set[] = {{"hidden", 16}, {"x", 1}};
	struct tps_run_spec spec = {0};
	struct tps_error err = {0};
	cJSON *root = NULL;

	ck_assert_int_eq(parse_json(SWEEP, &root, &err), TPS_OK);
	ck_assert_int_eq(
		tps_config_parse_with(root, "cfg.json", set, 2, &spec, &err),
		TPS_ERR_INPUT);
	ck_assert_str_eq(err.message, "cfg.json: /vars: no variable \"x\" to "
				      "set (defined: batch, hidden)");
	/* A value from outside is checked as one in the config. */
	set[1] = (struct tps_config_var){"batch", 1.0 / 0.0};
	ck_assert_int_eq(
		tps_config_parse_with(root, "cfg.json", set, 2, &spec, &err),
		TPS_ERR_INPUT);
	ck_assert_str_eq(err.message, "cfg.json: /vars: the value set for "
				      "\"batch\" is not a finite number");
	/* A name from the command line is echoed escaped. */
	set[1] = (struct tps_config_var){"a\nb", 1};
	ck_assert_int_eq(
		tps_config_parse_with(root, "cfg.json", set, 2, &spec, &err),
		TPS_ERR_INPUT);
	ck_assert_str_eq(err.message, "cfg.json: /vars: no variable \"a\\nb\" "
				      "to set (defined: batch, hidden)");
	cJSON_Delete(root);

	ck_assert_int_eq(parse_json(BASE "}", &root, &err), TPS_OK);
	ck_assert_int_eq(
		tps_config_parse_with(root, "cfg.json", set, 1, &spec, &err),
		TPS_ERR_INPUT);
	ck_assert_str_eq(err.message,
			 "cfg.json: /vars: no variable \"hidden\" to set (the "
			 "config defines no \"vars\")");
	cJSON_Delete(root);
}
END_TEST

START_TEST(more_than_32_vars_is_a_limit)
{
	char text[2048];
	size_t used;
	struct tps_run_spec spec = {0};
	struct tps_error err = {0};

	for (int n = 32; n <= 33; n++) {
		used = (size_t)snprintf(
			text, sizeof text,
			"{\"tpsim\":1,\"mesh\":{\"shape\":[2],\"dim_names\":"
			"[\"tp\"]},\"model\":[{\"name\":\"a\",\"type\":"
			"\"relu\"}],\"input\":{\"shape\":[2,4]},\"vars\":{");
		for (int i = 0; i < n; i++) {
			used += (size_t)snprintf(
				text + used, sizeof text - used, "%s\"v%d\":%d",
				i ? "," : "", i, i);
		}
		snprintf(text + used, sizeof text - used, "}}");
		if (n == 32) {
			ck_assert_int_eq(parse_text(text, &spec, &err), TPS_OK);
			ck_assert_int_eq(spec.n_vars, 32);
			tps_run_spec_free(&spec);
		} else {
			ck_assert_int_eq(parse_text(text, &spec, &err),
					 TPS_ERR_LIMIT);
			ck_assert_str_eq(err.message,
					 "cfg.json: /vars: 33 variables (at "
					 "most 32)");
		}
	}
}
END_TEST

/* ------------------------------------------------------------------------ */
/* tps_config_load                                                          */
/* ------------------------------------------------------------------------ */

static char tmp_dir[4096];

static void setup_tmp(void)
{
	snprintf(tmp_dir, sizeof tmp_dir, "%s", tu_tempdir());
}

static void teardown_tmp(void)
{
	tu_rmtree(tmp_dir);
}

START_TEST(load_reads_file_and_names_it_in_errors)
{
	char path[4200];
	char *text = dq(BASE "}");
	char *bad = dq(BASE ",'uneven':'ragged'}");
	struct tps_run_spec spec = {0};
	struct tps_error err = {0};
	char bom[4096];

	snprintf(path, sizeof path, "%s/good.json", tmp_dir);
	/* A leading UTF-8 BOM is ignored. */
	snprintf(bom, sizeof bom, "\xEF\xBB\xBF%s\n", text);
	tu_write_file(path, bom, strlen(bom));
	ck_assert_msg(tps_config_load(path, &spec, &err) == TPS_OK, "%s",
		      err.message);
	ck_assert_int_eq(spec.model.n_modules, 3);
	tps_run_spec_free(&spec);

	snprintf(path, sizeof path, "%s/bad.json", tmp_dir);
	tu_write_file(path, bad, strlen(bad));
	ck_assert_int_eq(tps_config_load(path, &spec, &err), TPS_ERR_INPUT);
	ck_assert_msg(strstr(err.message, "bad.json: /uneven: unknown uneven "
					  "policy \"ragged\"") != NULL,
		      "message: %s", err.message);

	ck_assert_int_eq(tps_config_load(tmp_dir, &spec, &err), TPS_ERR_IO);
	snprintf(path, sizeof path, "%s/missing.json", tmp_dir);
	ck_assert_int_eq(tps_config_load(path, &spec, &err), TPS_ERR_IO);
	free(text);
	free(bad);
}
END_TEST

/* tps_config_load moves "params" from the tree it read into the
 * normalised config; tps_config_parse copies them and leaves its tree as
 * it was. Both give the same normalised config. */
START_TEST(load_keeps_params_in_normalized_config)
{
	static const char *const configs[] = {
		BASE ",'params':{'fc1.bias':[0,0.5,0,0,1,1,1,-2.25],"
		     "'fc2.bias':[1,2,3,4]}}",
		/* With an expression: the substituted copy gives them up. */
		HDR MODEL ",'input':{'shape':['$b',4]},'vars':{'b':2},"
			  "'params':{'fc1.bias':[0,0.5,0,0,1,1,1,-2.25]}}",
	};
	char path[4200];

	snprintf(path, sizeof path, "%s/params.json", tmp_dir);
	for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
		char *text = dq(configs[i]);
		struct tps_run_spec loaded = {0}, parsed = {0};
		struct tps_error err = {0};
		cJSON *root = NULL, *before;
		char *a, *b;

		tu_write_file(path, text, strlen(text));
		ck_assert_msg(tps_config_load(path, &loaded, &err) == TPS_OK,
			      "%s", err.message);
		ck_assert_int_eq(parse_json(configs[i], &root, &err), TPS_OK);
		before = cJSON_Duplicate(root, true);
		ck_assert_ptr_nonnull(before);
		ck_assert_int_eq(
			tps_config_parse(root, "cfg.json", &parsed, &err),
			TPS_OK);
		ck_assert(cJSON_Compare(root, before, true));
		/* Loaded, they are packed: compared as the trace writes
		 * them. */
		a = written_text(cJSON_GetObjectItemCaseSensitive(
			loaded.normalized, "params"));
		b = written_text(
			cJSON_GetObjectItemCaseSensitive(root, "params"));
		ck_assert_str_eq(a, b);
		free(a);
		free(b);
		a = written_text(loaded.normalized);
		b = written_text(parsed.normalized);
		ck_assert_str_eq(a, b);
		free(a);
		free(b);
		cJSON_Delete(before);
		cJSON_Delete(root);
		tps_run_spec_free(&loaded);
		tps_run_spec_free(&parsed);
		free(text);
	}
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The "divisible" policy, enforced when the model is built                 */
/* ------------------------------------------------------------------------ */

/* One linear under `style` on a 1-D tp mesh of `tp`. */
static void init_one_linear(const char *uneven, int tp, int in, int out,
			    const char *style, enum tps_status want,
			    const char *msg)
{
	char cfg[1024];
	struct tps_run_spec spec = {0};
	struct tps_model model, before;
	struct tps_error err = {0};
	enum tps_status st;

	snprintf(cfg, sizeof cfg,
		 "{'tpsim':1,'mesh':{'shape':[%d],'dim_names':['tp']},"
		 "'model':[{'name':'fc','type':'linear','in_features':%d,"
		 "'out_features':%d}],'input':{'shape':[2,%d]},"
		 "'plan':{'fc':'%s'},'uneven':'%s'}",
		 tp, in, out, in, style, uneven);
	parse_ok(cfg, &spec);
	memset(&model, 0x5a, sizeof model);
	before = model;
	st = tps_model_init(&model, &spec.model, &err);
	ck_assert_msg(st == want, "status %d, want %d: %s", (int)st, (int)want,
		      err.message);
	if (st == TPS_OK) {
		tps_model_free(&model);
	} else {
		ck_assert_msg(strstr(err.message, msg) != NULL,
			      "message \"%s\" lacks \"%s\"", err.message, msg);
		ck_assert(memcmp(&model, &before, sizeof model) == 0);
	}
	tps_run_spec_free(&spec);
}

START_TEST(divisible_refuses_colwise_out_features_not_divisible)
{
	init_one_linear("divisible", 2, 4, 5, "colwise", TPS_ERR_INPUT,
			"/plan/fc: colwise fc: out_features 5 not divisible "
			"by tp=2 (uneven: divisible)");
}
END_TEST

START_TEST(divisible_refuses_rowwise_in_features_not_divisible)
{
	init_one_linear("divisible", 4, 10, 2, "rowwise", TPS_ERR_INPUT,
			"/plan/fc: rowwise fc: in_features 10 not divisible "
			"by tp=4 (uneven: divisible)");
}
END_TEST

START_TEST(divisible_names_the_padded_vocabulary)
{
	/* GPT-2's 50257 ids over tp 8 under uneven: divisible. By hand:
	 * 50257 / 8 = 6282.125, so the least multiple of 8 at or above it
	 * is 6283 x 8 = 50264; Megatron's _vocab_size_with_padding rounds
	 * up to a multiple of make_vocab_size_divisible_by x tp, 128 x 8 =
	 * 1024: 50257 / 1024 = 49.08, so 50 x 1024 = 51200. (50304 = 393 x
	 * 128 is its figure at tp 1, GPT-2's padded vocabulary.) */
	struct tps_run_spec spec = {0};
	struct tps_model model;
	struct tps_error err = {0};
	parse_ok("{'tpsim':1,'mesh':{'shape':[8],'dim_names':['tp']},"
		 "'model':[{'name':'tok','type':'embedding','num_embeddings':"
		 "50257,'embedding_dim':2}],'plan':{'tok':'vocab'},"
		 "'input':{'shape':[1,4],'init':'tokens'},"
		 "'uneven':'divisible'}",
		 &spec);
	ck_assert_int_eq(tps_model_init(&model, &spec.model, &err),
			 TPS_ERR_INPUT);
	ck_assert_str_eq(
		err.message,
		"/plan/tok: vocab tok: num_embeddings 50257 not divisible by "
		"tp=8 (uneven: divisible): a vocabulary padded to 50264 would "
		"divide (Megatron's make_vocab_size_divisible_by 128 pads it "
		"to 51200, a multiple of 128 x tp; set "
		"\"make_vocab_size_divisible_by\" on tok to pad it)");
	tps_run_spec_free(&spec);
}
END_TEST

START_TEST(divisible_accepts_sizes_that_divide)
{
	init_one_linear("divisible", 2, 4, 6, "colwise", TPS_OK, NULL);
	init_one_linear("divisible", 4, 12, 2, "rowwise", TPS_OK, NULL);
	/* Only the sharded dim counts. */
	init_one_linear("divisible", 4, 10, 8, "colwise", TPS_OK, NULL);
	init_one_linear("divisible", 2, 4, 5, "rowwise", TPS_OK, NULL);
	init_one_linear("divisible", 4, 10, 5, "replicate", TPS_OK, NULL);
}
END_TEST

START_TEST(chunk_accepts_uneven_sizes)
{
	init_one_linear("chunk", 2, 4, 5, "colwise", TPS_OK, NULL);
	init_one_linear("chunk", 4, 10, 2, "rowwise", TPS_OK, NULL);
	init_one_linear("chunk", 6, 13, 13, "colwise", TPS_OK, NULL);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("bad_configs");
	tcase_add_loop_test(tc, bad_config_is_rejected_at_its_pointer, 0,
			    N_BAD_CONFIGS);
	tcase_add_loop_test(tc, bad_config_without_err_returns_its_status, 0,
			    N_BAD_CONFIGS);
	tcase_add_test(tc, input_over_2_31_elements_without_err_is_a_limit);
	tcase_add_test(tc, model_with_4097_modules_is_refused_as_a_limit);
	tcase_add_test(tc, module_type_messages_list_every_type_of_the_table);
	tcase_add_test(tc, plan_pattern_of_many_stars_is_matched_quickly);
	suite_add_tcase(s, tc);

	tc = tcase_create("good_configs");
	tcase_add_test(tc, design_example_parses_into_spec);
	tcase_add_test(tc, minimal_config_gets_defaults);
	tcase_add_test(tc, rowwise_bias_defaults_to_after_reduce);
	tcase_add_test(tc, explicit_settings_override_defaults);
	tcase_add_test(
		tc,
		sequence_parallel_save_is_read_and_recorded_when_not_default);
	tcase_add_test(tc, recompute_is_read_and_recorded_when_not_none);
	tcase_add_test(tc, integral_floats_are_accepted_as_sizes);
	tcase_add_test(tc, module_sizes_land_in_the_fields_that_name_them);
	tcase_add_test(tc, sizes_at_the_limits_are_accepted);
	tcase_add_test(tc, free_accepts_null_and_zeroed_spec);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan");
	tcase_add_test(tc, star_patterns_expand_per_path_component);
	tcase_add_test(tc, star_matches_every_module_of_one_component);
	tcase_add_test(tc, object_plan_sets_input_output_and_bias);
	suite_add_tcase(s, tc);

	tc = tcase_create("params");
	tcase_add_test(tc, params_values_land_in_spec);
	tcase_add_test(tc, input_values_land_in_spec_with_their_shape);
	tcase_add_loop_test(
		tc, params_bad_value_in_a_row_is_reported_at_its_pointer, 0,
		(int)(sizeof bad_weight_rows / sizeof bad_weight_rows[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("packed_params");
	tcase_add_loop_test(tc, packed_bad_config_gives_the_unpacked_message, 0,
			    N_BAD_CONFIGS);
	tcase_add_loop_test(
		tc, packed_bad_weight_row_gives_the_unpacked_message, 0,
		(int)(sizeof bad_weight_rows / sizeof bad_weight_rows[0]));
	tcase_add_test(tc,
		       packed_params_give_the_same_spec_and_normalized_config);
	suite_add_tcase(s, tc);

	tc = tcase_create("normalized");
	tcase_add_test(tc, design_example_normalizes_in_documented_order);
	tcase_add_test(tc, repeat_names_each_copy_under_its_index);
	tcase_add_test(tc, normalized_config_parses_to_itself);
	tcase_add_test(
		tc,
		dtype_sets_each_role_and_is_normalised_only_when_not_float32);
	tcase_add_test(tc,
		       every_module_type_keeps_every_key_through_normalisation);
	tcase_add_test(tc, gqa_llama3_8b_at_tp_8_and_16);
	suite_add_tcase(s, tc);

	tc = tcase_create("training");
	tcase_add_test(tc, training_defaults_land_in_spec);
	tcase_add_test(tc, zero_lands_in_spec_with_its_stage_options);
	tcase_add_test(tc,
		       pipeline_lands_in_spec_and_normalises_with_its_ranges);
	tcase_add_test(tc,
		       pipeline_takes_dropout_with_microbatches_when_symbolic);
	tcase_add_test(tc, adamw_gets_pytorchs_defaults);
	tcase_add_test(tc, explicit_training_settings_land_in_spec);
	tcase_add_test(tc, loaded_on_is_valid_in_inference);
	tcase_add_test(tc, empty_dp_rank_is_accepted_unless_ddp_takes_its_mean);
	tcase_add_test(tc, distributed_sampler_accepts_a_divisible_batch);
	tcase_add_test(tc, dp_dim_array_flattens_dims_into_the_mask);
	tcase_add_test(tc, strict_tp_innermost_accepts_tp_on_the_last_dim);
	suite_add_tcase(s, tc);

	tc = tcase_create("cost");
	tcase_add_test(tc, links_default_by_mesh_position);
	tcase_add_test(tc, links_and_device_override_the_defaults_per_key);
	suite_add_tcase(s, tc);

	tc = tcase_create("vars");
	tcase_add_test(tc, vars_are_substituted_before_validation);
	tcase_add_test(tc, expressions_evaluate_left_to_right);
	tcase_add_test(tc, overrides_replace_var_values);
	tcase_add_test(tc, override_of_an_undefined_var_is_an_error_at_vars);
	tcase_add_test(tc, more_than_32_vars_is_a_limit);
	tcase_add_test(tc, var_names_are_ascii_whatever_the_locale);
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
	tcase_add_test(tc, load_reads_file_and_names_it_in_errors);
	tcase_add_test(tc, load_keeps_params_in_normalized_config);
	suite_add_tcase(s, tc);

	tc = tcase_create("divisible");
	tcase_add_test(tc,
		       divisible_refuses_colwise_out_features_not_divisible);
	tcase_add_test(tc, divisible_refuses_rowwise_in_features_not_divisible);
	tcase_add_test(tc, divisible_accepts_sizes_that_divide);
	tcase_add_test(tc, divisible_names_the_padded_vocabulary);
	tcase_add_test(tc, chunk_accepts_uneven_sizes);
	suite_add_tcase(s, tc);

	tc = tcase_create("dump");
	tcase_add_test(tc, bad_configs_are_dumped_for_the_schema_check);
	tcase_add_test(tc, module_types_are_dumped_for_the_schema_check);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(config_suite());
}
