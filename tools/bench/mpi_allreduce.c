/*
 * What tpsim's ordered reduction costs against MPI_Allreduce (docs/mpi.md):
 * one rank per process, a float32 buffer of 16 MiB by default, summed over
 * every process, by
 *   - tps_comm_all_reduce under the MPI backend (backend.h, comm.c: each
 *     process receives its chunk of every addend, adds them in ascending
 *     rank order, and sends the reduced chunk to the others), and
 *   - MPI_Allreduce(MPI_SUM) on the same values, whose order of addition
 *     Open MPI chooses.
 * Prints, on process 0, the median seconds of each over the repeats, the
 * bytes each process sent, and how many elements of MPI's sum differ from
 * the ordered one (its order is not rank order, so some may).
 *
 *   mpirun --oversubscribe -np 8 build/tools/bench/mpi_allreduce [MIB] [REPEATS]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cli_internal.h"
#include "comm.h"
#include "mesh.h"
#include "tensor.h"

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, by_value);
	return v[n / 2];
}

/* A positive count of at most 2^20, or 0 for anything else. */
static int64_t positive(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	return end != s && *end == '\0' && v > 0 && v <= (1 << 20) ? v : 0;
}

/* The addend of rank r, element i: distinct per rank, exact in float32
 * sums of few terms only by chance (so orders can differ). */
static float addend(int r, int64_t i)
{
	return (float)((double)((i * 2654435761u + (uint64_t)r * 40503u) %
				100003u) /
		       7919.0);
}

int main(int argc, char **argv)
{
	struct tps_backend b;
	struct tps_error err = {0};
	struct tps_mesh mesh;
	struct tps_tensor *locals;
	int64_t mib = argc > 1 ? positive(argv[1]) : 16;
	int repeats = argc > 2 ? (int)positive(argv[2]) : 10;
	int64_t n = mib * 1024 * 1024 / (int64_t)sizeof(float);
	double *t_tps, *t_mpi;
	float *in, *out;
	long long differ = 0, all_differ = 0;
	int64_t sent = 0, sent_tps = 0;
	int64_t sent_total[TPS_TRAFFIC_COUNT];
	const char *names[] = {"tp"};
	struct tps_shape shape = tps_shape_make(1, &n);

	if (tps_cli_mpi_start(&b, &err) != TPS_OK) {
		fprintf(stderr, "mpi_allreduce: %s\n", err.message);
		return 2;
	}
	if (repeats < 1 || n < 1 || n > INT32_MAX ||
	    tps_mesh_init(&mesh, 1, &b.processes, names, &err) != TPS_OK ||
	    tps_backend_place(&b, b.processes, &err) != TPS_OK) {
		fprintf(stderr, "mpi_allreduce: bad arguments\n");
		return tps_cli_mpi_stop(&b, 2, sent_total);
	}
	mesh.backend = &b;
	locals = calloc((size_t)b.processes, sizeof *locals);
	t_tps = calloc((size_t)repeats, sizeof *t_tps);
	t_mpi = calloc((size_t)repeats, sizeof *t_mpi);
	in = malloc((size_t)n * sizeof *in);
	out = malloc((size_t)n * sizeof *out);
	for (int64_t i = 0; i < n; i++) {
		in[i] = addend(b.process, i);
	}
	for (int k = 0; k < repeats; k++) {
		struct tps_comm_report report;
		double t0;
		for (int r = 0; r < b.processes; r++) {
			tps_tensor_free(&locals[r]);
			if (r == b.process) {
				tps_tensor_init(&locals[r], &shape, &err);
				memcpy(locals[r].data, in,
				       (size_t)n * sizeof *in);
			} else {
				tps_tensor_init_meta(&locals[r], &shape, &err);
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		if (tps_comm_all_reduce(&mesh, 1, locals, TPS_REDUCE_SUM,
					TPS_COMM_F32, &report,
					&err) != TPS_OK) {
			fprintf(stderr, "mpi_allreduce: %s\n", err.message);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		t_tps[k] = MPI_Wtime() - t0;
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM,
			      MPI_COMM_WORLD);
		t_mpi[k] = MPI_Wtime() - t0;
	}
	sent_tps = b.bytes_sent[TPS_TRAFFIC_COLLECTIVE] / repeats;
	for (int64_t i = 0; i < n; i++) {
		differ += memcmp(&out[i], &locals[b.process].data[i],
				 sizeof(float)) != 0;
	}
	MPI_Reduce(&differ, &all_differ, 1, MPI_LONG_LONG, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	MPI_Reduce(&sent_tps, &sent, 1, MPI_INT64_T, MPI_MAX, 0,
		   MPI_COMM_WORLD);
	if (b.process == 0) {
		double a = median(t_tps, repeats), m = median(t_mpi, repeats);
		printf("%lld MiB float32 over %d processes, median of %d\n",
		       (long long)mib, b.processes, repeats);
		printf("tpsim ordered all_reduce: %.4f s (%.2f GB/s of "
		       "buffer), %lld bytes sent by the busiest process "
		       "(ring formula %lld)\n",
		       a, (double)n * 4 / a / 1e9, (long long)sent,
		       (long long)(2 * (b.processes - 1) *
				   ((n + b.processes - 1) / b.processes) *
				   4));
		printf("MPI_Allreduce:            %.4f s (%.2f GB/s of "
		       "buffer)\n",
		       m, (double)n * 4 / m / 1e9);
		printf("ratio ordered / MPI_Allreduce: %.2f\n", a / m);
		printf("elements where MPI_Allreduce's sum differs from the "
		       "ordered one: %lld of %lld on all processes\n",
		       all_differ, (long long)n * b.processes);
	}
	for (int r = 0; r < b.processes; r++) {
		tps_tensor_free(&locals[r]);
	}
	free(locals);
	free(t_tps);
	free(t_mpi);
	free(in);
	free(out);
	return tps_cli_mpi_stop(&b, 0, sent_total);
}
