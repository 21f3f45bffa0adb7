/*
 * The replay driver: the harness without libFuzzer. Each argument is a
 * file or a directory (its files, in name order); every file is read and
 * passed to LLVMFuzzerTestOneInput once, as libFuzzer replays a crash.
 * The normal suite runs it on tests/fuzz/regression/<target>/.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t len = 0, cap = 0, n;
	if (!f) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return 1;
	}
	do {
		if (len == cap) {
			cap = cap ? 2 * cap : 4096;
			data = realloc(data, cap);
			if (!data) {
				fprintf(stderr, "replay: out of memory\n");
				exit(2);
			}
		}
		n = fread(data + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	/* An exact-size copy, so ASan sees a read past the input's end. */
	{
		uint8_t *exact = malloc(len ? len : 1);
		if (!exact) {
			fprintf(stderr, "replay: out of memory\n");
			exit(2);
		}
		memcpy(exact, data, len);
		free(data);
		fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;
	int bad = 0;
	if (!d) {
		fprintf(stderr, "replay: %s: cannot open\n", dir);
		return 1;
	}
	while ((e = readdir(d))) {
		char **grown;
		size_t size;
		if (e->d_name[0] == '.') {
			continue;
		}
		size = strlen(dir) + strlen(e->d_name) + 2;
		grown = realloc(names, (n + 1) * sizeof *names);
		if (!grown || !(grown[n] = malloc(size))) {
			fprintf(stderr, "replay: out of memory\n");
			exit(2);
		}
		names = grown;
		snprintf(names[n], size, "%s/%s", dir, e->d_name);
		n++;
	}
	closedir(d);
	if (n > 0) { /* qsort takes no NULL, even for no items */
		qsort(names, n, sizeof *names, by_name);
	}
	for (size_t i = 0; i < n; i++) {
		bad |= replay_file(names[i]);
		(*count)++;
		free(names[i]);
	}
	free(names);
	return bad;
}

int main(int argc, char **argv)
{
	int bad = 0, count = 0;
	/* libFuzzer's own convention: call it when the harness has one. */
	if (LLVMFuzzerInitialize) {
		LLVMFuzzerInitialize(&argc, &argv);
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			bad |= replay_dir(argv[i], &count);
		} else {
			bad |= replay_file(argv[i]);
			count++;
		}
	}
	printf("replay: %d inputs, no crash\n", count);
	return bad;
}
