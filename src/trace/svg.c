/* What tpsim's SVG writers share (svg.h). */
#include "svg.h"

void tps_svg_put_xml(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	}
}

int64_t tps_svg_text_width(const char *s, int char_w)
{
	int64_t n = 0;
	for (; *s; s++) {
		n += ((unsigned char)*s & 0xc0) != 0x80; /* UTF-8 starts */
	}
	return n * char_w;
}

void tps_svg_text(FILE *out, int64_t x, int64_t y, const char *attrs,
		  const char *text)
{
	fprintf(out, "<text x=\"%lld\" y=\"%lld\"%s>", (long long)x,
		(long long)y, attrs);
	tps_svg_put_xml(out, text);
	fputs("</text>\n", out);
}
