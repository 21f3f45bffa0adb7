/*
 * Out-of-memory injection for the reliability tests (meson option
 * fault_injection; never in a normal build). The executable is linked with
 * --wrap for malloc, calloc, realloc, aligned_alloc and posix_memalign, so
 * every allocation tpsim's own code makes (cJSON's too: its hooks are
 * tpsim's, memory.h) comes here first:
 *
 *   TPSIM_FAIL_ALLOC=N     the Nth allocation (1-based) fails, once, as a
 *                          real allocator's would (NULL, errno ENOMEM)
 *   TPSIM_COUNT_ALLOC=FILE at exit, the number of allocations made is
 *                          written to FILE (so a test knows every N)
 *   TPSIM_FAIL_ALLOC_TRACE=1  the failing allocation's call stack on
 *                          stderr (to find the site a test reports)
 *
 * Counting is only deterministic with one thread: the tests run tpsim
 * with --threads 1. libc's own allocations (stdio buffers, thread stacks)
 * are not counted: they are not tpsim's to handle.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
int __real_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);

static atomic_long allocations;
static long fail_at = -1; /* read once, before main */
static int trace_failure;
static const char *count_file;

/* Whether this allocation is the one to fail. */
static int failing(void)
{
	int fail = atomic_fetch_add(&allocations, 1) + 1 == fail_at;
	if (fail && trace_failure) {
		void *frames[32];
		backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
	}
	return fail;
}

void *__wrap_malloc(size_t size)
{
	if (failing()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (failing()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	if (failing()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	if (failing()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_aligned_alloc(align, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
	if (failing()) {
		return ENOMEM;
	}
	return __real_posix_memalign(p, align, size);
}

/* Writes the count without allocating (no stdio). */
static void write_count(void)
{
	char buf[32];
	long n = atomic_load(&allocations);
	int len = snprintf(buf, sizeof buf, "%ld\n", n);
	int fd = open(count_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, (size_t)len) != len) {
			/* nothing to do: the test sees a short file */
		}
		close(fd);
	}
}

__attribute__((constructor)) static void read_settings(void)
{
	const char *n = getenv("TPSIM_FAIL_ALLOC");
	fail_at = n ? strtol(n, NULL, 10) : -1;
	count_file = getenv("TPSIM_COUNT_ALLOC");
	trace_failure = getenv("TPSIM_FAIL_ALLOC_TRACE") != NULL;
	if (count_file) {
		atexit(write_count);
	}
}
