/*
 * What the verbs' outputs share: the signal handling that removes a
 * temporary output (tps_cli_install_signals), and tps_cli_publish, the
 * outputs made whole in memory first (`tpsim picture`, `diff`, `plot`).
 * `timeline` and `view` write into the output's temporary file as they
 * go. All of them, `tpsim run`'s trace too, go through the one writer of
 * outfile.h.
 */
#include "cli_internal.h"
#include "cli.h"
#include "jsonio.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* The temporary output being written, if any: the library publishes its
 * name here (outfile.h) and the handler below removes it. */
static struct tps_outfile_pending pending;

struct tps_outfile_pending *tps_cli_pending(void)
{
	return &pending;
}

/*
 * SIGTERM, SIGINT, SIGHUP: remove the temporary output, then die of the
 * signal as if there were no handler (SA_RESETHAND restored the default
 * action on entry; the raised signal is delivered when the handler
 * returns). unlink and raise are async-signal-safe; errno is kept for the
 * code the signal interrupted, in case the process survives (it does not,
 * with the default actions of these three).
 */
static void remove_pending_and_die(int sig)
{
	int saved = errno;
	if (pending.armed) {
		atomic_signal_fence(memory_order_seq_cst);
		unlink(pending.path);
	}
	raise(sig);
	errno = saved;
}

/*
 * SIGBUS: a file tps_json_load mapped (jsonio.h) was cut short by another
 * process while it was parsed. One line and exit 2, as for any input that
 * cannot be read, the temporary output removed; write, unlink and _exit
 * are async-signal-safe.
 */
static void input_cut_short(int sig)
{
	static const char msg[] =
		"tpsim: an input file was cut short while it was read "
		"(SIGBUS)\n";
	(void)sig;
	if (pending.armed) {
		atomic_signal_fence(memory_order_seq_cst);
		unlink(pending.path);
	}
	(void)!write(STDERR_FILENO, msg, sizeof msg - 1);
	_exit(TPS_EXIT_TROUBLE);
}

void tps_cli_install_signals(void)
{
	static const int fatal[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction sa, bus;

	signal(SIGXFSZ, SIG_IGN);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = remove_pending_and_die;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
		sigaddset(&sa.sa_mask, fatal[i]);
	}
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
		struct sigaction old;
		/* A signal the caller ignores (nohup, a background job of a
		 * shell without job control) stays ignored. */
		if (sigaction(fatal[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN) {
			continue;
		}
		sigaction(fatal[i], &sa, NULL);
	}
	memset(&bus, 0, sizeof bus);
	bus.sa_handler = input_cut_short;
	sigemptyset(&bus.sa_mask);
	if (sigaction(SIGBUS, &bus, NULL) == 0) {
		/* Only with the handler in place (cli.h). */
		tps_json_load_maps_files(true);
	}
}

enum tps_status tps_cli_publish(const char *path, const char *data, size_t len,
				const char *noun, FILE *stdout_stream,
				const char *input, struct tps_error *err)
{
	return tps_outfile_write_all(path, stdout_stream, noun, data, len,
				     &input, 1, &pending, err);
}

enum tps_status tps_cli_commit_stream(struct tps_outfile *o, int write_errno,
				      struct tps_error *err)
{
	if (ferror(o->f)) {
		/* The write's own errno (ENOSPC, EFBIG): a flush at commit
		 * would find nothing left to write, and no cause. */
		char name[256];
		int e = write_errno ? write_errno : EIO;
		tps_outfile_name(o, name, sizeof name);
		tps_outfile_discard(o);
		return tps_error_set(err, TPS_ERR_IO, "%s: %s", name,
				     strerror(e));
	}
	return tps_outfile_commit(o, err);
}
