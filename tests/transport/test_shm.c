/* SPDX-License-Identifier: MIT */
/*
 * The shm provider beyond what every provider's suite checks on it
 * (test_link_tcp, test_revoke, test_fault, the collectives run on shm too):
 * which links it takes, a ring far smaller than the messages, a peer that
 * writes a counter out of bounds, and that no ring outlives its link.
 * Pairs of one process (common/link_pair.h): both rings of a link are
 * mapped here twice, once by their owner and once by their writer.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_pair.h"
#include "oxr/cmo.h"
#include "shm/shm_ring.h"

/* Lines of /proc/self/maps that map a ring, their start addresses in at[]. */
static int ring_maps(uintptr_t *at, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "memfd:oxr-shm-ring")) {
			if (n < max)
				at[n] = (uintptr_t)strtoull(line, NULL, 16);
			n++;
		}
	fclose(f);
	return n;
}

/* Descriptors of this process that are ring memfds. */
static int ring_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], to[256];
	int n = 0;

	cr_assert(d);
	while ((e = readdir(d))) {
		ssize_t k;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, to, sizeof(to) - 1);
		if (k > 0) {
			to[k] = 0;
			n += strstr(to, "memfd:oxr-shm-ring") != NULL;
		}
	}
	closedir(d);
	return n;
}

static int dev_shm_entries(void)
{
	DIR *d = opendir("/dev/shm");
	int n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A pair made under the environment given (NULL values unset). */
static void pair_with(struct pair *p, const char *transport, const char *shm, const char *ring)
{
	const char *vars[] = { "OXR_TRANSPORT", "OXR_SHM", "OXR_SHM_RING_BYTES" };
	const char *vals[] = { transport, shm, ring };
	int i;

	for (i = 0; i < 3; i++) {
		if (vals[i])
			setenv(vars[i], vals[i], 1);
		else
			unsetenv(vars[i]);
	}
	make_pair(p, 2, "little", "little");
	for (i = 0; i < 3; i++)
		unsetenv(vars[i]);
	cr_assert_eq(link_up(p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
}

/* Sends n bytes of a pattern from s to d's rank and checks they came whole
 * (both groups driven here: a ring smaller than the message needs both). */
static void send_checked(oxr_group *s, int to, oxr_group *d, int from, size_t n, unsigned seed)
{
	oxr_arena *ar;
	uint8_t *buf = malloc(n ? n : 1);
	oxr_req *sr, *rr;
	oxr_rmsg *m;
	int done_s = 0, done_r = 0;
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)(seed + i * 31);
	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	oxr_ox_msg msg = { .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_bytes(ar, OXR_CMO_DATUM, buf, n) };
	cr_assert_eq(oxr_irecv(d, from, &rr), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_isend(s, to, &msg, &sr), OXR_OK, "%s", oxr_errmsg());
	while (!done_s || !done_r) {
		oxr_group_progress(s);
		oxr_group_progress(d);
		cr_assert_geq(oxr_req_test(sr, &done_s), 0, "%s", oxr_errmsg());
		cr_assert_geq(oxr_req_test(rr, &done_r), 0, "%s", oxr_errmsg());
	}
	cr_assert_eq(oxr_req_wait(rr, 1000), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_req_wait(sr, 1000), OXR_OK, "%s", oxr_errmsg());
	m = oxr_req_take(rr);
	cr_assert_eq(m->msg.cmo->tag, OXR_CMO_DATUM);
	cr_assert_eq(m->msg.cmo->len, n);
	cr_assert(n == 0 || !memcmp(m->msg.cmo->data, buf, n), "%zu bytes came changed", n);
	oxr_rmsg_free(m);
	oxr_arena_destroy(ar);
	free(buf);
}

static const struct provider shm_pv = { .name = "shm" };

Test(shm, who_takes_the_links)
{
	static const struct {
		const char *transport, *shm, *want;
	} t[] = {
		{ NULL, NULL, "shm" },      /* auto: shared memory on this host */
		{ "shm", NULL, "shm" },
		{ NULL, "0", "tcp" },       /* OXR_SHM=0 turns it off */
		{ "tcp", NULL, "tcp" },     /* a named transport carries every link */
		{ "tcp", "1", "shm" },      /* unless OXR_SHM=1 says otherwise */
		{ "shm", "0", "tcp" },
	};
	struct pair p;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		pair_with(&p, t[i].transport, t[i].shm, NULL);
		cr_assert_str_eq(oxr_link_transport(p.a, 1), t[i].want,
				 "OXR_TRANSPORT=%s OXR_SHM=%s", t[i].transport ? t[i].transport : "",
				 t[i].shm ? t[i].shm : "");
		cr_assert_str_eq(oxr_link_transport(p.b, 0), t[i].want);
		send_checked(p.b, 0, p.a, 1, 100, (unsigned)i);
		free_pair(&p);
	}
	/* ranks that say they are on two hosts never share memory */
	make_pair_env(&p, &shm_pv, "OXR_HOST_ID", "node-a", "node-b");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(oxr_link_transport(p.a, 1), "tcp");
	cr_assert_eq(oxr_link_same_host(p.a, 1), 0);
	send_checked(p.b, 0, p.a, 1, 100, 9);
	free_pair(&p);
}

Test(shm, a_bad_ring_size_is_refused_with_the_fix)
{
	oxr_ctx *c = NULL;

	setenv("OXR_SHM_RING_BYTES", "12288", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "not a power of two"), "%s", oxr_errmsg());
	setenv("OXR_SHM_RING_BYTES", "1000", 1);
	cr_assert_neq(oxr_ctx_create(&c), OXR_OK, "below 4096 and no multiple of it");
	unsetenv("OXR_SHM_RING_BYTES");
}

Test(shm, a_small_ring_carries_messages_far_larger_both_ways)
{
	static const size_t sizes[] = { 0, 1, 4000, 4096, 4097, 12345, 65536, 1u << 20, 3u << 20 };
	struct pair p;
	size_t i;

	pair_with(&p, "shm", NULL, "4096");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		send_checked(p.b, 0, p.a, 1, sizes[i], (unsigned)i);
		send_checked(p.a, 1, p.b, 0, sizes[i], (unsigned)i + 100);
	}
	free_pair(&p);
}

/* Pieces of 64 KiB and more go by single copy (the receiver reads the
 * sender's memory); a receiver that refuses it (here OXR_SHM_CMA_BYTES=0 on
 * its side, as where the kernel forbids process_vm_readv) gets them through
 * the ring, and the sender copies from then on. */
Test(shm, single_copy_and_its_refusal_deliver_the_same_bytes)
{
	static const char *const cma[][2] = { { "65536", "65536" }, { "0", "65536" },
					      { "65536", "0" }, { "4096", "4096" } };
	static const size_t sizes[] = { 65535, 65536, 65537, 1u << 20, 5u << 20, 100 };
	struct pair p;
	size_t i, j;

	for (i = 0; i < sizeof(cma) / sizeof(cma[0]); i++) {
		make_pair_env(&p, &shm_pv, "OXR_SHM_CMA_BYTES", cma[i][0], cma[i][1]);
		cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			send_checked(p.b, 0, p.a, 1, sizes[j], (unsigned)(i * 10 + j));
			send_checked(p.a, 1, p.b, 0, sizes[j], (unsigned)(i * 10 + j + 5));
		}
		free_pair(&p);
	}
}

Test(shm, a_counter_out_of_bounds_fails_the_link_and_nothing_else)
{
	struct pair p;
	uintptr_t at[8];
	oxr_rmsg *m;
	oxr_status_t st;
	int n, i;

	pair_with(&p, "shm", NULL, NULL);
	send_checked(p.b, 0, p.a, 1, 10, 1);
	n = ring_maps(at, 8);
	cr_assert_eq(n, 4, "two rings, each mapped by its owner and its writer: %d maps", n);
	/* what a broken or hostile writer could store: a tail past the ring */
	for (i = 0; i < n; i++)
		atomic_store((_Atomic uint64_t *)(at[i] + offsetof(struct oxr_shm_ring, tail)),
			     UINT64_C(1) << 40);
	st = oxr_recv(p.a, 1, 2000, &m);
	cr_assert(st != OXR_OK && st != OXR_ERR_TIMEOUT, "%d %s", st, oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), "broke the receive ring"), "%s", oxr_errmsg());
	cr_assert(!oxr_link_is_open(p.a, 1));
	free_pair(&p);
	cr_assert_eq(ring_maps(at, 8), 0, "the broken link's rings are unmapped");
}

Test(shm, no_ring_outlives_its_link)
{
	struct pair p;
	uintptr_t at[8];
	int shm0 = dev_shm_entries();

	pair_with(&p, "shm", NULL, NULL);
	cr_assert_eq(ring_maps(at, 8), 4);
	send_checked(p.b, 0, p.a, 1, 1000, 2);
	send_checked(p.a, 1, p.b, 0, 1000, 3);
	/* once both sides moved traffic each knows the peer mapped its ring */
	cr_assert_eq(ring_fds(), 0, "the memfds are closed once the peer mapped them");
	free_pair(&p);
	cr_assert_eq(ring_maps(at, 8), 0, "unmapped when the groups go");
	cr_assert_eq(ring_fds(), 0);
	cr_assert_eq(dev_shm_entries(), shm0, "nothing left in /dev/shm (memfds have no name)");
}
