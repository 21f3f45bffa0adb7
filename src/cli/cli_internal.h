/* What the CLI's files share (cli.c, cli_comm.c, cli_explain.c,
 * cli_picture.c, cli_output.c, cli_timeline.c, cli_view.c). Not
 * installed. */
#ifndef TPSIM_CLI_INTERNAL_H
#define TPSIM_CLI_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "backend.h"
#include "config.h"
#include "error.h"
#include "outfile.h"

/* A usage error: "tpsim: " fmt (with arg escaped), then the hint. Returns
 * the trouble exit code. */
int tps_cli_usage_error(FILE *err, const char *fmt, const char *arg);

/* Trouble: "tpsim: <message>". Returns the trouble exit code. */
int tps_cli_trouble(FILE *err, const struct tps_error *e);

/* `--backend mpi` (cli_mpi.c, docs/mpi.md): starts MPI and sets up b as
 * this process of the job (TPS_ERR_UNSUPPORTED when tpsim was built
 * without MPI, or MPI cannot start). */
enum tps_status tps_cli_mpi_start(struct tps_backend *b, struct tps_error *err);
/* Ends the job: every process returns process 0's exit code rc, and
 * total_sent[TPS_TRAFFIC_COUNT] (process 0's) are the bytes every process
 * sent, by kind (backend.h). */
int tps_cli_mpi_stop(struct tps_backend *b, int rc, int64_t *total_sent);

/* The most values one --set may list (tpsim comm sweeps them). */
#define TPS_CLI_MAX_SET_VALUES 64

/* One --set NAME=V[,V...]. */
struct tps_cli_set {
	char name[64];
	double values[TPS_CLI_MAX_SET_VALUES];
	int n_values;
};

/* Parses "NAME=V[,V...]": NAME as config variables are named, each V a
 * finite number written as JSON writes numbers (tps_json_scan_number).
 * False when malformed. */
bool tps_cli_parse_set(const char *arg, struct tps_cli_set *set);

/* tpsim comm CONFIG... [--set NAME=V[,V...]]... [--json] */
int tps_cli_comm(int argc, char **argv, FILE *out, FILE *err);

/* tpsim explain TRACE [--step N] [--module NAME] [--phase P]
 * [--max-values N] [--format text|md] [--pictures] */
int tps_cli_explain(int argc, char **argv, FILE *out, FILE *err);

/* tpsim picture TRACE --tensor NAME [--event SEQ] [-o FILE] */
int tps_cli_picture(int argc, char **argv, FILE *out, FILE *err);

/* tpsim timeline TRACE [-o FILE] */
int tps_cli_timeline(int argc, char **argv, FILE *out, FILE *err);

/* Publishes an output written straight into o->f (`timeline`, `view`),
 * as tps_outfile_commit does; write_errno is errno as the writing left
 * it (set to 0 before), which names a write that failed. */
enum tps_status tps_cli_commit_stream(struct tps_outfile *o, int write_errno,
				      struct tps_error *err);

/*
 * Publishes a finished output of len bytes through the one output writer
 * (outfile.h), as `tpsim run -o` writes its trace: to stdout_stream when
 * path is NULL; through a copy when path names something other than a
 * regular file (/dev/null); else through PATH.tmp.XXXXXX renamed over
 * PATH, so a failure or a signal leaves no partial file and an existing
 * file is only replaced on success. An output that is the same file as
 * `input` (the trace read) is refused. noun names the output in messages
 * ("SVG": "-o names the SVG file"). On error TPS_ERR_IO (or TPS_ERR_USAGE)
 * and a message naming path.
 */
enum tps_status tps_cli_publish(const char *path, const char *data, size_t len,
				const char *noun, FILE *stdout_stream,
				const char *input, struct tps_error *err);

/* Where the library publishes the temporary output it is writing, for the
 * signal handler (cli_output.c; outfile.h). */
struct tps_outfile_pending *tps_cli_pending(void);

/* tpsim diff TRACE_A TRACE_B [--format text|md] [--step N] [-o FILE]
 * (cli_diff.c) */
int tps_cli_diff(int argc, char **argv, FILE *out, FILE *err);

/* tpsim plot TRACE... -o FILE.svg [--label TEXT]... (cli_diff.c) */
int tps_cli_plot(int argc, char **argv, FILE *out, FILE *err);

/* tpsim view TRACE [-o FILE.html] */
int tps_cli_view(int argc, char **argv, FILE *out, FILE *err);

#endif
