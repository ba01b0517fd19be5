/* SPDX-License-Identifier: MIT */
/*
 * What the oxr backends of the ping-pong driver (bench_pingpong.c's own and
 * bench_put.c's) share: failing loudly, the small control messages and the
 * barrier.  Included by them after their `boot`, `grp` and `small`.
 */
static void check(oxr_status_t st, const char *what)
{
	if (st)
		die("%s: %s (%s)", what, oxr_strerror(st), oxr_errmsg());
}

static void be_send_u32(int peer, uint32_t v)
{
	oxr_ox_msg m = { .tag = OXR_OX_DATA };

	oxr_arena_reset(small);
	m.cmo = oxr_cmo_new_int32(small, (int32_t)v);
	if (!m.cmo)
		die("out of memory");
	check(oxr_send(grp, peer, &m), "send");
}

static uint32_t be_recv_u32(int peer)
{
	oxr_rmsg *m;
	uint32_t v;

	check(oxr_recv(grp, peer, -1, &m), "recv");
	if (m->msg.tag != OXR_OX_DATA || !m->msg.cmo || m->msg.cmo->tag != OXR_CMO_INT32)
		die("expected an OX_DATA of a CMO_INT32");
	v = (uint32_t)m->msg.cmo->v.i32;
	oxr_rmsg_free(m);
	return v;
}

static void be_barrier(void)
{
	check(oxr_boot_barrier(boot), "barrier");
}
