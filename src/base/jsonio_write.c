/*
 * Compact JSON out (jsonio.h): strings escaped as RFC 8259 asks, numbers
 * as the shortest decimal that reads back (numfmt.h). The trace writer,
 * `tpsim comm --json` and `tpsim mesh --json` share it.
 */
#include "jsonio_internal.h"

#include <stdbool.h>

#include "numfmt.h"

void tps_json_write_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			if (*p < 0x20) {
				fprintf(out, "\\u%04x", *p);
			} else {
				fputc(*p, out);
			}
		}
	}
	fputc('"', out);
}

void tps_json_write_value(FILE *out, const cJSON *v)
{
	char buf[TPS_NUMFMT_MAX];
	const cJSON *c;
	bool first = true;

	if (tps_json_is_packed(v)) {
		const double *d = tps_json_packed_values(v);

		fputc('[', out);
		for (int i = 0; i < v->valueint; i++) {
			if (i) {
				fputc(',', out);
			}
			tps_format_double(d[i], buf);
			fputs(buf, out);
		}
		fputc(']', out);
	} else if (cJSON_IsString(v)) {
		tps_json_write_string(out, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		tps_format_double(v->valuedouble, buf);
		fputs(buf, out);
	} else if (cJSON_IsBool(v)) {
		fputs(cJSON_IsTrue(v) ? "true" : "false", out);
	} else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		bool obj = cJSON_IsObject(v);
		fputc(obj ? '{' : '[', out);
		cJSON_ArrayForEach(c, v)
		{
			if (!first) {
				fputc(',', out);
			}
			first = false;
			if (obj) {
				tps_json_write_string(out, c->string);
				fputc(':', out);
			}
			tps_json_write_value(out, c);
		}
		fputc(obj ? '}' : ']', out);
	} else {
		/* Strict parsing never lets null in; write it rather than
		 * emit invalid JSON. */
		fputs("null", out);
	}
}
