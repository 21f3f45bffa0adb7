#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jsonio.h"

const char *tps_outfile_name(const struct tps_outfile *o, char *buf,
			     size_t size)
{
	if (!o->path) {
		snprintf(buf, size, "stdout");
		return buf;
	}
	return tps_json_escape_for_message(o->path, buf, size);
}

static void disarm(struct tps_outfile *o)
{
	if (o->pending) {
		o->pending->armed = 0;
	}
}

/* TPS_ERR_USAGE when the existing regular file st (at path) is one of the
 * inputs: the same device and inode, whatever the path says. */
static enum tps_status refuse_an_input(const struct stat *st, const char *path,
				       const char *noun,
				       const char *const *inputs, int n_inputs,
				       struct tps_error *err)
{
	for (int i = 0; i < n_inputs; i++) {
		struct stat in;
		char out_esc[256], in_esc[256];
		bool stdin_input = strcmp(inputs[i], "-") == 0;
		if ((stdin_input ? fstat(STDIN_FILENO, &in)
				 : stat(inputs[i], &in)) != 0 ||
		    !S_ISREG(in.st_mode) || in.st_dev != st->st_dev ||
		    in.st_ino != st->st_ino) {
			continue;
		}
		return tps_error_set(
			err, TPS_ERR_USAGE,
			"%s: -o names the input %s (the same file): writing "
			"the %s would replace it; choose another output file",
			tps_json_escape_for_message(path, out_esc,
						    sizeof out_esc),
			stdin_input ? "on stdin"
				    : tps_json_escape_for_message(
					      inputs[i], in_esc, sizeof in_esc),
			noun);
	}
	return TPS_OK;
}

/* Six characters of [A-Za-z0-9] at the end of tmp, as mkstemp's XXXXXX. */
static void random_suffix(char *tmp, size_t len, unsigned attempt)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char bytes[6];
	if (getrandom(bytes, sizeof bytes, GRND_NONBLOCK) !=
	    (ssize_t)sizeof bytes) {
		/* No entropy yet (early boot): the clock, the process and
		 * the attempt, mixed (splitmix64's finaliser). */
		struct timespec ts;
		uint64_t x;
		clock_gettime(CLOCK_REALTIME, &ts);
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		    ((uint64_t)getpid() << 16) ^ attempt;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
		x ^= x >> 31;
		for (size_t i = 0; i < sizeof bytes; i++) {
			bytes[i] = (unsigned char)(x >> (8 * i));
		}
	}
	for (size_t i = 0; i < sizeof bytes; i++) {
		tmp[len - 6 + i] = alphabet[bytes[i] % (sizeof alphabet - 1)];
	}
}

/* Creates o->tmp_path beside path with mode 0666 less the umask (the
 * kernel applies it), published in o->pending before it exists. */
static enum tps_status create_temporary(struct tps_outfile *o, const char *esc,
					struct tps_error *err)
{
	size_t len;
	int fd = -1, e = 0;
	if ((size_t)snprintf(o->tmp_path, sizeof o->tmp_path, "%s.tmp.XXXXXX",
			     o->path) >= sizeof o->tmp_path) {
		o->tmp_path[0] = '\0';
		return tps_error_set(err, TPS_ERR_IO, "%s: path too long", esc);
	}
	len = strlen(o->tmp_path);
	for (unsigned attempt = 0; attempt < 100 && fd < 0; attempt++) {
		random_suffix(o->tmp_path, len, attempt);
		if (o->pending) {
			memcpy(o->pending->path, o->tmp_path, len + 1);
			/* The name is whole before the handler may read it. */
			atomic_signal_fence(memory_order_seq_cst);
			o->pending->armed = 1;
		}
		fd = open(o->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			  0666);
		e = errno;
		if (fd < 0) {
			disarm(o);
		}
		if (fd < 0 && e != EEXIST) {
			break;
		}
	}
	if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
		if (fd >= 0) {
			e = errno;
			close(fd);
			unlink(o->tmp_path);
			disarm(o);
		}
		o->tmp_path[0] = '\0';
		return tps_error_set(err, TPS_ERR_IO, "%s: cannot write: %s",
				     esc, strerror(e));
	}
	return TPS_OK;
}

enum tps_status tps_outfile_open(struct tps_outfile *o, const char *path,
				 FILE *stream, const char *noun,
				 const char *const *inputs, int n_inputs,
				 struct tps_outfile_pending *pending,
				 struct tps_error *err)
{
	struct tps_outfile n = {0};
	struct stat st;
	char esc[256];
	enum tps_status status;

	n.path = path;
	n.stream = stream;
	n.pending = pending;
	snprintf(n.noun, sizeof n.noun, "%s", noun);
	if (path && stat(path, &st) == 0) {
		tps_json_escape_for_message(path, esc, sizeof esc);
		if (S_ISDIR(st.st_mode)) {
			return tps_error_set(err, TPS_ERR_IO,
					     "%s: is a directory (-o names the "
					     "%s file)",
					     esc, noun);
		}
		if (S_ISREG(st.st_mode)) {
			status = refuse_an_input(&st, path, noun, inputs,
						 n_inputs, err);
			if (status != TPS_OK) {
				return status;
			}
		} else {
			n.anonymous = true; /* a device or a FIFO */
		}
	}
	if (!path || n.anonymous) {
		n.anonymous = true;
		n.f = tmpfile();
		if (!n.f) {
			return tps_error_set(err, TPS_ERR_IO,
					     "cannot create a temporary file "
					     "for the %s: %s",
					     noun, strerror(errno));
		}
	} else {
		tps_json_escape_for_message(path, esc, sizeof esc);
		status = create_temporary(&n, esc, err);
		if (status != TPS_OK) {
			return status;
		}
	}
	*o = n;
	return TPS_OK;
}

/* The error of a stream that failed: fflush's errno, or "write error" when
 * an earlier write failed and this flush had nothing left to fail on. */
static int flush_error(FILE *f)
{
	errno = 0;
	if (fflush(f) != 0 || ferror(f)) {
		return errno ? errno : EIO;
	}
	return 0;
}

/* Copies the finished anonymous temporary to out. 0 or an errno. */
static int copy_out(FILE *tmp, FILE *out)
{
	char buf[65536];
	size_t n;
	rewind(tmp);
	while ((n = fread(buf, 1, sizeof buf, tmp)) > 0) {
		if (fwrite(buf, 1, n, out) != n) {
			return errno ? errno : EIO;
		}
	}
	if (ferror(tmp)) {
		return errno ? errno : EIO;
	}
	return flush_error(out);
}

enum tps_status tps_outfile_commit(struct tps_outfile *o, struct tps_error *err)
{
	char name[256];
	int e = flush_error(o->f);
	FILE *out = NULL;

	tps_outfile_name(o, name, sizeof name);
	if (o->anonymous) {
		if (!e) {
			out = o->path ? fopen(o->path, "w") : o->stream;
			e = out ? copy_out(o->f, out) : errno;
		}
		if (out && out != o->stream && fclose(out) != 0 && !e) {
			e = errno;
		}
		fclose(o->f);
		o->f = NULL;
	} else {
		if (fclose(o->f) != 0 && !e) {
			e = errno;
		}
		o->f = NULL;
		if (!e && rename(o->tmp_path, o->path) != 0) {
			e = errno;
		}
		if (e) {
			unlink(o->tmp_path);
		}
		disarm(o);
		o->tmp_path[0] = '\0';
	}
	if (e) {
		return tps_error_set(err, TPS_ERR_IO, "%s: %s", name,
				     strerror(e));
	}
	return TPS_OK;
}

void tps_outfile_discard(struct tps_outfile *o)
{
	if (o->f) {
		fclose(o->f);
		o->f = NULL;
	}
	if (o->tmp_path[0]) {
		unlink(o->tmp_path);
		o->tmp_path[0] = '\0';
	}
	disarm(o);
}

enum tps_status tps_outfile_write_all(const char *path, FILE *stream,
				      const char *noun, const char *data,
				      size_t len, const char *const *inputs,
				      int n_inputs,
				      struct tps_outfile_pending *pending,
				      struct tps_error *err)
{
	struct tps_outfile o;
	enum tps_status st = tps_outfile_open(&o, path, stream, noun, inputs,
					      n_inputs, pending, err);
	if (st != TPS_OK) {
		return st;
	}
	if (fwrite(data, 1, len, o.f) != len) {
		int e = errno;
		char name[256];
		tps_outfile_discard(&o);
		return tps_error_set(err, TPS_ERR_IO, "%s: %s",
				     tps_outfile_name(&o, name, sizeof name),
				     strerror(e));
	}
	return tps_outfile_commit(&o, err);
}
