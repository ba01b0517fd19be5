/* SPDX-License-Identifier: MIT */
/*
 * oxr-bench's perftest peer, included by oxr_bench.c (it runs its
 * programs with that file's spawn and run).  perftest prints statistics,
 * not samples, so its rows go into the samples file as statistics lines:
 * the same fields, no "samples".  Its latency tools report half a round
 * trip (t_typical: the median), as bench_pingpong does; its bandwidth is
 * the average over the run.
 *   OXR_DEVICE (default rxe0), OXR_GID_INDEX (default 1), RDMA_HOST (default
 *   127.0.0.2: the address the client connects to), as bench/run_verbs.sh
 */

/* The first row of perftest's table: "  8  1000  t_min ..." */
static int perftest_row(const char *log, double *v, int nv)
{
	char line[512];
	FILE *f = fopen(log, "r");
	int k = 0;

	if (!f)
		return 0;
	while (k == 0 && fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		for (k = 0; k < nv; k++, p = end) {
			v[k] = strtod(p, &end);
			if (end == p)
				break;
		}
		if (k < 2) /* a header or a message, not a row */
			k = 0;
	}
	fclose(f);
	return k;
}

static void perftest_one(const char *tool, const char *name, size_t bytes, int lat)
{
	const char *dev = getenv("OXR_DEVICE"), *gid = getenv("OXR_GID_INDEX");
	const char *host = getenv("RDMA_HOST");
	char sz[24], iters[16], log[160], slog[160];
	char *argv[] = { (char *)tool, "-d", (char *)(dev ? dev : "rxe0"), "-x",
			 (char *)(gid ? gid : "1"), "-s", sz, "-n", iters, NULL, NULL };
	double v[9];
	struct timespec ts = { 1, 0 };
	pid_t server;
	int rc, st, k;
	FILE *f;

	snprintf(sz, sizeof(sz), "%zu", bytes);
	snprintf(iters, sizeof(iters), "%d",
		 lat ? (opt.quick ? 200 : 1000) : (bytes >= (1u << 20) ? 100 : 1000));
	snprintf(log, sizeof(log), "%s/perftest.log", opt.scratch);
	snprintf(slog, sizeof(slog), "%s/perftest-server.log", opt.scratch);
	unlink(log);
	unlink(slog);
	fprintf(stderr, "oxr-bench: %s (perftest): %s -s %s -n %s\n", name, tool, sz, iters);
	spawn(argv, slog, &server);
	nanosleep(&ts, NULL); /* the server listens before the client connects */
	argv[9] = (char *)(host ? host : "127.0.0.2");
	rc = spawn(argv, log, NULL);
	/* the server ends with its client; one that does not is not waited for */
	for (k = 0; k < 100 && waitpid(server, &st, WNOHANG) == 0; k++)
		nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
	if (k == 100) {
		kill(-server, SIGKILL);
		waitpid(server, &st, 0);
	}
	if (rc) {
		show_log(log);
		show_log(slog);
		die("%s failed", tool);
	}
	k = perftest_row(log, v, 9);
	if (k < (lat ? 9 : 4)) {
		show_log(log);
		die("%s: no table row in its output", tool);
	}
	f = fopen(opt.samples, "a");
	if (!f)
		die("cannot write %s", opt.samples);
	if (lat) /* bytes iters t_min t_max t_typical t_avg t_stdev 99% 99.9% */
		fprintf(f, "{\"bench\":\"%s\",\"impl\":\"perftest\",\"ranks\":2,\"bytes\":%zu,"
			"\"unit\":\"us\",\"warmup\":0,\"n\":%.0f,\"min\":%g,\"max\":%g,\"median\":%g,"
			"\"mean\":%g,\"stdev\":%g,\"p99\":%g}\n", name, bytes, v[1], v[2], v[3], v[4],
			v[5], v[6], v[7]);
	else /* bytes iters BW_peak BW_average MsgRate */
		fprintf(f, "{\"bench\":\"%s\",\"impl\":\"perftest\",\"ranks\":2,\"bytes\":%zu,"
			"\"unit\":\"MB/s\",\"warmup\":0,\"n\":%.0f,\"min\":%g,\"max\":%g,\"median\":%g,"
			"\"mean\":%g,\"stdev\":0,\"p99\":%g}\n", name, bytes, v[1], v[3], v[2], v[3],
			v[3], v[3]);
	fclose(f);
}

static void perftest_p2p(const char *lat_tool, const char *bw_tool, const char *lat_name,
			 const char *bw_name)
{
	const char *p = opt.sizes;
	char *end;

	for (; *p; p = *end ? end + 1 : end) {
		size_t n = strtoull(p, &end, 10);
		if (want(lat_name))
			perftest_one(lat_tool, lat_name, n, 1);
		/* bench_pingpong streams from 4 KiB up; the same sizes here */
		if (want(bw_name) && n >= 4096)
			perftest_one(bw_tool, bw_name, n, 0);
	}
}
