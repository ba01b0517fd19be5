/* SPDX-License-Identifier: MIT */
/* Statistics and the sample lines of bench_stats.h. */
#include "bench_stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double oxr_bench_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

double oxr_bench_cpu_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

void oxr_bench_size_str(char *buf, size_t len, size_t n)
{
	if (n >= (1u << 20) && !(n & ((1u << 20) - 1)))
		snprintf(buf, len, "%zu MiB", n >> 20);
	else if (n >= 1024 && !(n & 1023))
		snprintf(buf, len, "%zu KiB", n >> 10);
	else
		snprintf(buf, len, "%zu B", n);
}

int oxr_bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double oxr_bench_quantile(const double *s, size_t n, double q)
{
	size_t k = (size_t)ceil(q * (double)n);

	return s[k ? (k > n ? n : k) - 1 : 0];
}

double oxr_bench_median(const double *s, size_t n)
{
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int oxr_bench_stats_of(const double *v, size_t n, struct oxr_bench_stats *s)
{
	double *c, sum = 0, sq = 0;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (!n)
		return 0;
	c = malloc(n * sizeof(*c));
	if (!c)
		return -1;
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), oxr_bench_cmp_double);
	for (i = 0; i < n; i++)
		sum += c[i];
	s->n = n;
	s->mean = sum / (double)n;
	/* two passes: the one-pass sum of squares loses digits when the spread
	 * is small beside the mean, as it is for latencies */
	for (i = 0; i < n; i++)
		sq += (c[i] - s->mean) * (c[i] - s->mean);
	s->stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	s->min = c[0];
	s->max = c[n - 1];
	s->median = oxr_bench_median(c, n);
	s->p99 = oxr_bench_quantile(c, n, 0.99);
	free(c);
	return 0;
}

int oxr_bench_emit(const struct oxr_bench_row *r, const double *v, size_t n)
{
	const char *path = getenv("OXR_BENCH_SAMPLES");
	FILE *f;
	size_t i;

	if (!path || !*path)
		return 0;
	/* append: one file collects every program of a run, each writes whole
	 * lines with one fclose, and only rank 0 of a program writes */
	f = fopen(path, "a");
	if (!f)
		return -1;
	fprintf(f, "{\"bench\":\"%s\",\"impl\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"unit\":\"%s\","
		"\"warmup\":%u,\"n\":%zu,\"samples\":[", r->bench, r->impl, r->ranks, r->bytes,
		r->unit, r->warmup, n);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%.4f", i ? "," : "", v[i]); /* 0.1 ns: below the clock */
	fprintf(f, "]}\n");
	if (fclose(f)) {
		fprintf(stderr, "bench: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int oxr_bench_emit_sorted(const struct oxr_bench_row *r, double *v, size_t n)
{
	if (oxr_bench_emit(r, v, n))
		return -1;
	qsort(v, n, sizeof(*v), oxr_bench_cmp_double);
	return 0;
}
