/*
 * Where the simulated ranks live (docs/mpi.md).
 *
 * Without a backend (mesh->backend NULL) every rank is a struct in this
 * process, and a collective is plain memory work (comm.c). With one, the
 * run is spread over `processes` processes, each holding the contiguous
 * block of ranks [first_rank, first_rank + ranks): a rank this process does
 * not hold keeps the shapes of its tensors and no values (meta tensors,
 * tensor.h), and every operation on it makes a meta result without
 * computing. What a held rank needs of another process's ranks comes
 * through the backend's exchange, at three places only: a collective
 * (comm.c) fetches its groups' buffers, a tensor assembled from its shards
 * (tps_dtensor_full_tensor) fetches the shards, and the trace's values are
 * fetched to process 0, which writes the trace. The arithmetic on fetched
 * buffers is comm.c's own, in its order, so the bytes do not depend on
 * where the ranks live.
 *
 * Every process runs the same plan and so reaches the same exchanges in
 * the same order; each exchange first agrees on every process's status
 * (tps_backend_agree), so that a process that failed (out of memory on a
 * rank, a NaN) stops every other at its next exchange instead of leaving
 * it waiting.
 */
#ifndef TPSIM_BACKEND_H
#define TPSIM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "mesh.h"
#include "tensor.h"

/* What an exchange moves, counted apart (`tpsim run --stats`): the
 * collectives' buffers, the shards of an assembled tensor (an outcome, the
 * loss, a dropout check), the trace's values to process 0. */
enum tps_traffic {
	TPS_TRAFFIC_COLLECTIVE,
	TPS_TRAFFIC_ASSEMBLE,
	TPS_TRAFFIC_TRACE,
};
#define TPS_TRAFFIC_COUNT 3

/* One message of an exchange: `count` floats at `data`, to (send) or
 * from process `peer`; a send and its receive carry the same tag. */
struct tps_transfer {
	int peer;
	int tag;
	float *data;
	int64_t count;
	bool send;
};

/* What an implementation provides (mpi_backend.c in the CLI is the one). */
struct tps_backend_ops {
	/* Posts every transfer of the list and returns when all are done. */
	enum tps_status (*exchange)(void *impl, struct tps_transfer *list,
				    size_t n, struct tps_error *err);
	/* Every process calls it with its status at the same point: TPS_OK
	 * when every status is TPS_OK; otherwise the lowest failing
	 * process's status and message, on every process. */
	enum tps_status (*agree)(void *impl, enum tps_status mine,
				 struct tps_error *err);
};

struct tps_backend {
	const struct tps_backend_ops *ops;
	void *impl;
	int process, processes;
	int first_rank, ranks; /* the ranks this process holds */
	/* Bytes this process sent to others, by what they carried. */
	int64_t bytes_sent[TPS_TRAFFIC_COUNT];
	/* A failure has been agreed on: no exchange runs any more. */
	bool failed;
	/* The run's last exchange (tps_backend_finish) is done. */
	bool finished;
	/* Process 0 keeps each parameter whole (it runs the reference);
	 * otherwise it too holds its ranks' shards alone, and the trace's
	 * parameters are assembled from every process's shards one at a
	 * time (tps_model_keeps_params). */
	bool writer_keeps_params;
};

/* Sets up b for process `process` of `processes`; tps_backend_place then
 * gives it its ranks. */
void tps_backend_init(struct tps_backend *b, const struct tps_backend_ops *ops,
		      void *impl, int process, int processes);

/*
 * Gives each process world_size / processes consecutive ranks, process 0
 * the first. TPS_ERR_INPUT when processes does not divide world_size
 * (the message names both).
 */
enum tps_status tps_backend_place(struct tps_backend *b, int world_size,
				  struct tps_error *err);

/* Whether this process holds rank r (always, without a backend). */
bool tps_mesh_holds(const struct tps_mesh *mesh, int r);
/* The process that holds rank r (0 without a backend). */
int tps_mesh_holder(const struct tps_mesh *mesh, int r);
/* Process 0 of a backend, or the one process: it writes the trace. */
bool tps_mesh_is_writer(const struct tps_mesh *mesh);

/*
 * Whether locals belong to a meta pass (shapes only: `tpsim comm`, the
 * plan's costs and warnings, the dropout layouts found before a run):
 * this process's ranks hold no values. Every process sees the same, so a
 * meta pass skips every exchange on every process. Without a backend:
 * locals[0].meta.
 */
bool tps_mesh_locals_meta(const struct tps_mesh *mesh,
			  const struct tps_tensor *locals);

/* Whether process p needs rank r's buffer (ctx: the caller's). */
typedef bool (*tps_backend_need_fn)(const void *ctx,
				    const struct tps_mesh *mesh, int p, int r);

/* The need of a process that needs every rank's buffer. */
bool tps_backend_need_all(const void *ctx, const struct tps_mesh *mesh, int p,
			  int r);

/*
 * Gives every process the buffers of locals[0..world_size) it needs: for
 * each rank r this process does not hold and need(ctx, mesh, me, r) says
 * it needs, locals[r] (meta, of the holder's shape) becomes a copy of the
 * holder's values; this process sends its own ranks' buffers to every
 * process that needs them. Agrees on the status first (see the top). On
 * error the fetched buffers are meta again. A no-op without a backend.
 */
enum tps_status tps_backend_fetch(const struct tps_mesh *mesh,
				  struct tps_tensor *locals,
				  tps_backend_need_fn need, const void *ctx,
				  enum tps_traffic kind, struct tps_error *err);

/*
 * One exchange of a list the caller built (the ordered reduction of
 * comm.c): agrees on st, this process's status so far (see the top), then
 * runs the transfers and counts the bytes sent. Every process calls it at
 * the same point, with its own list.
 */
enum tps_status tps_backend_exchange(const struct tps_mesh *mesh,
				     enum tps_status st,
				     struct tps_transfer *list, size_t n,
				     enum tps_traffic kind,
				     struct tps_error *err);

/* Makes every rank's buffer this process does not hold meta again
 * (freeing its values), keeping its shape. A no-op without a backend. */
void tps_backend_drop(const struct tps_mesh *mesh, struct tps_tensor *locals);

/* values[0..world_size): each process fills its own ranks' entries; on
 * return every process has every entry (a scalar per rank, as a rank's
 * part of the loss). */
enum tps_status tps_backend_share(const struct tps_mesh *mesh, double *values,
				  struct tps_error *err);

/* Agrees on st with every other process: the run's last exchange, so
 * that a process that failed after every other's last exchange still
 * stops them. Once only: a no-op without a backend, once a failure has
 * been agreed on, or when it ran already. */
enum tps_status tps_backend_finish(struct tps_backend *b, enum tps_status st,
				   struct tps_error *err);

/* Agrees on st with every other process at a point of the run every
 * process reaches (backend.h's top): a process that failed there stops
 * the others. A no-op without a backend or once a failure is agreed. */
enum tps_status tps_backend_agree(const struct tps_mesh *mesh,
				  enum tps_status st, struct tps_error *err);

#endif
