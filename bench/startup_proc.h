/* SPDX-License-Identifier: MIT */
/*
 * What bench_startup.c (oxr) and mpi_startup.c (MPI) share, so both
 * measure a rank alike and print the same line: the time since launch, the
 * rank's memory and descriptors out of /proc/self, and rank 0's summary.
 *
 * Launch: OXR_BENCH_T0_NS, CLOCK_REALTIME in nanoseconds, taken by whoever
 * starts oxr-run or mpirun (oxr-bench, bench/run_startup.sh: `date +%s%N`)
 * just before; every rank of one machine reads the same clock.  Without it
 * a rank counts from its own main(), which leaves out the launcher and the
 * exec.
 *
 * Result line, printed by rank 0 (ms; KiB; a mean over the ranks, and the
 * largest):
 *   RESULT impl=oxr|mpi n=N transport=T links=K ready_ms_max=X ready_ms_mean=X
 *     main_ms_max=X rss_kib_mean=X rss_kib_max=X pss_kib_mean=X pss_kib_max=X
 *     fds_mean=X fds_max=X links_mean=X links_max=X
 * ready: launch to the end of the first barrier and the ring exchange on
 * that rank; the group is ready at ready_ms_max.  main: the part of it
 * after main() began (boot, links, barrier, ring).  rss: VmRSS, every page
 * mapped, shared ones (the library, shared memory segments) on every rank
 * that maps them; pss: Pss of smaps_rollup, shared pages split among their
 * mappers (what the ranks cost the machine together: pss_mean x n).  fds:
 * the open descriptors.  links: the group's open links (oxr_group_stats);
 * "-" for MPI, which does not say.
 */
#ifndef OXR_BENCH_STARTUP_PROC_H
#define OXR_BENCH_STARTUP_PROC_H

#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

/* One rank's figures, gathered as they are (one machine, one layout). */
struct su_rank {
	double ready_ms, main_ms;
	double rss_kib, pss_kib, fds, links; /* links < 0: not known */
};

static double su_realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

/* The launch in CLOCK_REALTIME ns, or the fallback (main's start). */
static double su_t0_ns(double fallback)
{
	const char *v = getenv("OXR_BENCH_T0_NS");
	char *end;
	double t;

	if (!v || !*v)
		return fallback;
	t = strtod(v, &end);
	return *end || t <= 0 ? fallback : t;
}

/* "Key:   123 kB" of a /proc file, in KiB; -1 when it is not there. */
static double su_proc_kib(const char *path, const char *key)
{
	char line[256];
	size_t k = strlen(key);
	double v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, k) && line[k] == ':') {
			v = strtod(line + k + 1, NULL);
			break;
		}
	fclose(f);
	return v;
}

static int su_not_dot(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* Open descriptors, less the one scandir reads the folder with. */
static double su_fds(void)
{
	struct dirent **names;
	int n = scandir("/proc/self/fd", &names, su_not_dot, NULL), i;

	for (i = 0; i < n; i++)
		free(names[i]);
	if (n >= 0)
		free(names);
	return n < 0 ? -1 : n - 1;
}

/* This rank's figures now; links from the caller (-1: not known). */
static void su_measure(struct su_rank *r, double t0_ns, double main_ns, double links)
{
	double now = su_realtime_ns();

	r->ready_ms = (now - t0_ns) / 1e6;
	r->main_ms = (now - main_ns) / 1e6;
	r->rss_kib = su_proc_kib("/proc/self/status", "VmRSS");
	r->pss_kib = su_proc_kib("/proc/self/smaps_rollup", "Pss");
	r->fds = su_fds();
	r->links = links;
}

static void su_mean_max(const struct su_rank *all, int n, size_t off, double *mean,
			double *max)
{
	double sum = 0;
	int i;

	*max = -1;
	for (i = 0; i < n; i++) {
		double v = *(const double *)((const char *)&all[i] + off);
		sum += v;
		*max = v > *max ? v : *max;
	}
	*mean = sum / n;
}

/* One row of bench_stats.h per figure, a sample per rank: startup (ms),
 * startup_rss (KiB), startup_fds and startup_links (oxr only). */
static int su_emit(const char *impl, const struct su_rank *all, int n)
{
	static const struct {
		const char *bench, *unit;
		size_t off;
	} f[] = {
		{ "startup", "ms", offsetof(struct su_rank, ready_ms) },
		{ "startup_rss", "KiB", offsetof(struct su_rank, rss_kib) },
		{ "startup_fds", "fds", offsetof(struct su_rank, fds) },
		{ "startup_links", "links", offsetof(struct su_rank, links) },
	};
	double *v = malloc((size_t)n * sizeof(*v));
	size_t k;
	int i, rc = 0;

	if (!v)
		return -1;
	for (k = 0; k < sizeof(f) / sizeof(f[0]) && !rc; k++) {
		struct oxr_bench_row row = { .bench = f[k].bench, .impl = impl, .ranks = n,
					     .unit = f[k].unit };
		for (i = 0; i < n; i++)
			v[i] = *(const double *)((const char *)&all[i] + f[k].off);
		if (v[0] >= 0)
			rc = oxr_bench_emit(&row, v, (size_t)n);
	}
	free(v);
	return rc;
}

static void su_print(const char *impl, const char *transport, const char *links,
		     const struct su_rank *all, int n)
{
	double m[6], x[6], main_max = -1;
	char lm[32] = "-", lx[32] = "-";
	int i;

	su_mean_max(all, n, offsetof(struct su_rank, ready_ms), &m[0], &x[0]);
	su_mean_max(all, n, offsetof(struct su_rank, rss_kib), &m[1], &x[1]);
	su_mean_max(all, n, offsetof(struct su_rank, pss_kib), &m[2], &x[2]);
	su_mean_max(all, n, offsetof(struct su_rank, fds), &m[3], &x[3]);
	su_mean_max(all, n, offsetof(struct su_rank, links), &m[4], &x[4]);
	for (i = 0; i < n; i++)
		main_max = all[i].main_ms > main_max ? all[i].main_ms : main_max;
	if (all[0].links >= 0) {
		snprintf(lm, sizeof(lm), "%.1f", m[4]);
		snprintf(lx, sizeof(lx), "%.0f", x[4]);
	}
	printf("RESULT impl=%s n=%d transport=%s links=%s ready_ms_max=%.1f ready_ms_mean=%.1f "
	       "main_ms_max=%.1f rss_kib_mean=%.0f rss_kib_max=%.0f pss_kib_mean=%.0f "
	       "pss_kib_max=%.0f fds_mean=%.1f fds_max=%.0f links_mean=%s links_max=%s\n",
	       impl, n, transport, links, x[0], m[0], main_max, m[1], x[1], m[2], x[2], m[3], x[3],
	       lm, lx);
	fflush(stdout);
}

#endif
