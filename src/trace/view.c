/* tpsim view's page (view.h). */
#include "view.h"

#include <string.h>

#include "viewer_assets.h"

void tps_view_write(FILE *out, const char *trace, size_t len)
{
	size_t from = 0;

	if (len >= 3 && memcmp(trace, "\xef\xbb\xbf", 3) == 0) {
		trace += 3;
		len -= 3;
	}
	fwrite(tps_viewer_head, 1, tps_viewer_head_len, out);
	for (size_t i = 0; i < len; i++) {
		if (trace[i] == '<') {
			fwrite(trace + from, 1, i - from, out);
			fputs("\\u003c", out);
			from = i + 1;
		}
	}
	fwrite(trace + from, 1, len - from, out);
	fwrite(tps_viewer_tail, 1, tps_viewer_tail_len, out);
}
