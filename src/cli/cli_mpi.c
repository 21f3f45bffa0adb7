/*
 * `tpsim run --backend mpi` (docs/mpi.md): the backend of backend.h on
 * Open MPI. Each process of `mpirun -np P` holds world_size / P
 * consecutive ranks; an exchange is point-to-point messages (MPI_Irecv,
 * MPI_Isend, MPI_Waitall) on a duplicate of MPI_COMM_WORLD, and agreeing
 * on a status is an MPI_Allreduce of the lowest failing process followed
 * by an MPI_Bcast of its message. No MPI reduction ever adds tpsim's
 * values: comm.c adds them, in its order, on the fetched buffers.
 *
 * Only the main thread calls MPI (MPI_THREAD_FUNNELED): the collectives
 * and the trace's sink run on it; the pool's threads only compute.
 */
#include "cli_internal.h"

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TPSIM_HAVE_MPI
#include <mpi.h>

/* MPI counts are ints: a buffer goes in pieces of at most 2^30 floats,
 * in order (MPI keeps the order of messages with one source and tag). */
#define PIECE ((int64_t)1 << 30)

static MPI_Comm comm = MPI_COMM_NULL;

static void fail_hard(const char *what, int code)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(code, text, &len);
	fprintf(stderr, "tpsim: mpi: %s failed: %s\n", what, text);
	/* A broken exchange cannot be agreed on: stop every process. */
	MPI_Abort(MPI_COMM_WORLD, TPS_EXIT_TROUBLE);
}

static enum tps_status mpi_exchange(void *impl, struct tps_transfer *list,
				    size_t n, struct tps_error *err)
{
	size_t pieces = 0, k = 0;
	MPI_Request *req;
	int rc;
	(void)impl;
	for (size_t i = 0; i < n; i++) {
		pieces += (size_t)((list[i].count + PIECE - 1) / PIECE);
	}
	req = malloc((pieces ? pieces : 1) * sizeof *req);
	if (!req) {
		fprintf(stderr, "tpsim: mpi: out of memory in an exchange\n");
		MPI_Abort(MPI_COMM_WORLD, TPS_EXIT_TROUBLE);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	/* Receives first, so that no send waits for its receive's post. */
	for (int sends = 0; sends < 2; sends++) {
		for (size_t i = 0; i < n; i++) {
			struct tps_transfer *t = &list[i];
			if (t->send != (sends == 1)) {
				continue;
			}
			for (int64_t at = 0; at < t->count; at += PIECE) {
				int c = (int)(t->count - at < PIECE
						      ? t->count - at
						      : PIECE);
				rc = t->send ? MPI_Isend(t->data + at, c,
							 MPI_FLOAT, t->peer,
							 t->tag, comm, &req[k])
					     : MPI_Irecv(t->data + at, c,
							 MPI_FLOAT, t->peer,
							 t->tag, comm, &req[k]);
				if (rc != MPI_SUCCESS) {
					fail_hard("posting a message", rc);
				}
				k++;
			}
		}
	}
	rc = MPI_Waitall((int)k, req, MPI_STATUSES_IGNORE);
	if (rc != MPI_SUCCESS) {
		fail_hard("MPI_Waitall", rc);
	}
	free(req);
	return TPS_OK;
}

/* The failing process's status and message, as broadcast. */
struct failure {
	int status;
	char message[TPS_ERROR_MESSAGE_MAX];
};

static enum tps_status mpi_agree(void *impl, enum tps_status mine,
				 struct tps_error *err)
{
	const struct tps_backend *b = impl;
	/* The lowest failing process (processes: none), and whether any
	 * passed (-1: one MPI_MIN finds both). */
	int me[2] = {mine != TPS_OK ? b->process : b->processes,
		     mine != TPS_OK ? 0 : -1};
	int all[2];
	struct failure f = {0};
	int rc = MPI_Allreduce(me, all, 2, MPI_INT, MPI_MIN, comm);
	int lowest = all[0];
	bool everyone = all[1] == 0;
	if (rc != MPI_SUCCESS) {
		fail_hard("MPI_Allreduce", rc);
	}
	if (lowest == b->processes) {
		return TPS_OK;
	}
	if (lowest == b->process && everyone) {
		/* Every process failed alike (bad input): no one to name. */
		f.status = (int)mine;
		memcpy(f.message, err->message, sizeof f.message);
	} else if (lowest == b->process) {
		/* The prefix names where it failed; a message too long for
		 * both is cut (tps_error_prefix's rule). */
		struct tps_error named = *err;
		tps_error_prefix(&named, "process %d (ranks %d to %d)",
				 b->process, b->first_rank,
				 b->first_rank + b->ranks - 1);
		f.status = (int)mine;
		memcpy(f.message, named.message, sizeof f.message);
	}
	rc = MPI_Bcast(&f, (int)sizeof f, MPI_BYTE, lowest, comm);
	if (rc != MPI_SUCCESS) {
		fail_hard("MPI_Bcast", rc);
	}
	f.message[sizeof f.message - 1] = '\0';
	return tps_error_set(err, (enum tps_status)f.status, "%s", f.message);
}

static const struct tps_backend_ops mpi_ops = {mpi_exchange, mpi_agree};

enum tps_status tps_cli_mpi_start(struct tps_backend *b, struct tps_error *err)
{
	int provided = 0, process = 0, processes = 1;
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
	if (rc != MPI_SUCCESS) {
		return tps_error_set(err, TPS_ERR_UNSUPPORTED,
				     "--backend mpi: MPI_Init_thread failed "
				     "(run it under mpirun)");
	}
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_rank(comm, &process);
	MPI_Comm_size(comm, &processes);
	tps_backend_init(b, &mpi_ops, b, process, processes);
	if (provided < MPI_THREAD_FUNNELED) {
		return tps_error_set(err, TPS_ERR_UNSUPPORTED,
				     "--backend mpi: this MPI gives no "
				     "MPI_THREAD_FUNNELED");
	}
	return TPS_OK;
}

int tps_cli_mpi_stop(struct tps_backend *b, int rc, int64_t *total_sent)
{
	long long mine[TPS_TRAFFIC_COUNT], all[TPS_TRAFFIC_COUNT] = {0};
	/* Process 0 knows the verdict; every process exits with its code. */
	MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
	for (int k = 0; k < TPS_TRAFFIC_COUNT; k++) {
		mine[k] = b->bytes_sent[k];
	}
	MPI_Reduce(mine, all, TPS_TRAFFIC_COUNT, MPI_LONG_LONG, MPI_SUM, 0,
		   comm);
	for (int k = 0; k < TPS_TRAFFIC_COUNT; k++) {
		total_sent[k] = all[k];
	}
	MPI_Comm_free(&comm);
	MPI_Finalize();
	return rc;
}

#else

enum tps_status tps_cli_mpi_start(struct tps_backend *b, struct tps_error *err)
{
	(void)b;
	return tps_error_set(err, TPS_ERR_UNSUPPORTED,
			     "--backend mpi: this tpsim was built without "
			     "MPI (install libopenmpi-dev and build with "
			     "-Dmpi=enabled; docs/mpi.md)");
}

int tps_cli_mpi_stop(struct tps_backend *b, int rc, int64_t *total_sent)
{
	(void)b;
	for (int k = 0; k < TPS_TRAFFIC_COUNT; k++) {
		total_sent[k] = 0;
	}
	return rc;
}

#endif
