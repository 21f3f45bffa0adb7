/*
 * Packed number arrays (jsonio.h): an array node without children whose
 * valuestring holds valueint doubles.
 */
#include "jsonio_internal.h"

#include <assert.h>
#include <limits.h>
#include <string.h>

bool tps_json_is_packed(const cJSON *v)
{
	/* cJSON never sets an array's valuestring. */
	return cJSON_IsArray(v) && v->valuestring != NULL;
}

bool tps_json_is_counted(const cJSON *v)
{
	return tps_json_is_packed(v) && v->valuedouble == TPS_JSON_COUNTED;
}

int64_t tps_json_counted_first_bad(const cJSON *v, double *value)
{
	const struct tps_json_counted *c;
	assert(tps_json_is_counted(v));
	c = (const struct tps_json_counted *)(const void *)v->valuestring;
	*value = c->bad_value;
	return c->first_bad;
}

double tps_json_counted_first(const cJSON *v)
{
	assert(tps_json_is_counted(v));
	return ((const struct tps_json_counted *)(const void *)v->valuestring)
		->first_value;
}

const double *tps_json_packed_values(const cJSON *v)
{
	assert(tps_json_is_packed(v) && !tps_json_is_counted(v));
	return (const double *)(const void *)v->valuestring;
}

int tps_json_array_size(const cJSON *v)
{
	return tps_json_is_packed(v) ? v->valueint : cJSON_GetArraySize(v);
}

void tps_json_packed_item(const cJSON *array, int i, cJSON *item)
{
	double d;

	assert(i >= 0 && i < tps_json_array_size(array));
	d = tps_json_packed_values(array)[i];
	memset(item, 0, sizeof *item);
	item->type = cJSON_Number;
	item->valuedouble = d;
	/* As cJSON_CreateNumber sets it. */
	if (d >= INT_MAX) {
		item->valueint = INT_MAX;
	} else if (d <= (double)INT_MIN) {
		item->valueint = INT_MIN;
	} else {
		item->valueint = (int)d;
	}
}

/* A packed copy of the packed array v, with v's key. */
static cJSON *duplicate_packed(const cJSON *v)
{
	size_t n = (size_t)v->valueint;
	size_t bytes = tps_json_is_counted(v) ? sizeof(struct tps_json_counted)
					      : n * sizeof(double);
	cJSON *copy = cJSON_CreateArray();
	char *vals = copy ? cJSON_malloc(bytes) : NULL;

	if (!vals) {
		cJSON_Delete(copy);
		return NULL;
	}
	memcpy(vals, v->valuestring, bytes);
	copy->valuestring = vals;
	copy->valueint = v->valueint;
	copy->valuedouble = v->valuedouble;
	if (v->string) {
		size_t len = strlen(v->string) + 1;

		copy->string = cJSON_malloc(len);
		if (!copy->string) {
			cJSON_Delete(copy);
			return NULL;
		}
		memcpy(copy->string, v->string, len);
	}
	return copy;
}

cJSON *tps_json_duplicate(const cJSON *v)
{
	const cJSON *child;
	cJSON *copy;

	if (tps_json_is_packed(v)) {
		return duplicate_packed(v);
	}
	/* Not recursing: the node itself, with its key; an array's or
	 * object's valuestring is NULL, so nothing is read as a string
	 * that is not one. */
	copy = cJSON_Duplicate(v, false);
	if (!copy || !(cJSON_IsArray(v) || cJSON_IsObject(v))) {
		return copy;
	}
	cJSON_ArrayForEach(child, v)
	{
		cJSON *c = tps_json_duplicate(child);

		/* The copy keeps its key: cJSON_Duplicate links an object's
		 * children so too. */
		if (!c || !cJSON_AddItemToArray(copy, c)) {
			cJSON_Delete(c);
			cJSON_Delete(copy);
			return NULL;
		}
	}
	return copy;
}
