/* SPDX-License-Identifier: MIT */
/*
 * oxr-bench: every benchmark of bench/ behind one front end.
 *
 *   oxr-bench [--bench LIST] [--ranks LIST] [--sizes LIST] [--transport tcp|verbs|shm]
 *             [--compare] [--quick] [--json FILE] [--dat DIR] [--model] [-B BINDIR]
 *   oxr-bench --simulate
 *
 * It starts each program (oxr ones under oxr-run, the Open MPI peers under
 * mpirun, perftest's client and server itself, bench_rfc100 its own
 * master and servers) with OXR_BENCH_SAMPLES
 * pointing into a scratch folder, reads back the raw samples every program
 * appended there (bench_stats.h), and computes every statistic itself, so
 * oxr and its peers are reduced alike.  Peers run in the same invocation,
 * one program after the other, which is what makes their ratios fair on a
 * shared machine; a program's own output goes to a log in the scratch
 * folder, printed only when it fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oxr_bench.h"

#define MAXARGS 48

static const char *const all_benches[] = { "latency", "bandwidth", "put",    "put_polled",
					   "barrier", "bcast",     "reduce", "crystal",
					   "revoke",  "reset",     "startup" };
#define NBENCH (sizeof(all_benches) / sizeof(all_benches[0]))

static struct {
	int want[NBENCH];
	int ranks[16], nranks;
	char sizes[256], bcast_sizes[256];
	const char *transport, *json, *dat, *bindir;
	int compare, quick, model, timeout_s;
	char scratch[64], samples[96];
} opt;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("oxr-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* On stdout for --help (exit 0), on stderr for a usage error (exit 2). */
static int usage(FILE *f)
{
	fprintf(f,
		"usage: oxr-bench [options]\n"
		"       oxr-bench --simulate\n"
		"\n"
		"Runs the benchmarks (oxr's under oxr-run, the peers under mpirun or perftest)\n"
		"one after the other and prints, per benchmark, the median, minimum and p99 of\n"
		"each implementation and their ratios.\n"
		"\n"
		"  --bench LIST      of latency,bandwidth,put,put_polled,barrier,bcast,reduce,\n"
		"                    crystal,revoke,reset,startup (default: all but startup)\n"
		"  --ranks LIST      group sizes of the collectives (default 2,4,8,16)\n"
		"  --sizes LIST      message sizes in bytes of the point-to-point benchmarks and\n"
		"                    bcast (default 8,64,512,4096,32768,262144,1048576; bcast 8,4096,\n"
		"                    1048576)\n"
		"  --transport T     tcp, verbs or shm (OXR_TRANSPORT of the oxr programs; default\n"
		"                    tcp)\n"
		"  --compare         also run the peers: Open MPI's tcp BTL on tcp, Open MPI as\n"
		"                    installed (shared memory) on shm, perftest on verbs\n"
		"  --quick           short runs, for tests\n"
		"  --json FILE       every row with all its samples, the ratios and the model\n"
		"  --dat DIR         gnuplot data: DIR/BENCH.IMPL.dat (x, median, min, p99)\n"
		"  --model           fit LogGP to the run and project to 2^20 ranks\n"
		"  --simulate        run nothing: the revoke's broadcast, the heartbeat's ring\n"
		"                    detector, the bitmap barrier and the shrink's agreement\n"
		"                    simulated at 2^10 to 2^20 ranks (rounds, frames, pings,\n"
		"                    detection periods, memory)\n"
		"  -B BINDIR         where oxr-run and the programs are (default: this program's)\n"
		"  --timeout S       seconds one program may take (default 300)\n"
		"  -h, --help        print this help and exit\n"
		"\n"
		"Exit status: 0 ok; 1 a program failed or ran past --timeout, an option's\n"
		"value is wrong, or --simulate found a bound broken; 2 usage error.\n");
	return f == stdout ? 0 : 2;
}

/* "2,4,8" into v[]; 0 when a field is not a positive number. */
static int parse_ints(const char *list, int *v, int cap, int *n)
{
	char *end;

	for (*n = 0; *list; list = *end ? end + 1 : end) {
		long x = strtol(list, &end, 10);
		if (end == list || x < 1 || x > 1 << 20 || (*end && *end != ',') || *n == cap)
			return 0;
		v[(*n)++] = (int)x;
	}
	return *n > 0;
}

static int parse_sizes(const char *list)
{
	char *end;
	const char *p;

	if (!*list || strlen(list) >= sizeof(opt.sizes))
		return 0;
	for (p = list; *p; p = *end ? end + 1 : end) {
		unsigned long long x = strtoull(p, &end, 10);
		if (end == p || (*end && *end != ',') || x > (4u << 20))
			return 0;
	}
	return 1;
}

static int want(const char *bench)
{
	size_t i;

	if (!strcmp(bench, "put_bw")) /* bench_put's second table */
		bench = "put";
	if (!strcmp(bench, "put_polled_bw"))
		bench = "put_polled";
	if (!strncmp(bench, "startup_", 8)) /* bench_startup's other figures */
		bench = "startup";
	for (i = 0; i < NBENCH; i++)
		if (!strcmp(all_benches[i], bench))
			return opt.want[i];
	return 0;
}

static int parse_benches(const char *list)
{
	char buf[256], *tok, *save;
	size_t i;

	if (strlen(list) >= sizeof(buf))
		return 0;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NBENCH && strcmp(all_benches[i], tok); i++)
			;
		if (i == NBENCH) {
			fprintf(stderr, "oxr-bench: no benchmark %s\n", tok);
			return 0;
		}
		opt.want[i] = 1;
	}
	return 1;
}

static void parse_args(int argc, char **argv)
{
	static char self[4096];
	int a, i;

	/* startup only when asked: its ranks are the large ones of
	 * bench/run_startup.sh, not the collectives' */
	for (i = 0; i < (int)NBENCH; i++)
		opt.want[i] = strcmp(all_benches[i], "startup") != 0;
	parse_ints("2,4,8,16", opt.ranks, 16, &opt.nranks);
	strcpy(opt.sizes, "8,64,512,4096,32768,262144,1048576");
	strcpy(opt.bcast_sizes, "8,4096,1048576");
	opt.transport = "tcp";
	opt.timeout_s = 300;
	for (a = 1; a < argc; a++) {
		const char *v = a + 1 < argc ? argv[a + 1] : NULL;
		if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help"))
			exit(usage(stdout));
		if (!strcmp(argv[a], "--simulate")) {
			if (argc != 2)
				die("--simulate runs alone: no ranks, no other option");
			exit(oxr_bench_simulate(stdout) ? 1 : 0);
		}
		if (!strcmp(argv[a], "--compare") || !strcmp(argv[a], "--quick") ||
		    !strcmp(argv[a], "--model")) {
			*(argv[a][2] == 'c' ? &opt.compare : argv[a][2] == 'q' ? &opt.quick :
								  &opt.model) = 1;
			continue;
		}
		if (!v)
			exit(usage(stderr));
		else if (!strcmp(argv[a], "--bench")) {
			memset(opt.want, 0, sizeof(opt.want));
			if (!parse_benches(v))
				exit(usage(stderr));
		} else if (!strcmp(argv[a], "--ranks")) {
			if (!parse_ints(v, opt.ranks, 16, &opt.nranks))
				die("--ranks: up to 16 comma-separated group sizes, not '%s'", v);
		} else if (!strcmp(argv[a], "--sizes")) {
			if (!parse_sizes(v))
				die("--sizes: comma-separated byte counts up to 4194304, not '%s'", v);
			strcpy(opt.sizes, v);
			strcpy(opt.bcast_sizes, v);
		} else if (!strcmp(argv[a], "--transport")) {
			if (strcmp(v, "tcp") && strcmp(v, "verbs") && strcmp(v, "shm"))
				die("--transport: tcp, verbs or shm, not '%s'", v);
			opt.transport = v;
		} else if (!strcmp(argv[a], "--json"))
			opt.json = v;
		else if (!strcmp(argv[a], "--dat"))
			opt.dat = v;
		else if (!strcmp(argv[a], "-B"))
			opt.bindir = v;
		else if (!strcmp(argv[a], "--timeout")) {
			opt.timeout_s = atoi(v);
			if (opt.timeout_s < 1)
				die("--timeout: seconds, not '%s'", v);
		} else
			exit(usage(stderr));
		a++; /* the option's value */
	}
	for (i = 0; i < opt.nranks; i++)
		if (opt.ranks[i] < 2)
			die("--ranks: a group has 2 ranks or more");
	if (!opt.bindir) {
		ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (k <= 0)
			die("cannot find my own folder; give -B BINDIR");
		self[k] = 0;
		*strrchr(self, '/') = 0;
		opt.bindir = self;
	}
}

/* ---- running the programs ---------------------------------------------- */

static int have_file(const char *name)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s/%s", opt.bindir, name);
	return access(p, X_OK) == 0;
}

static int in_path(const char *cmd)
{
	char buf[8192], *dir, *save;
	const char *path = getenv("PATH");

	if (!path || strlen(path) >= 4096)
		return 0;
	strcpy(buf, path);
	for (dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char p[8192];
		snprintf(p, sizeof(p), "%s/%s", dir, cmd);
		if (access(p, X_OK) == 0)
			return 1;
	}
	return 0;
}

/* Runs argv with its output into a log; the status, or -1 when it was
 * killed at the deadline.  Its own process group, so that a hung run's
 * ranks go down with their launcher. */
static int spawn(char *const argv[], const char *log, pid_t *bg)
{
	pid_t pid = fork();
	double deadline;
	int st;

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		FILE *f = freopen(log, "a", stdout);
		if (!f || dup2(fileno(stdout), 2) < 0)
			_exit(126);
		setpgid(0, 0);
		execvp(argv[0], argv);
		fprintf(stderr, "oxr-bench: cannot start %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	if (bg) {
		*bg = pid;
		return 0;
	}
	deadline = time(NULL) + opt.timeout_s;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0)
			die("waitpid: %s", strerror(errno));
		if (time(NULL) > deadline) {
			kill(-pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		nanosleep(&ts, NULL);
	}
}

static void show_log(const char *log)
{
	char line[1024];
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  | %s", line);
	fclose(f);
}

/* Runs one program; a failing one ends the run: figures without it would
 * be ratios against nothing.  Its wall time in ms, from just before the
 * launch, which OXR_BENCH_T0_NS tells the ranks (bench_startup). */
static double run(const char *what, char *const argv[])
{
	char log[160], t0[32];
	struct timespec ts;
	double start;
	int rc, i;

	snprintf(log, sizeof(log), "%s/run.log", opt.scratch);
	unlink(log);
	fprintf(stderr, "oxr-bench: %s:", what);
	for (i = 0; argv[i]; i++)
		fprintf(stderr, " %s", argv[i]);
	fputc('\n', stderr);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(t0, sizeof(t0), "%lld%09ld", (long long)ts.tv_sec, ts.tv_nsec);
	setenv("OXR_BENCH_T0_NS", t0, 1);
	start = oxr_bench_now_us();
	rc = spawn(argv, log, NULL);
	if (rc) {
		show_log(log);
		die("%s %s", what, rc < 0 ? "ran past --timeout" : "failed");
	}
	return (oxr_bench_now_us() - start) / 1e3;
}

/* BINDIR/name, one buffer per name for the whole run (argv arrays keep
 * pointers to them) */
static char *bin(const char *name)
{
	static struct {
		const char *name;
		char path[4200];
	} tab[16];
	int i;

	for (i = 0; i < 16 && tab[i].name; i++)
		if (!strcmp(tab[i].name, name))
			return tab[i].path;
	if (i == 16)
		die("more than 16 programs");
	tab[i].name = name;
	snprintf(tab[i].path, sizeof(tab[i].path), "%s/%s", opt.bindir, name);
	return tab[i].path;
}

/* oxr-run -n N -- PROG ARGS... */
static double run_oxr(const char *what, int n, char *const prog[])
{
	char *argv[MAXARGS], num[16];
	int k = 0, i;

	snprintf(num, sizeof(num), "%d", n);
	argv[k++] = bin("oxr-run");
	argv[k++] = "-n";
	argv[k++] = num;
	argv[k++] = "--";
	for (i = 0; prog[i] && k < MAXARGS - 1; i++)
		argv[k++] = prog[i];
	argv[k] = NULL;
	return run(what, argv);
}

/* Open MPI as bench/run_pingpong.sh runs it: tcp BTL and self on lo, ob1,
 * no shared memory, ranks not pinned, oversubscription allowed; one-sided
 * calls by osc pt2pt over that BTL (osc sm would be memcpy on one node).
 * Against oxr on shm, as bench/run_shm.sh runs it: its transports as
 * installed (vader and CMA inside the node). */
static double run_mpi(const char *what, int n, char *const prog[])
{
	char *argv[MAXARGS], num[16];
	static char *const tcp[] = { "--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1",
				     "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include",
				     "lo", "--mca", "oob_tcp_if_include", "lo", "--mca", "osc",
				     "pt2pt", "-x", "OXR_BENCH_SAMPLES", "-x", "OXR_BENCH_T0_NS",
				     NULL };
	static char *const shm[] = { "--oversubscribe", "--bind-to", "none", "--mca",
				     "oob_tcp_if_include", "lo", "-x", "OXR_BENCH_SAMPLES", "-x",
				     "OXR_BENCH_T0_NS", NULL };
	char *const *flags = strcmp(opt.transport, "shm") ? tcp : shm;
	int k = 0, i;

	snprintf(num, sizeof(num), "%d", n);
	argv[k++] = "mpirun";
	argv[k++] = "-np";
	argv[k++] = num;
	for (i = 0; flags[i]; i++)
		argv[k++] = flags[i];
	for (i = 0; prog[i] && k < MAXARGS - 1; i++)
		argv[k++] = prog[i];
	argv[k] = NULL;
	return run(what, argv);
}

static int mpi_peer(const char *prog)
{
	return opt.compare && strcmp(opt.transport, "verbs") && have_file(prog) && in_path("mpirun");
}

static int perftest_peer(void)
{
	return opt.compare && !strcmp(opt.transport, "verbs") && in_path("ib_send_lat");
}

#include "oxr_bench_perftest.h"

static void bench_p2p(void)
{
	char *q = opt.quick ? "--quick" : NULL;
	char *pp[] = { bin("bench_pingpong"), "--sizes", opt.sizes, q, NULL };
	char *put[] = { bin("bench_put"), "--sizes", opt.sizes, q, NULL };
	char *polled[] = { bin("bench_put"), "--polled", "--sizes", opt.sizes, q, NULL };

	if (want("latency") || want("bandwidth")) {
		run_oxr("latency, bandwidth", 2, pp);
		pp[0] = bin("mpi_pingpong");
		if (mpi_peer("mpi_pingpong"))
			run_mpi("latency, bandwidth (Open MPI)", 2, pp);
		if (perftest_peer())
			perftest_p2p("ib_send_lat", "ib_send_bw", "latency", "bandwidth");
	}
	if (want("put")) {
		run_oxr("put", 2, put);
		put[0] = bin("mpi_put");
		if (mpi_peer("mpi_put"))
			run_mpi("put (Open MPI, MPI_Put and a flag)", 2, put);
		if (perftest_peer())
			perftest_p2p("ib_write_lat", "ib_write_bw", "put", "put_bw");
	}
	/* what ib_write_lat measures: a write, and the target polling its memory */
	if (want("put_polled")) {
		run_oxr("put_polled", 2, polled);
		if (perftest_peer())
			perftest_p2p("ib_write_lat", "ib_write_bw", "put_polled", "put_polled_bw");
	}
}

static void bench_groups(void)
{
	char iters[16], warm[16], reps[16], citers[16], rev[16], rfi[16];
	char *q = opt.quick ? "--quick" : NULL;
	int i;

	snprintf(iters, sizeof(iters), "%d", opt.quick ? 100 : 1000);
	snprintf(warm, sizeof(warm), "%d", opt.quick ? 10 : 100);
	snprintf(reps, sizeof(reps), "%d", opt.quick ? 5 : 15);
	snprintf(citers, sizeof(citers), "%d", opt.quick ? 5 : 20);
	snprintf(rev, sizeof(rev), "%d", opt.quick ? 10 : 40);
	snprintf(rfi, sizeof(rfi), "%d", opt.quick ? 5 : 20);
	for (i = 0; i < opt.nranks; i++) {
		int n = opt.ranks[i];
		char *bm[] = { bin("bench_barrier"), "bitmap", iters, warm, NULL };
		char *ds[] = { bin("bench_barrier"), "dissemination", iters, warm, NULL };
		char *mb[] = { bin("mpi_barrier"), iters, warm, NULL };
		char *bc[] = { bin("bench_bcast"), "--sizes", opt.bcast_sizes, q, NULL };
		char *cr[] = { bin("bench_crystal"), "--dests", "max", "--bytes", "64", "--reps",
			       reps, "--iters", citers, NULL };
		char *rv[] = { bin("bench_revoke"), rev, "3", NULL };
		char num[16], *rf[] = { bin("bench_rfc100"), "-n", num, "--sizes",
					opt.bcast_sizes, "--iters", rfi, NULL };

		if (want("barrier")) {
			run_oxr("barrier (bitmap)", n, bm);
			run_oxr("barrier (dissemination)", n, ds);
			if (mpi_peer("mpi_barrier"))
				run_mpi("barrier (Open MPI)", n, mb);
		}
		if (want("bcast") || want("reduce")) {
			run_oxr("bcast, reduce", n, bc);
			bc[0] = bin("mpi_bcast");
			if (mpi_peer("mpi_bcast"))
				run_mpi("bcast, reduce (Open MPI)", n, bc);
			if (opt.compare && have_file("bench_rfc100")) {
				snprintf(num, sizeof(num), "%d", n);
				run("bcast, reduce (RFC-100 master loop, RFC-102 by the master)",
				    rf);
			}
		}
		if (want("crystal")) {
			run_oxr("crystal router", n, cr);
			cr[0] = bin("mpi_alltoallv");
			if (mpi_peer("mpi_alltoallv"))
				run_mpi("crystal router's pattern (Open MPI)", n, cr);
		}
		if (want("revoke") || want("reset"))
			run_oxr("revoke, reset", n, rv);
	}
}

/* Launch to a ready group and what a rank holds then (bench_startup.c),
 * and the launcher's whole run (startup_wall, a sample per run: what a
 * user waits for, the teardown in it).  OXR_LINKS passes through. */
static void bench_startups(void)
{
	char *su[] = { bin("bench_startup"), NULL }, *ms[] = { bin("mpi_startup"), NULL };
	int i;

	if (!want("startup"))
		return;
	for (i = 0; i < opt.nranks; i++) {
		int n = opt.ranks[i];
		struct oxr_bench_row row = { .bench = "startup_wall", .impl = "oxr", .ranks = n,
					     .unit = "ms" };
		double ms_wall = run_oxr("startup", n, su);
		if (oxr_bench_emit(&row, &ms_wall, 1))
			die("cannot write %s", opt.samples);
		if (mpi_peer("mpi_startup")) {
			row.impl = "mpi";
			ms_wall = run_mpi("startup (Open MPI)", n, ms);
			if (oxr_bench_emit(&row, &ms_wall, 1))
				die("cannot write %s", opt.samples);
		}
	}
}

/* ---- reading the samples back ------------------------------------------ */

static int str_field(const char *line, const char *key, char *out, size_t n)
{
	char pat[40];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(line, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	e = strchr(p, '"');
	if (!e || (size_t)(e - p) >= n)
		return 0;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = 0;
	return 1;
}

static int num_field(const char *line, const char *key, double *v)
{
	char pat[40], *end;
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p)
		return 0;
	*v = strtod(p + strlen(pat), &end);
	return end != p + strlen(pat);
}

static struct oxr_bench_set_row *add_row(struct oxr_bench_set *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		void *r = realloc(s->row, cap * sizeof(*s->row));
		if (!r)
			die("out of memory");
		s->row = r;
		s->cap = cap;
	}
	memset(&s->row[s->n], 0, sizeof(s->row[0]));
	return &s->row[s->n++];
}

/* A program's line, or a statistics-only line of perftest_p2p's (no
 * "samples", its figures as fields). */
static void load_line(struct oxr_bench_set *s, const char *line)
{
	struct oxr_bench_set_row *r = add_row(s);
	double ranks, bytes, warm, n;
	const char *p;
	size_t i;

	if (!str_field(line, "bench", r->bench, sizeof(r->bench)) ||
	    !str_field(line, "impl", r->impl, sizeof(r->impl)) ||
	    !str_field(line, "unit", r->unit, sizeof(r->unit)) || !num_field(line, "ranks", &ranks) ||
	    !num_field(line, "bytes", &bytes) || !num_field(line, "warmup", &warm) ||
	    !num_field(line, "n", &n) || n < 0)
		die("a sample line I cannot read: %.120s", line);
	r->ranks = (int)ranks;
	r->bytes = (size_t)bytes;
	r->warmup = (unsigned)warm;
	p = strstr(line, "\"samples\":[");
	if (!p) {
		num_field(line, "min", &r->st.min);
		num_field(line, "median", &r->st.median);
		num_field(line, "p99", &r->st.p99);
		num_field(line, "max", &r->st.max);
		num_field(line, "mean", &r->st.mean);
		num_field(line, "stdev", &r->st.stdev);
		r->st.n = (size_t)n;
		return;
	}
	p += strlen("\"samples\":[");
	r->samples = malloc(((size_t)n + 1) * sizeof(double));
	if (!r->samples)
		die("out of memory");
	for (i = 0; i < (size_t)n; i++) {
		char *end;
		r->samples[i] = strtod(p, &end);
		if (end == p)
			die("%s %s: %zu samples, not %.0f", r->bench, r->impl, i, n);
		p = *end == ',' ? end + 1 : end;
	}
	if (*p != ']')
		die("%s %s: more samples than n = %.0f", r->bench, r->impl, n);
	if (oxr_bench_stats_of(r->samples, (size_t)n, &r->st))
		die("out of memory");
}

static void load(struct oxr_bench_set *s)
{
	FILE *f = fopen(opt.samples, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		die("no samples came back (%s): %s", opt.samples, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		load_line(s, line);
		/* a program measures more than was asked (bench_pingpong both
		 * latency and bandwidth): only what was asked is reported */
		if (!want(s->row[s->n - 1].bench))
			free(s->row[--s->n].samples);
	}
	free(line);
	fclose(f);
}

static void cleanup(void)
{
	char p[160];

	snprintf(p, sizeof(p), "%s/run.log", opt.scratch);
	unlink(p);
	unlink(opt.samples);
	rmdir(opt.scratch);
}

int main(int argc, char **argv)
{
	struct oxr_bench_set set = { 0 };
	char *model = NULL;

	parse_args(argc, argv);
	if (!have_file("oxr-run"))
		die("%s/oxr-run is not there (-B BINDIR: the build's bin/)", opt.bindir);
	strcpy(opt.scratch, "/tmp/oxr-bench.XXXXXX");
	if (!mkdtemp(opt.scratch))
		die("mkdtemp: %s", strerror(errno));
	atexit(cleanup);
	snprintf(opt.samples, sizeof(opt.samples), "%s/samples.jsonl", opt.scratch);
	setenv("OXR_BENCH_SAMPLES", opt.samples, 1);
	setenv("OXR_TRANSPORT", opt.transport, 1);
	/* bench_rfc100's servers: this build's, not one found elsewhere */
	setenv("OXR_SERVER", bin("oxr-server"), 0);
	if (getuid() == 0) {
		setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
		setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	}
	if (opt.compare && strcmp(opt.transport, "verbs") && !in_path("mpirun"))
		fprintf(stderr, "oxr-bench: no mpirun: no Open MPI peer (Debian: openmpi-bin)\n");
	if (opt.compare && !strcmp(opt.transport, "verbs") && !in_path("ib_send_lat"))
		fprintf(stderr, "oxr-bench: no ib_send_lat: no perftest peer (Debian: perftest)\n");
	bench_p2p();
	bench_groups();
	bench_startups();
	set.transport = opt.transport;
	set.quick = opt.quick;
	set.cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	load(&set);
	oxr_bench_print_tables(&set, stdout);
	if (opt.model)
		model = oxr_bench_model(&set, stdout);
	if (opt.dat && ((mkdir(opt.dat, 0777) && errno != EEXIST) ||
			oxr_bench_write_dat(&set, opt.dat)))
		die("cannot write the data files into %s", opt.dat);
	if (opt.json && oxr_bench_write_json(&set, opt.json, model))
		die("cannot write %s", opt.json);
	free(model);
	while (set.n)
		free(set.row[--set.n].samples);
	free(set.row);
	return 0;
}
