/* SPDX-License-Identifier: MIT */
/*
 * bench_crystal: the crystal router against a dense pairwise exchange, both
 * over oxr, on the pattern of crystal_pattern.h (each rank sends a B-byte
 * record to D neighbours).
 *
 *   oxr-run -n N bench_crystal [--dests LIST] [--bytes B] [--reps R] [--iters I]
 *
 * crystal:  oxr_crystal_pack of the D records, oxr_crystal_transfer
 * pairwise: an OX_DATA message (a DATUM, 0 bytes when there is nothing) to
 *           every other rank, then one from every other rank: what an
 *           exchange costs when no rank knows who will send to it
 * msgs is rank 0's puts plus messages per exchange (crystal: ceil(log2 N) or
 * one fewer; pairwise: N-1), sent its bytes (crystal: stage and record
 * headers and the records it forwards for others included).  bench/run_crystal.sh runs it beside Open MPI.
 */
#include "crystal_pattern.h"

#include "oxr/crystal.h"
#include "oxr/transport.h"

static oxr_boot *boot;
static oxr_group *grp;
static int rank, size;
static uint8_t *payload;

static void check(oxr_status_t st, const char *what)
{
	if (st)
		die("rank %d: %s: %s (%s)", rank, what, oxr_strerror(st), oxr_errmsg());
}

static void crystal_once(oxr_crystal *cr, int d, size_t bytes)
{
	oxr_crystal_rec rec;
	int p, got = 0;

	for (p = 0; p < size; p++)
		if (cp_sends_to(rank, p, d, size))
			check(oxr_crystal_pack(cr, p, payload, bytes), "pack");
	check(oxr_crystal_transfer(cr, 60000), "transfer");
	while (oxr_crystal_next(cr, &rec) == OXR_OK)
		got += rec.len == bytes && cp_sends_to(rec.source, rank, d, size);
	if (got != d)
		die("rank %d: %d good records, want %d", rank, got, d);
}

static void pairwise_once(int d, size_t bytes)
{
	int p;

	for (p = 0; p < size; p++) {
		oxr_cmo c = { .tag = OXR_CMO_DATUM, .order = OXR_ORDER_HOST, .data = payload,
			      .len = cp_sends_to(rank, p, d, size) ? bytes : 0 };
		oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = &c };
		if (p != rank)
			check(oxr_send(grp, p, &m), "send");
	}
	for (p = 0; p < size; p++) {
		oxr_rmsg *m;
		if (p == rank)
			continue;
		check(oxr_recv(grp, p, 60000, &m), "recv");
		if (!m->msg.cmo || m->msg.cmo->len != (cp_sends_to(p, rank, d, size) ? bytes : 0))
			die("rank %d: a wrong message from %d", rank, p);
		oxr_rmsg_free(m);
	}
}

/* Every rank's block times to rank 0, which keeps the slowest of each. */
static void gather_worst(double *t, int reps)
{
	oxr_cmo c = { .tag = OXR_CMO_DATUM, .order = OXR_ORDER_HOST, .data = (const uint8_t *)t,
		      .len = (size_t)reps * sizeof(double) };
	oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = &c };
	int p, i;

	if (rank) {
		check(oxr_send(grp, 0, &m), "send times");
		return;
	}
	for (p = 1; p < size; p++) {
		oxr_rmsg *r;
		double v;
		check(oxr_recv(grp, p, 60000, &r), "recv times");
		if (!r->msg.cmo || r->msg.cmo->len != c.len)
			die("times from %d", p);
		for (i = 0; i < reps; i++) {
			memcpy(&v, r->msg.cmo->data + (size_t)i * sizeof(double), sizeof(v));
			if (v > t[i])
				t[i] = v;
		}
		oxr_rmsg_free(r);
	}
}

static void run(oxr_crystal *cr, const char *impl, int d, const struct cp_opts *o)
{
	double *t = malloc((size_t)o->reps * sizeof(double)), msgs = size - 1;
	double sent = (double)d * (double)o->bytes;
	int rep, i;

	if (!t)
		die("out of memory");
	for (i = 0; i < 3; i++) /* warm-up: links, buffers, the window's growth */
		cr ? crystal_once(cr, d, o->bytes) : pairwise_once(d, o->bytes);
	for (rep = 0; rep < o->reps; rep++) {
		double t0;
		check(oxr_boot_barrier(boot), "barrier");
		t0 = cp_now_us();
		for (i = 0; i < o->iters; i++)
			cr ? crystal_once(cr, d, o->bytes) : pairwise_once(d, o->bytes);
		t[rep] = (cp_now_us() - t0) / o->iters;
	}
	if (cr) {
		oxr_crystal_stats st;
		check(oxr_crystal_get_stats(cr, &st), "stats");
		msgs = (double)(st.puts + st.msgs);
		sent = (double)st.bytes_sent; /* forwarded records and headers too */
	}
	gather_worst(t, o->reps);
	if (!rank)
		cp_report(impl, size, d, o, t, msgs, sent);
	free(t);
}

int main(int argc, char **argv)
{
	struct cp_opts o;
	oxr_ctx *ctx;
	oxr_crystal *cr;
	int i;

	check(oxr_boot_open(&boot), "bootstrap");
	check(oxr_ctx_create(&ctx), "context");
	check(oxr_group_boot(ctx, boot, &grp), "group");
	rank = oxr_group_rank(grp);
	size = oxr_group_size(grp);
	cp_parse(argc, argv, size, &o);
	payload = calloc(1, o.bytes + 1);
	if (!payload)
		die("out of memory");
	check(oxr_crystal_create(grp, &cr), "crystal create");
	if (!rank)
		printf("# oxr over %s, %d ranks\n", oxr_ctx_transport(ctx), size);
	for (i = 0; i < o.ndests; i++) {
		run(cr, "oxr-crystal", o.dests[i], &o);
		run(NULL, "oxr-pairwise", o.dests[i], &o);
	}
	oxr_crystal_destroy(cr);
	free(payload);
	oxr_group_destroy(grp);
	oxr_ctx_destroy(ctx);
	oxr_boot_close(boot);
	return 0;
}
