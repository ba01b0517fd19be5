/* SPDX-License-Identifier: MIT */
/*
 * oxr-bench's output: OSU-style tables (one per benchmark, a row per size
 * or group size), the ratio against the peer measured in the same run, the
 * gnuplot data files and the JSON of the whole run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oxr_bench.h"

/* Who oxr is set against, per benchmark, best first: a run has one of them. */
static const struct {
	const char *bench, *oxr, *peers[3];
} pairs[] = {
	{ "latency", "oxr", { "mpi", "perftest" } },
	{ "bandwidth", "oxr", { "mpi", "perftest" } },
	{ "put", "oxr", { "mpi", "perftest" } },
	{ "put_bw", "oxr", { "mpi", "perftest" } },
	{ "put_polled", "oxr", { "perftest" } },
	{ "put_polled_bw", "oxr", { "perftest" } },
	{ "barrier", "oxr", { "mpi", "oxr-dissemination" } },
	{ "bcast", "oxr", { "mpi", "rfc100", "rfc102" } },
	{ "reduce", "oxr", { "mpi", "rfc100", "rfc102" } },
	{ "crystal", "oxr-crystal", { "mpi-alltoallv", "oxr-pairwise" } },
	{ "revoke", "oxr", { NULL } },
	{ "reset", "oxr", { NULL } },
	{ "startup", "oxr", { "mpi" } },       /* a sample per rank: ms from launch to ready */
	{ "startup_wall", "oxr", { "mpi" } },  /* a sample per run: the launcher's ms */
	{ "startup_rss", "oxr", { "mpi" } },
	{ "startup_fds", "oxr", { "mpi" } },
	{ "startup_links", "oxr", { NULL } },  /* Open MPI does not say */
};
#define NPAIRS (sizeof(pairs) / sizeof(pairs[0]))

const struct oxr_bench_set_row *oxr_bench_find(const struct oxr_bench_set *s, const char *bench,
					       const char *impl, int ranks, size_t bytes)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct oxr_bench_set_row *r = &s->row[i];
		if (r->ranks == ranks && r->bytes == bytes && !strcmp(r->bench, bench) &&
		    !strcmp(r->impl, impl))
			return r;
	}
	return NULL;
}

static int has(const struct oxr_bench_set *s, const char *bench, const char *impl)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->row[i].bench, bench) && !strcmp(s->row[i].impl, impl))
			return 1;
	return 0;
}

static int pair_of(const char *bench)
{
	size_t i;

	for (i = 0; i < NPAIRS; i++)
		if (!strcmp(pairs[i].bench, bench))
			return (int)i;
	return -1;
}

const char *oxr_bench_peer_of(const struct oxr_bench_set *s, const char *bench)
{
	int p = pair_of(bench), k;

	for (k = 0; p >= 0 && k < 3 && pairs[p].peers[k]; k++)
		if (has(s, bench, pairs[p].peers[k]))
			return pairs[p].peers[k];
	return NULL;
}

/* oxr over the peer, so that > 1 is worse for times and better for rates */
static double ratio(const struct oxr_bench_set_row *o, const struct oxr_bench_set_row *p)
{
	return o && p && p->st.median > 0 ? o->st.median / p->st.median : 0;
}

static void print_table(const struct oxr_bench_set *s, int p, FILE *out)
{
	const char *bench = pairs[p].bench, *oxr = pairs[p].oxr, *peer = oxr_bench_peer_of(s, bench);
	size_t i;
	int first = 1;

	for (i = 0; i < s->n; i++) {
		const struct oxr_bench_set_row *r = &s->row[i], *q;
		char sz[24], pr[24] = "-", rt[24] = "-";
		if (strcmp(r->bench, bench) || strcmp(r->impl, oxr))
			continue;
		if (first) {
			fprintf(out, "\n# oxr-bench %s, transport %s%s; %s (median over n samples)\n",
				bench, s->transport, s->quick ? " (quick)" : "", r->unit);
			fprintf(out, "# %-6s %7s %7s %11s %11s %11s %11s %11s %11s %9s\n", "ranks",
				"size", "n", "min", "median", "p99", "max", "stdev",
				peer ? peer : "peer", "oxr/peer");
			first = 0;
		}
		q = peer ? oxr_bench_find(s, bench, peer, r->ranks, r->bytes) : NULL;
		if (q) {
			snprintf(pr, sizeof(pr), "%.2f", q->st.median);
			snprintf(rt, sizeof(rt), "%.2f", ratio(r, q));
		}
		oxr_bench_size_str(sz, sizeof(sz), r->bytes);
		fprintf(out, "  %-6d %7s %7zu %11.2f %11.2f %11.2f %11.2f %11.2f %11s %9s\n",
			r->ranks, sz, r->st.n, r->st.min, r->st.median, r->st.p99, r->st.max,
			r->st.stdev, pr, rt);
	}
}

/* A short table: a's medians, b's, a/b, for every (ranks, size) of both. */
static void print_pair(const struct oxr_bench_set *s, const char *bench, const char *a,
		       const char *b, FILE *out)
{
	size_t i;

	fprintf(out, "# %s: %s against %s\n# %-6s %7s %11s %11s %9s\n", bench, a, b, "ranks",
		"size", a, b, "ratio");
	for (i = 0; i < s->n; i++) {
		const struct oxr_bench_set_row *r = &s->row[i], *q;
		char sz[24];
		if (strcmp(r->bench, bench) || strcmp(r->impl, a) ||
		    !(q = oxr_bench_find(s, bench, b, r->ranks, r->bytes)))
			continue;
		oxr_bench_size_str(sz, sizeof(sz), r->bytes);
		fprintf(out, "  %-6d %7s %11.2f %11.2f %9.2f\n", r->ranks, sz, r->st.median,
			q->st.median, ratio(r, q));
	}
}

/* The peers after the first, and the RFC-100 comparison of oxr-master demo:
 * one master driving RFC-102 against the same master's loop. */
static void print_more_peers(const struct oxr_bench_set *s, int p, FILE *out)
{
	const char *first = oxr_bench_peer_of(s, pairs[p].bench), *bench = pairs[p].bench;
	int k;

	for (k = 0; k < 3 && pairs[p].peers[k]; k++)
		if (first != pairs[p].peers[k] && has(s, bench, pairs[p].peers[k]))
			print_pair(s, bench, pairs[p].oxr, pairs[p].peers[k], out);
	if (has(s, bench, "rfc102") && has(s, bench, "rfc100"))
		print_pair(s, bench, "rfc102", "rfc100", out);
}

void oxr_bench_print_tables(const struct oxr_bench_set *s, FILE *out)
{
	size_t p;

	for (p = 0; p < NPAIRS; p++) {
		print_table(s, (int)p, out);
		print_more_peers(s, (int)p, out);
	}
	fprintf(out, "\n# us: lower is better, oxr/peer < 1 is oxr faster; MB/s (10^6 bytes):"
		" higher is better, oxr/peer > 1 is oxr faster; ms, KiB, fds, links (startup, a"
		" sample per rank, of the group that did one barrier and a ring exchange): lower"
		" is better.  Peers ran in this invocation,"
		" one program after the other, on this machine (%d cores): the ratios, not the"
		" absolute figures, are what carries over.\n", s->cores);
}

/* x is the size for the point-to-point benchmarks, the group size for the
 * collectives (one file per size of those). */
int oxr_bench_write_dat(const struct oxr_bench_set *s, const char *dir)
{
	size_t i, j;

	for (i = 0; i < s->n; i++) {
		const struct oxr_bench_set_row *r = &s->row[i];
		int p2p = r->ranks == 2 && (!strncmp(r->bench, "latency", 7) ||
					    !strncmp(r->bench, "bandwidth", 9) ||
					    !strncmp(r->bench, "put", 3));
		char path[4096];
		FILE *f;
		int done = 0;

		for (j = 0; j < i && !done; j++) /* written with an earlier row */
			done = !strcmp(s->row[j].bench, r->bench) &&
			       !strcmp(s->row[j].impl, r->impl) &&
			       (p2p || s->row[j].bytes == r->bytes);
		if (done)
			continue;
		if (p2p)
			snprintf(path, sizeof(path), "%s/%s.%s.dat", dir, r->bench, r->impl);
		else
			snprintf(path, sizeof(path), "%s/%s-%zu.%s.dat", dir, r->bench, r->bytes,
				 r->impl);
		f = fopen(path, "w");
		if (!f)
			return -1;
		fprintf(f, "# %s %s: %s, median min p99 (%s)\n", r->bench, r->impl,
			p2p ? "bytes" : "ranks", r->unit);
		for (j = i; j < s->n; j++) {
			const struct oxr_bench_set_row *q = &s->row[j];
			if (strcmp(q->bench, r->bench) || strcmp(q->impl, r->impl) ||
			    (!p2p && q->bytes != r->bytes))
				continue;
			fprintf(f, "%zu %.4f %.4f %.4f\n", p2p ? q->bytes : (size_t)q->ranks,
				q->st.median, q->st.min, q->st.p99);
		}
		if (fclose(f))
			return -1;
	}
	return 0;
}

static void json_row(FILE *f, const struct oxr_bench_set_row *r)
{
	size_t k;

	fprintf(f, "{\"bench\": \"%s\", \"impl\": \"%s\", \"ranks\": %d, \"bytes\": %zu, "
		"\"unit\": \"%s\", \"warmup\": %u, \"n\": %zu, \"min\": %.4f, \"median\": %.4f, "
		"\"p99\": %.4f, \"max\": %.4f, \"mean\": %.4f, \"stdev\": %.4f, \"samples\": ",
		r->bench, r->impl, r->ranks, r->bytes, r->unit, r->warmup, r->st.n, r->st.min,
		r->st.median, r->st.p99, r->st.max, r->st.mean, r->st.stdev);
	if (!r->samples) {
		fprintf(f, "null}"); /* a peer that gives statistics only */
		return;
	}
	fputc('[', f);
	for (k = 0; k < r->st.n; k++)
		fprintf(f, "%s%.4f", k ? "," : "", r->samples[k]);
	fprintf(f, "]}");
}

int oxr_bench_write_json(const struct oxr_bench_set *s, const char *path, const char *model_json)
{
	FILE *f = fopen(path, "w");
	char host[256] = "", date[32];
	time_t t = time(NULL);
	const char *sep = "";
	size_t i;

	if (!f)
		return -1;
	gethostname(host, sizeof(host) - 1);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	fprintf(f, "{\n\"tool\": \"oxr-bench\", \"date\": \"%s\", \"host\": \"%s\", "
		"\"transport\": \"%s\", \"quick\": %s, \"cores\": %d,\n\"rows\": [\n", date, host,
		s->transport, s->quick ? "true" : "false", s->cores);
	for (i = 0; i < s->n; i++) {
		fputs(i ? ",\n" : "", f);
		json_row(f, &s->row[i]);
	}
	fprintf(f, "\n],\n\"ratios\": [");
	for (i = 0; i < s->n; i++) {
		const struct oxr_bench_set_row *r = &s->row[i], *q;
		int p = pair_of(r->bench), k;
		if (p < 0 || strcmp(r->impl, pairs[p].oxr))
			continue;
		for (k = 0; k < 3 && pairs[p].peers[k]; k++) {
			const char *peer = pairs[p].peers[k];
			if (!(q = oxr_bench_find(s, r->bench, peer, r->ranks, r->bytes)))
				continue;
			fprintf(f, "%s\n  {\"bench\": \"%s\", \"ranks\": %d, \"bytes\": %zu, "
				"\"oxr\": \"%s\", \"peer\": \"%s\", \"oxr_median\": %.4f, "
				"\"peer_median\": %.4f, \"ratio\": %.4f}", sep, r->bench, r->ranks,
				r->bytes, r->impl, peer, r->st.median, q->st.median, ratio(r, q));
			sep = ",";
		}
	}
	fprintf(f, "\n],\n\"model\": %s\n}\n", model_json ? model_json : "null");
	return fclose(f) ? -1 : 0;
}
