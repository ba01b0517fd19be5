/* SPDX-License-Identifier: MIT */
/*
 * oxr-master: starts N oxr-servers and drives them, as an OpenXM master.
 *   oxr-master [-n N] [--plain] [--timeout MS] demo [--digits D]
 *       the RFC-102 motivating example: a D-digit integer sent from the
 *       master to each server in turn (RFC-100, N transfers) against one
 *       bcast (ceil(log2 N) rounds), and the sum collected by the master
 *       against one reduce; both times side by side
 *   oxr-master [-n N] [--plain] [--timeout MS] script [FILE]
 *       runs a script (FILE or stdin), one command per line:
 *         push I|all OBJ       OBJ in bconv text, e.g. (CMO_ZZ,5)
 *         cmd I|all SM_name    an OX_COMMAND (or its number)
 *         pop I                prints "I: OBJ" (SM_popCMO)
 *         read I               prints the next reply ("cmd I SM_popString")
 *         group                ranks and all links (plain: OpenXM links)
 *         bcast ROOT [OBJ]     reduce ROOT OP     reset     sync
 *         raw I HEX            bytes written as they are to server I
 *         expect-closed I      server I closed its data channel
 *       '#' starts a comment.  An error stops the script (exit 1).
 * --plain: no oxr token, so the servers link as plain RFC-102 peers.
 * --launcher 'CMD': the servers are started by a cluster's launcher, the
 *   words before the server's command line ("mpirun -n 4 --oversubscribe",
 *   "srun -n 4 --mpi=pmix"; N must match -n), and connect back to this
 *   master (OXR_MASTER_HOST: the address they reach it at).
 */
#include <ctype.h>
#include <errno.h>
#include <gmp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <oxr/cmo_text.h>
#include <oxr/master.h>

static int timeout_ms = 60000;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(const char *what)
{
	fprintf(stderr, "oxr-master: %s: %s\n", what, oxr_errmsg());
	return 1;
}

static void progress(const char *what, int done, int n, double t0)
{
	if (isatty(2))
		fprintf(stderr, "\r[oxr-master] %s: %d/%d servers, %.1f s ", what, done, n,
			now_s() - t0);
}

static void progress_end(void)
{
	if (isatty(2))
		fprintf(stderr, "\r%60s\r", "");
}

/* ---- demo ------------------------------------------------------------ */

static int demo(oxr_master *m, long digits, int plain)
{
	int n = oxr_master_size(m), i;
	oxr_arena *a;
	oxr_cmo *x, *got, *peer;
	mpz_t z, sum, want;
	size_t bytes;
	double t, t100, t102, c100, c102;
	const oxr_cmo *one = NULL;

	if (oxr_arena_create(&a))
		return fail("arena");
	mpz_inits(z, sum, want, NULL);
	mpz_ui_pow_ui(z, 10, (unsigned long)digits);
	mpz_sub_ui(z, z, 7); /* digits nines but the last */
	x = oxr_cmo_new_zz(a, z);
	if (!x || oxr_cmo_size(x, &bytes))
		return fail("the object");
	t = now_s();
	if (oxr_master_group(m, plain, timeout_ms))
		return fail("group");
	peer = oxr_cmo_new_zz_si(a, 1);
	one = peer;
	printf("group of %d oxr-servers linked in %.1f ms; links: %s\n", n, (now_s() - t) * 1e3,
	       plain ? "plain RFC-102 (OpenXM) TCP" : "authenticated oxr links");
	if (n > 1 && !oxr_master_call(m, 0, "oxr_link_transport", 1, &one) &&
	    !oxr_master_result(m, 0, timeout_ms, a, &got) && got->tag == OXR_CMO_STRING)
		printf("transport of the link 0-1: %.*s\n", (int)got->len, (const char *)got->data);
	printf("object: a ZZ of %ld digits, %zu bytes on the wire\n\n", digits, bytes);

	/* RFC-100: the master sends it to each server in turn */
	t = now_s();
	for (i = 0; i < n; i++) {
		progress("RFC-100 sends", i, n, t);
		if (oxr_master_push(m, i, x))
			return fail("push");
	}
	if (oxr_master_sync(m, timeout_ms))
		return fail("sync");
	t100 = now_s() - t;
	/* ... and collects every copy to add them up itself */
	t = now_s();
	mpz_set_ui(sum, 0);
	for (i = 0; i < n; i++) {
		progress("RFC-100 collect", i, n, t);
		if (oxr_master_result(m, i, timeout_ms, a, &got) || oxr_cmo_get_mpz(got, z))
			return fail("pop");
		mpz_add(sum, sum, z);
	}
	c100 = now_s() - t;
	progress_end();

	/* RFC-102: one send to the root, one bcast, one reduce */
	t = now_s();
	if (oxr_master_bcast(m, 0, x) || oxr_master_sync(m, timeout_ms))
		return fail("bcast");
	t102 = now_s() - t;
	t = now_s();
	if (oxr_master_reduce(m, 0, "+") || oxr_master_result(m, 0, timeout_ms, a, &got) ||
	    oxr_cmo_get_mpz(got, want))
		return fail("reduce");
	c102 = now_s() - t;
	for (i = 1; i < n; i++) /* the others hold CMO_NULL: the reduce's 0 */
		if (oxr_master_result(m, i, timeout_ms, a, &got) || got->tag != OXR_CMO_NULL)
			return fail("reduce (non-root result)");
	printf("%-34s %14s %14s %8s\n", "", "RFC-100 loop", "RFC-102", "ratio");
	printf("%-34s %11.2f ms %11.2f ms %7.2fx\n", "send x to every server", t100 * 1e3,
	       t102 * 1e3, t100 / t102);
	printf("%-34s %11.2f ms %11.2f ms %7.2fx\n", "collect the sum of all copies", c100 * 1e3,
	       c102 * 1e3, c100 / c102);
	printf("\nRFC-100: %d transfers through the master's links; RFC-102: one transfer to the root,"
	       "\nthen ceil(log2 %d) rounds between the servers (binomial tree, pipelined chain for"
	       "\nlarge objects), the reduce likewise back to the root.  Both move about n copies;"
	       "\nRFC-102 wins where the master's link is the narrow one (servers on other hosts);"
	       "\non one host every copy shares the same cores and memory, so expect a tie there.\n",
	       n, n);
	if (mpz_cmp(sum, want)) {
		fprintf(stderr, "oxr-master: the reduce's sum differs from the master's own\n");
		return 1;
	}
	printf("check: the reduce's sum equals the master's sum of the %d copies\n", n);
	mpz_clears(z, sum, want, NULL);
	oxr_arena_destroy(a);
	return 0;
}

/* ---- script ---------------------------------------------------------- */

static int parse_obj(const char *s, oxr_arena *a, oxr_cmo **out)
{
	oxr_text_item it;
	size_t used;

	if (oxr_text_parse(s, strlen(s), a, &it, &used) || it.is_frame)
		return -1;
	*out = it.msg.cmo;
	return 0;
}

static int parse_sm(const char *s, int32_t *sm)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*end && end != s) {
		*sm = (int32_t)v;
		return 0;
	}
	*sm = oxr_sm_of(s, strlen(s));
	return *sm < 0 ? -1 : 0;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

static int raw(oxr_master *m, int i, const char *hex)
{
	unsigned char buf[4096];
	size_t n = 0;

	for (; *hex && n < sizeof(buf); hex++) {
		if (isspace((unsigned char)*hex))
			continue;
		if (!isxdigit((unsigned char)hex[0]) || !isxdigit((unsigned char)hex[1]))
			return -1;
		buf[n++] = (unsigned char)(hexval(hex[0]) * 16 + hexval(hex[1]));
		hex++;
	}
	return write(oxr_master_data_fd(m, i), buf, n) == (ssize_t)n ? 0 : -1;
}

static int expect_closed(oxr_master *m, int i)
{
	struct pollfd p = { .fd = oxr_master_data_fd(m, i), .events = POLLIN };
	char c;

	return poll(&p, 1, timeout_ms) == 1 && read(p.fd, &c, 1) == 0 ? 0 : -1;
}

static int line_cmd(oxr_master *m, char *line, oxr_arena *a, int plain)
{
	char *cmd = strtok(line, " \t"), *arg1 = strtok(NULL, " \t"), *rest = strtok(NULL, "");
	int n = oxr_master_size(m), i, lo, hi;
	oxr_cmo *o;
	int32_t sm;

	if (!cmd)
		return 0;
	if (!strcmp(cmd, "group"))
		return oxr_master_group(m, plain, timeout_ms) ? fail("group") : 0;
	if (!strcmp(cmd, "reset"))
		return oxr_master_reset_102(m, timeout_ms) ? fail("reset") : 0;
	if (!strcmp(cmd, "sync"))
		return oxr_master_sync(m, timeout_ms) ? fail("sync") : 0;
	if (!arg1)
		goto bad;
	if (!strcmp(cmd, "bcast")) {
		o = NULL;
		if (rest && parse_obj(rest, a, &o))
			goto bad;
		return oxr_master_bcast(m, atoi(arg1), o) ? fail("bcast") : 0;
	}
	if (!strcmp(cmd, "reduce") && rest)
		return oxr_master_reduce(m, atoi(arg1), rest) ? fail("reduce") : 0;
	lo = !strcmp(arg1, "all") ? 0 : atoi(arg1);
	hi = !strcmp(arg1, "all") ? n - 1 : lo;
	if (lo < 0 || hi >= n)
		goto bad;
	for (i = lo; i <= hi; i++) {
		if (!strcmp(cmd, "push") && rest) {
			if (parse_obj(rest, a, &o))
				goto bad;
			if (oxr_master_push(m, i, o))
				return fail("push");
		} else if (!strcmp(cmd, "cmd") && rest) {
			if (parse_sm(rest, &sm))
				goto bad;
			if (oxr_master_cmd(m, i, sm))
				return fail("cmd");
		} else if (!strcmp(cmd, "pop") || !strcmp(cmd, "read")) {
			char *t;
			size_t len;
			if ((cmd[0] == 'p' ? oxr_master_pop(m, i, timeout_ms, a, &o)
					   : oxr_master_recv(m, i, timeout_ms, a, &o)) ||
			    oxr_text_print_cmo(o, &t, &len))
				return fail(cmd);
			printf("%d: %s\n", i, t);
			fflush(stdout);
			free(t);
		} else if (!strcmp(cmd, "raw") && rest) {
			if (raw(m, i, rest))
				goto bad;
		} else if (!strcmp(cmd, "expect-closed")) {
			if (expect_closed(m, i)) {
				fprintf(stderr, "oxr-master: server %d did not close its data channel\n", i);
				return 1;
			}
			printf("%d: closed\n", i);
		} else {
			goto bad;
		}
	}
	return 0;
bad:
	fprintf(stderr, "oxr-master: cannot read the script line (see oxr-master --help)\n");
	return 1;
}

static int script(oxr_master *m, FILE *f, int plain)
{
	char line[1 << 16];
	oxr_arena *a;
	int rc = 0, lineno = 0;

	if (oxr_arena_create(&a))
		return fail("arena");
	while (!rc && fgets(line, sizeof(line), f)) {
		char *h = strchr(line, '#'), *e;
		lineno++;
		if (h && !strchr(line, '"'))
			*h = 0;
		for (e = line + strlen(line); e > line && isspace((unsigned char)e[-1]);)
			*--e = 0;
		if ((rc = line_cmd(m, line, a, plain)))
			fprintf(stderr, "oxr-master: script line %d\n", lineno);
		oxr_arena_reset(a);
	}
	oxr_arena_destroy(a);
	return rc;
}

static const char usage_text[] =
	"usage: oxr-master [-n N] [--plain] [--timeout MS] [--launcher CMD] demo [--digits D]\n"
	"       oxr-master [-n N] [--plain] [--timeout MS] [--launcher CMD] script [FILE]\n"
	"\n"
	"Starts N oxr-servers, forms their group and drives them as an OpenXM master.\n"
	"demo: the RFC-102 motivating example, a D-digit integer sent to every server\n"
	"      in turn (RFC-100) against one bcast, and the sum collected against one\n"
	"      reduce, both timed side by side.\n"
	"script: runs FILE (default: standard input), one command per line:\n"
	"  push I|all OBJ     OBJ in bconv text, e.g. (CMO_ZZ,5)\n"
	"  cmd I|all SM       an OX_COMMAND, by name (SM_popCMO) or number\n"
	"  pop I              prints \"I: OBJ\" (SM_popCMO)\n"
	"  read I             prints the next reply (after \"cmd I SM_popString\")\n"
	"  group              ranks and every link (--plain: OpenXM links)\n"
	"  bcast ROOT [OBJ]   reduce ROOT OP   reset   sync\n"
	"  raw I HEX          bytes written as they are to server I\n"
	"  expect-closed I    server I closed its data channel\n"
	"  '#' starts a comment; a failing line stops the script.\n"
	"\n"
	"  -n N               how many servers (default 4)\n"
	"  --plain            no oxr token: the servers link as plain RFC-102 peers\n"
	"  --timeout MS       bound of each wait for the servers (default 60000)\n"
	"  --launcher CMD     start the servers with a cluster's launcher, CMD the words\n"
	"                     before the server's command line (\"mpirun -n 4\",\n"
	"                     \"srun -n 4 --mpi=pmix\"; its count must match -n); they\n"
	"                     connect back to OXR_MASTER_HOST (default: the host name)\n"
	"  --digits D         demo: digits of the integer (default 1000000)\n"
	"  -h, --help         print this help and exit\n"
	"\n"
	"OXR_SERVER names the oxr-server binary (default: next to oxr-master); the\n"
	"servers inherit the OXR_* environment.\n"
	"Exit status: 0 ok; 1 a launch, a server, a script line or the demo's check\n"
	"failed; 2 usage error.\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

int main(int argc, char **argv)
{
	int n = 4, plain = 0, i, rc;
	long digits = 1000000;
	const char *mode = NULL, *file = NULL, *launcher = NULL;
	oxr_master *m;
	FILE *f = stdin;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-n") && v) {
			n = atoi(v), i++;
		} else if (!strcmp(a, "--launcher") && v) {
			launcher = v, i++;
		} else if (!strcmp(a, "--plain")) {
			plain = 1;
		} else if (!strcmp(a, "--timeout") && v) {
			timeout_ms = atoi(v), i++;
		} else if (!strcmp(a, "--digits") && v) {
			digits = atol(v), i++;
		} else if (!mode && (!strcmp(a, "demo") || !strcmp(a, "script"))) {
			mode = a;
		} else if (mode && !strcmp(mode, "script") && !file) {
			file = a;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!mode || n < 1 || digits < 1) {
		usage(stderr);
		return 2;
	}
	if (file && !(f = fopen(file, "r"))) {
		fprintf(stderr, "oxr-master: %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (oxr_master_launch_with(launcher, NULL, n, timeout_ms, &m))
		return fail("launch");
	rc = !strcmp(mode, "demo") ? demo(m, digits, plain) : script(m, f, plain);
	oxr_master_destroy(m, 2000);
	if (f != stdin)
		fclose(f);
	return rc;
}
