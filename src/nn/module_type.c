/* The module types' descriptors (module_type.h): one row per type. */
#include "module_type.h"

#include <string.h>

/* Replicated, or only redistributing its input or output. */
#define PREPARE_STYLES                                                         \
	(TPS_STYLE_BIT(TPS_STYLE_REPLICATE) |                                  \
	 TPS_STYLE_BIT(TPS_STYLE_PREPARE_INPUT) |                              \
	 TPS_STYLE_BIT(TPS_STYLE_PREPARE_OUTPUT))

const struct tps_module_type_desc tps_module_types[] = {
	/* nn.Linear(in_features, out_features, bias=True) */
	[TPS_MODULE_LINEAR] =
		{
			.name = "linear",
			.keys = {TPS_SIZE_KEY("in_features", in_features, 1,
					      TPS_MAX_ELEMENTS),
				 TPS_SIZE_KEY("out_features", out_features, 1,
					      TPS_MAX_ELEMENTS),
				 TPS_BOOL_KEY("bias", bias, 1),
				 TPS_MODULE_NAME_KEY("tie", tie),
				 TPS_SIZE_KEY_OPTIONAL(
					 "make_vocab_size_divisible_by",
					 vocab_divisor, 1, (int64_t)1 << 24)},
			.width = TPS_WIDTH_CHANGES,
			.in_key = "in_features",
			.out_key = "out_features",
			.styles = TPS_STYLE_BIT(TPS_STYLE_COLWISE) |
				  TPS_STYLE_BIT(TPS_STYLE_ROWWISE) |
				  TPS_STYLE_BIT(TPS_STYLE_REPLICATE),
			.why_not = "a linear is split \"colwise\" or "
				   "\"rowwise\", or "
				   "replicated",
			.ops = &tps_linear_ops,
		},
	[TPS_MODULE_RELU] =
		{
			.name = "relu",
			.width = TPS_WIDTH_KEEPS,
			.styles = PREPARE_STYLES,
			.why_not = "it has no weight to shard",
			.ops = &tps_relu_ops,
		},
	[TPS_MODULE_GELU] =
		{
			.name = "gelu",
			.width = TPS_WIDTH_KEEPS,
			.styles = PREPARE_STYLES,
			.why_not = "it has no weight to shard",
			.ops = &tps_gelu_ops,
		},
	/* nn.LayerNorm(dim, eps=1e-5, bias=True) */
	[TPS_MODULE_LAYERNORM] =
		{
			.name = "layernorm",
			.keys = {TPS_SIZE_KEY("dim", in_features, 1,
					      TPS_MAX_ELEMENTS),
				 TPS_POSITIVE_KEY("eps", eps, 1e-5),
				 TPS_BOOL_KEY("bias", bias, 1)},
			.width = TPS_WIDTH_NEEDS,
			.in_key = "dim",
			.out_key = "dim",
			.styles = TPS_STYLE_BIT(TPS_STYLE_REPLICATE) |
				  TPS_STYLE_BIT(TPS_STYLE_SEQUENCE),
			.why_not = "its weight is replicated: it runs "
				   "\"sequence\" or "
				   "\"replicate\"",
			.ops = &tps_layernorm_ops,
		},
	/* x + body(x) */
	[TPS_MODULE_RESIDUAL] =
		{
			.name = "residual",
			.keys = {TPS_MODULES_KEY("body")},
			.width = TPS_WIDTH_KEEPS,
			.styles = PREPARE_STYLES,
			.why_not = "it adds its body's output to its input; "
				   "plan the "
				   "body's modules",
			.ops = &tps_residual_ops,
		},
	/* nn.Embedding(num_embeddings, embedding_dim): ids below 2^24, which
	 * float32 holds exactly. */
	[TPS_MODULE_EMBEDDING] =
		{
			.name = "embedding",
			.keys = {TPS_SIZE_KEY("num_embeddings", num_embeddings, 1,
					      (int64_t)1 << 24),
				 TPS_SIZE_KEY("embedding_dim", out_features, 1,
					      TPS_MAX_ELEMENTS),
				 TPS_SIZE_KEY_OPTIONAL(
					 "make_vocab_size_divisible_by",
					 vocab_divisor, 1, (int64_t)1 << 24)},
			.width = TPS_WIDTH_MAKES,
			.out_key = "embedding_dim",
			.styles = TPS_STYLE_BIT(TPS_STYLE_REPLICATE) |
				  TPS_STYLE_BIT(TPS_STYLE_VOCAB),
			.why_not = "an embedding splits its vocabulary, "
				   "\"vocab\", or "
				   "is replicated",
			.ops = &tps_embedding_ops,
		},
	/* Multi-head self-attention, nn.MultiheadAttention(embed_dim,
	 * num_heads, bias=True) with its four projections as linears;
	 * grouped-query attention with num_kv_heads < num_heads (k and v
	 * then give num_kv_heads * head_dim features); rotary position
	 * embeddings on q and k with rope_theta (LLaMA's 10000), in
	 * rope_style rotate_half (default) or interleaved. */
	[TPS_MODULE_ATTENTION] =
		{
			.name = "attention",
			.keys = {TPS_SIZE_KEY("embed_dim", in_features, 1,
					      (int64_t)1 << 20),
				 TPS_SIZE_KEY("num_heads", num_heads, 1,
					      (int64_t)1 << 20),
				 TPS_SIZE_KEY_OR("num_kv_heads", num_kv_heads,
						 1, (int64_t)1 << 20,
						 "num_heads"),
				 TPS_BOOL_KEY("causal", causal, 0),
				 TPS_BOOL_KEY("bias", bias, 1),
				 TPS_POSITIVE_OR_OFF_KEY("rope_theta",
							 rope_theta),
				 TPS_CHOICE_KEY_WITH("rope_style", rope_style,
						     tps_rope_style_names,
						     TPS_ROPE_STYLE_COUNT,
						     TPS_ROPE_ROTATE_HALF,
						     "rope_theta")},
			.width = TPS_WIDTH_NEEDS,
			.in_key = "embed_dim",
			.out_key = "embed_dim",
			.styles = PREPARE_STYLES,
			.why_not =
				"its heads are split by planning its linears: "
				"\"<name>.q\", \".k\", \".v\" colwise and "
				"\".o\" "
				"rowwise",
			.parts = {"q", "k", "v", "o"},
			.part_type = TPS_MODULE_LINEAR,
			.ops = &tps_attention_ops,
		},
	/* nn.RMSNorm(dim, eps) as LLaMA's (eps 1e-6 as Hugging Face's
	 * LlamaRMSNorm): a weight, no bias. */
	[TPS_MODULE_RMSNORM] =
		{
			.name = "rmsnorm",
			.keys = {TPS_SIZE_KEY("dim", in_features, 1,
					      TPS_MAX_ELEMENTS),
				 TPS_POSITIVE_KEY("eps", eps, 1e-6)},
			.width = TPS_WIDTH_NEEDS,
			.in_key = "dim",
			.out_key = "dim",
			.styles = TPS_STYLE_BIT(TPS_STYLE_REPLICATE) |
				  TPS_STYLE_BIT(TPS_STYLE_SEQUENCE),
			.why_not = "its weight is replicated: it runs "
				   "\"sequence\" or "
				   "\"replicate\"",
			.ops = &tps_rmsnorm_ops,
		},
	/* nn.SiLU: x sigmoid(x), LLaMA's activation (in swiglu_mlp) */
	[TPS_MODULE_SILU] =
		{
			.name = "silu",
			.width = TPS_WIDTH_KEEPS,
			.styles = PREPARE_STYLES,
			.why_not = "it has no weight to shard",
			.ops = &tps_silu_ops,
		},
	/* gate(x) * up(x): two bodies on one input, multiplied element by
	 * element (tps_dtensor_mul); swiglu_mlp's silu(w1 x) * w3 x. */
	[TPS_MODULE_GATED] =
		{
			.name = "gated",
			.keys = {TPS_MODULES_KEY("gate"),
				 TPS_MODULES_KEY("up")},
			.width = TPS_WIDTH_KEEPS,
			.styles = PREPARE_STYLES,
			.why_not = "it multiplies its bodies' outputs; plan "
				   "the bodies' modules",
			.ops = &tps_gated_ops,
		},
	/* nn.Dropout(p=0.5): inverted dropout in training, the identity in
	 * inference */
	[TPS_MODULE_DROPOUT] =
		{
			.name = "dropout",
			.keys = {TPS_UNIT_KEY("p", p, 0.5)},
			.width = TPS_WIDTH_KEEPS,
			.styles = PREPARE_STYLES,
			.why_not = "it has no weight to shard",
			.ops = &tps_dropout_ops,
		},
};
_Static_assert(sizeof tps_module_types / sizeof tps_module_types[0] ==
		       TPS_MODULE_TYPE_COUNT,
	       "one descriptor per enum tps_module_type");

const struct tps_module_ops *tps_module_ops_of(enum tps_module_type type)
{
	return tps_module_types[type].ops;
}

int tps_module_type_named(const char *name)
{
	for (int t = 0; t < TPS_MODULE_TYPE_COUNT; t++) {
		if (strcmp(tps_module_types[t].name, name) == 0) {
			return t;
		}
	}
	return -1;
}

const struct tps_module_key *tps_module_key_named(enum tps_module_type t,
						  const char *name)
{
	const struct tps_module_key *keys = tps_module_types[t].keys;
	for (int k = 0; k < TPS_MODULE_MAX_KEYS && keys[k].name; k++) {
		if (strcmp(keys[k].name, name) == 0) {
			return &keys[k];
		}
	}
	return NULL;
}

int tps_module_part_count(enum tps_module_type t)
{
	int n = 0;
	while (n < TPS_MODULE_MAX_PARTS && tps_module_types[t].parts[n]) {
		n++;
	}
	return n;
}
