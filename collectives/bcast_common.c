/* SPDX-License-Identifier: MIT */
/*
 * Counted messaging and object copies for bcast and reduce.  Counts are
 * per thread and per operation, like oxr_errmsg, so a program can print
 * what one call cost without a group-wide counter.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bcast_common.h"
#include "oxr_internal.h"

static _Thread_local oxr_bcast_counts counts;

void bc_counts_begin(void) { memset(&counts, 0, sizeof(counts)); }
void bc_counts_algo(int algo) { counts.algo = algo; }

void oxr_bcast_last_counts(oxr_bcast_counts *out)
{
	if (out)
		*out = counts;
}

static void count_out(const oxr_ox_msg *m)
{
	size_t n = 0;

	counts.sent++;
	if (m->tag == OXR_OX_DATA && m->cmo && oxr_cmo_size(m->cmo, &n) == OXR_OK)
		counts.bytes_sent += n;
}

oxr_status_t bc_send(oxr_group *g, int peer, const oxr_ox_msg *m)
{
	oxr_status_t st = oxr_send(g, peer, m);

	if (st == OXR_OK)
		count_out(m);
	return st;
}

oxr_status_t bc_isend(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req **r)
{
	oxr_status_t st = oxr_isend(g, peer, m, r);

	if (st == OXR_OK)
		count_out(m);
	return st;
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

/*
 * A receive that first polls, yielding the core between polls, for
 * OXR_COLL_SPIN_US, and only then sleeps in the transport's wait.  On an
 * oversubscribed machine (8 ranks on 2 cores) the ranks of a tree wait
 * most of the time; sleeping lets a core go idle, and waking an idle
 * (virtual) core costs tens of microseconds per hop, while a yielding
 * poller keeps the cores awake and hands the core to whoever has work.
 */
static oxr_status_t recv_polling(oxr_group *g, int peer, int timeout_ms, oxr_rmsg **out)
{
	long spin = oxr_ctx_get_params(oxr_group_ctx(g))->coll_spin_us;
	oxr_req *r;
	oxr_status_t st;
	double end;
	int done = 0;

	if (spin < 0)
		spin = BC_SPIN_US_DEFAULT; /* OXR_COLL_SPIN_US unset */
	if (spin == 0)
		return oxr_recv(g, peer, timeout_ms, out);
	if ((st = oxr_irecv(g, peer, &r)))
		return st;
	end = now_us() + (double)spin;
	for (;;) {
		st = oxr_req_test(r, &done);
		if (done || st || now_us() >= end)
			break;
		sched_yield();
	}
	if (!done && st == OXR_OK)
		st = oxr_req_wait(r, timeout_ms);
	if (st == OXR_OK && !(*out = oxr_req_take(r)))
		st = oxr_err(OXR_ERR_INVAL, "recv from rank %d: no message", peer);
	oxr_req_free(r);
	return st;
}

oxr_status_t bc_recv(oxr_group *g, int peer, int timeout_ms, oxr_rmsg **out)
{
	oxr_status_t st = recv_polling(g, peer, timeout_ms, out);
	size_t n = 0;

	if (st == OXR_OK) {
		counts.received++;
		if ((*out)->msg.tag == OXR_OX_DATA && (*out)->msg.cmo &&
		    oxr_cmo_size((*out)->msg.cmo, &n) == OXR_OK)
			counts.bytes_received += n;
	}
	return st;
}

oxr_status_t bc_send_cmo(oxr_group *g, int peer, const oxr_cmo *o)
{
	/* the transport only reads the object */
	oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = (oxr_cmo *)o };

	return bc_send(g, peer, &m);
}

oxr_status_t bc_send_mark(oxr_group *g, int peer, int32_t mark)
{
	oxr_ox_msg m = { .tag = OXR_OX_COMMAND, .sm = mark };

	return bc_send(g, peer, &m);
}

oxr_status_t bc_check_args(oxr_group *g, int root, const char *what)
{
	if (!g)
		return oxr_err(OXR_ERR_INVAL, "%s: no group", what);
	if (root < 0 || root >= oxr_group_size(g))
		return oxr_err(OXR_ERR_INVAL, "%s: root %d is not a rank of the group of %d", what,
			       root, oxr_group_size(g));
	return OXR_OK;
}
