/* tu_cli (testutil.h): the tpsim CLI in-process, for the suites that link
 * the layers' libraries (not the public API's test, which links only
 * libtpsim). */
#include "testutil.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

struct tu_result tu_cli(int argc, ...)
{
	struct tu_result r = {0};
	char *argv[16] = {"tpsim"};
	FILE *out, *err;
	va_list ap;
	ck_assert_int_lt(argc, 16);
	va_start(ap, argc);
	for (int i = 1; i < argc; i++) {
		argv[i] = va_arg(ap, char *);
	}
	va_end(ap);
	out = open_memstream(&r.out, &r.out_len);
	err = open_memstream(&r.err, &r.err_len);
	r.rc = tps_cli_main(argc, argv, out, err);
	fclose(out);
	fclose(err);
	return r;
}

void tu_result_free(struct tu_result *r)
{
	free(r->out);
	free(r->err);
}
