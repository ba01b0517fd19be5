/* SPDX-License-Identifier: MIT */
/*
 * A LogGP model of oxr's collectives, fitted to the run's own point-to-point
 * rows and checked against its measured collectives.
 *
 * Fit (2 ranks, this transport):
 *   T0 = median ping-pong half round trip at the smallest size = L + 2o
 *   G  = 1 / (median streaming rate at the largest size)      [us per byte]
 *   g  = a streamed message's time at the smallest streamed size, less its
 *        bytes' share (m G): the per-message gap
 *   o  = min(g, T0 / 2): a ping-pong cannot tell o from L; under streaming
 *        the sender is busy for o per message, so g bounds o from above
 *   L  = T0 - 2o
 * Where no bandwidth rows were run, g = o = T0 / 4 (said in the output).
 *
 * The formulas follow the algorithms of collectives/ and transport/revoke.c,
 * with l = ceil(log2 P): the binomial trees' depth and the dissemination
 * barrier's and the crystal router's stage count.
 *
 * --simulate (oxr_bench_simulate) needs no ranks: it runs the revoke's
 * broadcast core (transport/bmg_sim.c), the heartbeat's ring detector
 * (transport/ring_sim.c) and the shrink's agreement core
 * (transport/agree_sim.c) over simulated groups up to 2^20 ranks, and
 * takes the bitmap barrier's window from its core, for the counts the
 * formulas assume (rounds, frames or pings per rank, periods to detect)
 * and memory per rank.
 *
 * LogGP assumes a processor per rank.  Where the measured group had more
 * ranks than the machine has cores, the check also gives the model times
 * max(1, P / cores), the slowdown of P ranks taking turns on the cores, as
 * a second column: a heuristic for reading this machine's points, not part
 * of the projection.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr_bench.h"
#include "agree.h"
#include "barrier_core.h"
#include "bmg.h"
#include "ring.h"

struct loggp {
	double L, o, g, G, T0;
	int guessed; /* no bandwidth rows: g and o are assumptions */
};

/* One projected operation: what it is called, its formula, its time. */
struct proj {
	const char *bench, *impl, *label, *formula;
	double (*t)(const struct loggp *m, double P, double bytes);
	size_t bytes; /* the size it is projected (and checked) at */
};

static double lg2(double P) { return ceil(log2(P)); }
static double hop(const struct loggp *m, double bytes) { return m->L + 2 * m->o + bytes * m->G; }

/* the bitmap barrier's tree is 16-nomial (barrier.c's default radix): d
 * levels, and a parent takes k - 1 requests in and sends k - 1 out */
static double t_bitmap(const struct loggp *m, double P, double b)
{
	double d = P > 1 ? ceil(log(P) / log(16) - 1e-9) : 0, k = P < 16 ? P : 16;

	return d * (2 * hop(m, b) + (k - 1) * m->o + (k - 2) * m->g);
}
static double t_dissem(const struct loggp *m, double P, double b) { return lg2(P) * hop(m, b); }
static double t_tree(const struct loggp *m, double P, double b) { return lg2(P) * hop(m, b); }

/* every stage swaps with one partner the records bound for the other half:
 * P/2 of them, each with its 16-byte header, behind a 32-byte stage header */
static double t_crystal(const struct loggp *m, double P, double b)
{
	return lg2(P) * hop(m, (P / 2) * (b + 16) + 32);
}

/* eager links: the revoker writes one frame to every other rank, one per gap */
static double t_revoke(const struct loggp *m, double P, double b)
{
	(void)b;
	return hop(m, 0) + (P - 2) * m->g;
}

/* links on demand: the binomial graph's broadcast (transport/bmg.c) takes
 * ceil(l/2) rounds with none dead (--simulate gives them, and 1 more at
 * most with 1% dead), and a forwarder's 2l frames leave one per gap, the
 * farthest jump last */
static double t_revoke_od(const struct loggp *m, double P, double b)
{
	double l = lg2(P);

	(void)b;
	return ceil(l / 2) * (hop(m, 0) + (2 * l - 1) * m->g);
}

/* the shrink's agreement (transport/agree.c, run by shrink.c): l rounds up
 * the tree of the live ranks and l down, each frame naming the failed
 * ranks, m = 4 bytes each (--simulate gives the rounds); the reset that
 * follows is t_reset's */
static double t_agree(const struct loggp *m, double P, double b)
{
	return 2 * lg2(P) * hop(m, b);
}

/* every rank writes P-1 balls, then takes P-1, each a receive overhead */
static double t_reset(const struct loggp *m, double P, double b)
{
	(void)b;
	return m->L + (P - 1) * (m->g + m->o);
}

static struct proj projs[] = {
	{ "barrier", "oxr", "barrier", "d (2 (L + 2o) + (k-1) o + (k-2) g), d = ceil(log16 P), "
	  "k = min(P, 16)", t_bitmap, 0 },
	{ "barrier", "oxr-dissemination", "dissem", "l (L + 2o)", t_dissem, 0 },
	{ "bcast", "oxr", "bcast", "l (L + 2o + m G)", t_tree, 8 },
	{ "reduce", "oxr", "reduce", "l (L + 2o + m G)", t_tree, 4 },
	{ "crystal", "oxr-crystal", "crystal",
	  "l (L + 2o + ((P/2)(m + 16) + 32) G)", t_crystal, 64 },
	{ "revoke", "oxr", "revoke", "L + 2o + (P - 2) g (eager links)", t_revoke, 0 },
	/* no run measures it yet (OXR_LINKS is eager by default): projected only */
	{ "revoke", "oxr-ondemand", "revoke-od",
	  "ceil(l/2) (L + 2o + (2l - 1) g) (links on demand)", t_revoke_od, 0 },
	{ "reset", "oxr", "reset", "L + (P - 1)(g + o)", t_reset, 0 },
	/* the agreement alone: bench_shrink measures it with the detection and
	 * the reset (run_control_plane.sh), no run isolates it */
	{ "shrink", "oxr-agree", "agree",
	  "2l (L + 2o + m G), m = 4 bytes a failed rank (the agreement; its reset is reset's)",
	  t_agree, 4 },
};
#define NPROJ (sizeof(projs) / sizeof(projs[0]))

/* The smallest or largest size of bench's oxr rows at 2 ranks. */
static const struct oxr_bench_set_row *edge(const struct oxr_bench_set *s, const char *bench,
					    int largest)
{
	const struct oxr_bench_set_row *best = NULL;
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct oxr_bench_set_row *r = &s->row[i];
		if (strcmp(r->bench, bench) || strcmp(r->impl, "oxr") || r->ranks != 2)
			continue;
		if (!best || (largest ? r->bytes > best->bytes : r->bytes < best->bytes))
			best = r;
	}
	return best;
}

static int fit(const struct oxr_bench_set *s, struct loggp *m)
{
	const struct oxr_bench_set_row *lat = edge(s, "latency", 0);
	const struct oxr_bench_set_row *big = edge(s, "bandwidth", 1);
	const struct oxr_bench_set_row *small = edge(s, "bandwidth", 0);
	const struct oxr_bench_set_row *lbig = edge(s, "latency", 1);

	if (!lat)
		return -1;
	memset(m, 0, sizeof(*m));
	m->T0 = lat->st.median;
	if (big && small && big->st.median > 0 && small->st.median > 0) {
		m->G = 1 / big->st.median; /* MB/s = bytes per us */
		m->g = (double)small->bytes / small->st.median - (double)small->bytes * m->G;
		if (m->g < 0)
			m->g = 0;
		m->o = m->g < m->T0 / 2 ? m->g : m->T0 / 2;
	} else {
		m->guessed = 1;
		m->g = m->o = m->T0 / 4;
		if (lbig && lbig->bytes > lat->bytes) /* the latency's slope instead */
			m->G = (lbig->st.median - lat->st.median) / (double)(lbig->bytes - lat->bytes);
	}
	m->L = m->T0 - 2 * m->o;
	return 0;
}

static void fmt_us(char *buf, size_t n, double us)
{
	if (us >= 1e6)
		snprintf(buf, n, "%.2f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, n, "%.2f ms", us / 1e3);
	else
		snprintf(buf, n, "%.1f us", us);
}

char *oxr_bench_model(const struct oxr_bench_set *s, FILE *out)
{
	struct loggp m;
	char *json = NULL, cell[32];
	size_t jlen = 0, k, i;
	double sum = 0, sum_fit = 0, sum_sh = 0;
	int p, nerr = 0, nfit = 0;
	const char *sep = "";
	FILE *j;

	if (fit(s, &m)) {
		fprintf(out, "\n# model: no 2-rank latency rows in this run to fit it to\n");
		return NULL;
	}
	j = open_memstream(&json, &jlen);
	if (!j)
		return NULL;
	fprintf(out, "\n# LogGP model, fitted to this run's 2-rank rows (transport %s)\n"
		"#   T0 = L + 2o = %.3f us (median half round trip, smallest size)\n"
		"#   L = %.3f us   o = %.3f us   g = %.3f us   G = %.6f us/byte (%.0f MB/s)\n",
		s->transport, m.T0, m.L, m.o, m.g, m.G, m.G > 0 ? 1 / m.G : 0);
	if (m.guessed)
		fprintf(out, "#   (no bandwidth rows: g = o = T0/4 assumed)\n");
	fprintf(out, "#   l = ceil(log2 P); m = bytes per rank\n");
	fprintf(j, "{\"L_us\": %.4f, \"o_us\": %.4f, \"g_us\": %.4f, \"G_us_per_byte\": %.8f, "
		"\"T0_us\": %.4f, \"assumed_g_o\": %s, \"formulas\": {", m.L, m.o, m.g, m.G, m.T0,
		m.guessed ? "true" : "false");
	for (k = 0; k < NPROJ; k++) {
		fprintf(out, "#   %-8s m=%-3zu %s\n", projs[k].label, projs[k].bytes,
			projs[k].formula);
		fprintf(j, "%s\"%s\": \"%s\"", k ? ", " : "", projs[k].label, projs[k].formula);
	}
	fprintf(j, "}, \"projection\": [");
	fprintf(out, "# %-8s", "P");
	for (k = 0; k < NPROJ; k++)
		fprintf(out, " %11s", projs[k].label);
	fputc('\n', out);
	for (p = 1; p <= 20; p++) {
		double P = (double)(1L << p);
		fprintf(out, "  %-8.0f", P);
		fprintf(j, "%s\n  {\"P\": %.0f", p > 1 ? "," : "", P);
		for (k = 0; k < NPROJ; k++) {
			double t = projs[k].t(&m, P, (double)projs[k].bytes);
			fmt_us(cell, sizeof(cell), t);
			fprintf(out, " %11s", cell);
			fprintf(j, ", \"%s_us\": %.4f", projs[k].label, t);
		}
		fputc('\n', out);
		fputc('}', j);
	}
	fprintf(j, "], \"check\": [");
	fprintf(out, "\n# model against the measured medians (error = (model - measured) /"
		" measured; shared: the model x max(1, P/cores))\n# %-8s %6s %5s %12s %12s %9s %12s %9s\n",
		"op", "P", "m", "model us", "measured us", "error", "shared us", "error");
	for (k = 0; k < NPROJ; k++)
		for (i = 0; i < s->n; i++) {
			const struct oxr_bench_set_row *r = &s->row[i];
			double t, e, sh, es;
			if (strcmp(r->bench, projs[k].bench) || strcmp(r->impl, projs[k].impl) ||
			    r->bytes != projs[k].bytes || r->ranks > 16 || r->st.median <= 0)
				continue;
			t = projs[k].t(&m, r->ranks, (double)r->bytes);
			e = (t - r->st.median) / r->st.median;
			sh = r->ranks > s->cores ? t * r->ranks / s->cores : t;
			es = (sh - r->st.median) / r->st.median;
			fprintf(out, "  %-8s %6d %5zu %12.2f %12.2f %+8.0f%% %12.2f %+8.0f%%\n",
				projs[k].label, r->ranks, r->bytes, t, r->st.median, 100 * e, sh,
				100 * es);
			fprintf(j, "%s\n  {\"op\": \"%s\", \"P\": %d, \"bytes\": %zu, \"model_us\": %.4f,"
				" \"measured_us\": %.4f, \"rel_error\": %.4f, \"shared_us\": %.4f, "
				"\"shared_rel_error\": %.4f}", sep, projs[k].label, r->ranks, r->bytes, t,
				r->st.median, e, sh, es);
			sum_sh += fabs(es);
			sep = ",";
			sum += fabs(e);
			nerr++;
			if (r->ranks <= s->cores) {
				sum_fit += fabs(e);
				nfit++;
			}
		}
	if (nerr)
		fprintf(out, "# mean |error|: %.0f%% over %d points; %.0f%% over the %d with P <= %d"
			" cores; with the P/cores factor %.0f%% over all %d\n", 100 * sum / nerr,
			nerr, nfit ? 100 * sum_fit / nfit : 0, nfit, s->cores, 100 * sum_sh / nerr,
			nerr);
	else
		fprintf(out, "# no measured collective rows to check the model against\n");
	fprintf(j, "\n], \"mean_abs_error\": %.4f, \"mean_abs_error_shared\": %.4f, \"points\": %d}",
		nerr ? sum / nerr : 0, nerr ? sum_sh / nerr : 0, nerr);
	if (fclose(j)) {
		free(json);
		return NULL;
	}
	return json;
}

/* ---- oxr-bench --simulate ------------------------------------------- */

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* One revoke broadcast over P ranks, `permille` of them dead (found by
 * failed sends: the worst case), from the first live rank. */
static int sim_revoke(FILE *out, int P, int permille)
{
	struct oxr_bmg_sim s = { .n = P, .known = 0 };
	uint8_t *dead = calloc(((size_t)P + 7) / 8, 1);
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)P;
	int r, l = oxr_bmg_slots(P) / 2;

	if (!dead)
		return -1;
	for (r = 1; r < P; r++) /* rank 0 lives: the origin */
		if ((int)(xorshift(&x) % 1000) < permille)
			dead[r / 8] |= (uint8_t)(1u << r % 8);
	s.dead = dead;
	if (oxr_bmg_simulate(&s)) {
		free(dead);
		return -1;
	}
	fprintf(out, "  %-8d %4.1f%% %7d %6d %8d %8u %8.2f %6d %8u %8u %8zu %s\n", P,
		permille / 10.0, s.live - s.reached, s.rounds, (l + 1) / 2, s.max_sent,
		(double)s.frames / s.live, 2 * l, s.max_recvd, s.max_probes, s.state_bytes,
		s.reached == s.live && s.max_sent <= (uint32_t)(2 * l) ? "ok" : "FAILED");
	oxr_bmg_sim_free(&s);
	free(dead);
	return s.reached == s.live ? 0 : -1;
}

/* The heartbeat's ring detector over P ranks, `permille` of them stopped
 * at once (the worst case: found one by one by the live rank above each
 * run), each rank learning only through its own watch. */
static int sim_detector(FILE *out, int P, int permille)
{
	struct oxr_ring_sim s = { .n = P };
	int32_t *die = malloc((size_t)P * sizeof(*die));
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)P ^ (uint64_t)permille << 40;
	int r, ok;

	if (!die)
		return -1;
	for (r = 0; r < P; r++)
		die[r] = r && (int)(xorshift(&x) % 1000) < permille ? 0 : OXR_RING_LIVES;
	s.die = die;
	if (oxr_ring_simulate(&s)) {
		free(die);
		return -1;
	}
	ok = !s.missed && !s.false_pos && !s.unwatched && !s.overwatched && !s.watcher_differs &&
	     !s.late && s.max_watchers <= 1 && s.max_sent <= OXR_RING_PINGS &&
	     s.max_recvd <= OXR_RING_PINGS && s.worst_delay == s.longest_run;
	fprintf(out, "  %-8d %4.1f%% %7d %6d %7d %5u %6.2f %5u %6.2f %5d %8d %8zu %s\n", P,
		permille / 10.0, s.missed, s.false_pos,
		s.unwatched + s.overwatched + s.watcher_differs, s.max_sent, s.mean_sent,
		s.max_recvd, s.mean_recvd, s.longest_run, s.worst_delay, s.state_bytes,
		ok ? "ok" : "FAILED");
	oxr_ring_sim_free(&s);
	free(die);
	return ok ? 0 : -1;
}

/* The shrink's agreement core over P ranks: `permille` of them dead before
 * it (known: their links are down), and the root dying as it decides (in
 * the round it takes its last report, before it sends), found a round
 * later by the ranks waiting on it.  Bounds (agree.c): 2l rounds with the dead
 * known, 2l + delay + 1 with the root dying; l frames sent and taken a
 * rank with none dying during it, l + 1 + 2c sent and 2l + 1 + 3c taken
 * with c dying. */
static int sim_agree(FILE *out, int P, int permille, int root_dies)
{
	struct oxr_agree_sim s = { .n = P, .known = 1, .delay = 1 };
	int32_t *die = malloc((size_t)P * sizeof(*die));
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)P ^ (uint64_t)permille << 40;
	int r, l = oxr_bmg_slots(P) / 2, c = root_dies, model, ok, h;
	uint32_t sent_bound = (uint32_t)(c ? l + 1 + 2 * c : l);
	uint32_t recvd_bound = (uint32_t)(c ? 2 * l + 1 + 3 * c : l);

	if (!die)
		return -1;
	for (r = 0; r < P; r++) /* rank 0 lives: the root */
		die[r] = r && (int)(xorshift(&x) % 1000) < permille ? 0 : OXR_AGREE_LIVES;
	/* the failure-free tree's height, floor(log2 P): the round the root
	 * takes its last report in */
	for (h = 0; (int64_t)2 << h <= P; h++)
		;
	if (root_dies)
		die[0] = h > 0 ? h : 1;
	s.die = die;
	if (oxr_agree_simulate(&s)) {
		free(die);
		return -1;
	}
	model = 2 * l + (root_dies ? s.delay + 1 : 0);
	ok = !s.stalled && !s.undecided && !s.disagree && !s.dead_missing && !s.live_in &&
	     s.rounds <= model && s.max_sent <= sent_bound && s.max_recvd <= recvd_bound;
	fprintf(out, "  %-8d %4.1f%% %-5s %5d %5d %5d %6d %6d %6u %6.2f %5u %6u %5u %8zu %s\n", P,
		permille / 10.0, root_dies ? "root" : "-", s.undecided, s.disagree, s.dead_missing,
		s.rounds, model, s.max_sent, s.live ? (double)s.frames / s.live : 0, sent_bound,
		s.max_recvd, recvd_bound, s.max_bytes, ok ? "ok" : "FAILED");
	oxr_agree_sim_free(&s);
	free(die);
	return ok ? 0 : -1;
}

/* The bitmap barrier at the default radix: its window from the core (the
 * same layout on every rank), its rounds from the tree's depth d (up, then
 * down: 2d), E = the tree's edge labels, half the slots of a parity; the
 * bound 80 E' with E' = 15 d >= E (barrier_bitmap.c), and issue 22's
 * 64 KiB. */
static int sim_barrier(FILE *out, int P)
{
	bar_core c;
	int d = 0, e;
	long long span = 1;
	size_t w, bound;

	if (bar_core_init(&c, BAR_ALG_BITMAP, P, 0, 16, 1))
		return -1;
	while (span < P) {
		span *= 16;
		d++;
	}
	w = bar_core_window_bytes(&c);
	e = c.nslots / 2;
	bound = 80 * 15 * (size_t)d;
	fprintf(out, "  %-8d %6d %6d %6d %10zu %12zu %s\n", P, 2 * d, 2 * c.nslots, e, w, bound,
		w <= bound && w <= 65536 ? "ok" : "FAILED");
	bar_core_free(&c);
	return w <= bound && w <= 65536 ? 0 : -1;
}

int oxr_bench_simulate(FILE *out)
{
	static const int sizes[] = { 1 << 10, 1 << 16, 100000, 1 << 20 };
	size_t i;
	int bad = 0;

	fprintf(out, "# revoke, links on demand: the binomial graph's broadcast (transport/bmg.c),"
		" simulated\n# (dead ranks found by failed sends; rank 0 revokes). model: "
		"ceil(l/2) rounds, 2l frames a rank, l = ceil(log2 P)\n"
		"# %-8s %5s %7s %6s %8s %8s %8s %6s %8s %8s %8s\n", "P", "dead", "missed",
		"rounds", "model", "frames", "mean", "bound", "recv max", "failed", "bytes");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bad |= sim_revoke(out, sizes[i], 0) | sim_revoke(out, sizes[i], 10);
	fprintf(out, "#   frames: most a rank sent (mean: per live rank); recv max: most a rank "
		"took;\n#   failed: most sends of a rank that met a dead rank; bytes: a rank's "
		"broadcast state\n\n");
	fprintf(out, "# heartbeat: the ring failure detector (transport/ring.c), simulated in "
		"periods of H\n# (OXR_HEARTBEAT_MS), ranks stopped at once, each rank learning "
		"only through its own watch.\n# model: %d pings sent and at most %d taken a rank "
		"a period, whatever P; a run of k\n# stopped ranks found in k periods, its j-th "
		"rank in j; %zu bytes a rank\n# %-8s %5s %7s %6s %7s %5s %6s %5s %6s %5s %8s %8s\n",
		OXR_RING_PINGS, OXR_RING_PINGS, sizeof(struct oxr_ring_watch), "P", "dead",
		"missed", "false", "watched", "sent", "mean", "taken", "mean", "run k", "periods",
		"bytes");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bad |= sim_detector(out, sizes[i], 10) | sim_detector(out, sizes[i], 300);
	fprintf(out, "#   missed: stopped ranks never found; false: found before a silent period;"
		"\n#   watched: live ranks not watched at the end by exactly one live rank, the"
		" next above;\n"
		"#   sent, taken: pings a rank a period, the most (mean: per live rank and period);"
		"\n#   run k: the longest run of stopped ranks; periods: the most from a stop "
		"to its find;\n#   bytes: a rank's detector state in the library\n\n"
		"# bitmap barrier, radix 16: the window from its core (collectives/barrier_core.c);"
		" rounds = 2 ceil(log16 P)\n# (up the tree and down, from the formula); "
		"bound 80 * 15 ceil(log16 P) bytes\n# (a request carries a run of ranks, not a "
		"bitmap: 80E in all; at most 64 KiB at 2^20)\n# %-8s %6s %6s %6s %10s %12s %s\n",
		"P", "rounds", "slots", "E", "window B", "bound B", "check");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bad |= sim_barrier(out, sizes[i]);
	fprintf(out, "\n# shrink's agreement on the failed ranks: its core (transport/agree.c) "
		"over a tree of the live\n# ranks, simulated in rounds (what oxr_group_shrink "
		"runs over the links, before its reset).\n# dead: before it, "
		"known (links down); dies root: rank 0 dies as it decides,\n# found a round later."
		"  model: 2l rounds (2l + 2 when the root dies); l frames sent and taken a\n"
		"# rank (l + 1 + 2c sent, 2l + 1 + 3c taken, c dying); LogGP: 2l (L + 2o + m G), "
		"m = 4 bytes a failed rank\n# %-8s %5s %-5s %5s %5s %5s %6s %6s %6s %6s %5s %6s "
		"%5s %8s\n", "P", "dead", "dies", "undec", "split", "miss", "rounds", "model",
		"frames", "mean", "bound", "taken", "bound", "bytes");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bad |= sim_agree(out, sizes[i], 0, 0) | sim_agree(out, sizes[i], 10, 0) |
		       sim_agree(out, sizes[i], 0, 1);
	fprintf(out, "#   undec: live ranks that never decided; split: live ranks that decided "
		"another list;\n#   miss: ranks dead before it not in the decision; frames, taken:"
		" the most a rank sent, took\n#   (mean: sent per live rank); bytes: the most a "
		"rank's state held (80, and 4 a failed rank)\n");
	return bad ? -1 : 0;
}
