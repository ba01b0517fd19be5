/* SPDX-License-Identifier: MIT */
/*
 * The revoke's reliable broadcast over the binomial graph (BMG), without a
 * transport: bmg.c holds the algorithm and why it reaches every live rank,
 * revoke.c drives it over links (a dead rank: a link that is down),
 * bmg_sim.c over a simulated group (tests/transport/test_bmg.c, oxr-bench
 * --simulate).  Not installed.
 */
#ifndef OXR_BMG_H
#define OXR_BMG_H

#include <stddef.h>
#include <stdint.h>

/* Two slots (directions) per distance 2^k < n, for any n < 2^31. */
#define OXR_BMG_SLOTS 62

/* One rank's broadcast: per slot the offset of its target from this rank
 * (off == n: every rank that way is dead), and whether that target has
 * the frame (bit i of sent).  264 bytes, whatever n. */
struct oxr_bmg {
	int32_t rank, n;
	uint64_t sent;
	uint32_t off[OXR_BMG_SLOTS];
};

/* 1 if `rank` is known dead (its link is down); NULL: none is. */
typedef int (*oxr_bmg_dead_fn)(void *arg, int rank);

/* 2 ceil(log2 n): the slots of a group of n, the most frames a rank sends. */
int oxr_bmg_slots(int n);
/* rank + dir 2^k mod n (dir +1 or -1; 2^k < n). */
int oxr_bmg_partner(int rank, int n, int k, int dir);
/* The overlay: the ranks 2^k away either way, each once, not `rank`,
 * fewer than max (max >= 2) when out is short.  Returns how many. */
int oxr_bmg_partners(int rank, int n, int *out, int max);
/* 1 if peer is one of them (providers see it through provider.h). */
int oxr_rank_is_partner(int rank, int peer, int size);

/* The broadcast reached `rank` from `from` (-1: it starts here): every slot
 * at its first rank not known dead; those at `from` have the frame. */
void oxr_bmg_start(struct oxr_bmg *b, int rank, int n, int from, oxr_bmg_dead_fn dead, void *arg);
/* The next rank to send the frame to (each at most once while it lives),
 * -1 when none is owed now. */
int oxr_bmg_next(struct oxr_bmg *b);
/* 1 if `who` has the frame from this rank (or sent it here). */
int oxr_bmg_has(const struct oxr_bmg *b, int who);
/* `who` turned out dead (its open failed, its link broke, after the frame
 * went or before): the slots aimed at it move on to the next rank not known
 * dead; oxr_bmg_next then gives their new targets.  Returns how many moved. */
int oxr_bmg_failed(struct oxr_bmg *b, int who, oxr_bmg_dead_fn dead, void *arg);

/*
 * bmg_sim.c: one broadcast over a simulated group, deliveries in FIFO
 * order (a BFS: a rank's depth is the round it is reached in).  dead:
 * ranks dead before it starts; crash (NULL: none): ranks that die as
 * their first frame arrives, before they forward it (their sender's link
 * breaks: it retargets).  known: 1, a dead rank's link is down already, so
 * senders skip it (the dead predicate); 0, each sender finds it by a send
 * that fails (counted in probes, no frame).  Bitmaps: bit i%8 of byte i/8.
 */
struct oxr_bmg_sim {
	int n, origin, known;
	const uint8_t *dead, *crash;
	/* out: per rank (n each; freed by oxr_bmg_sim_free) */
	int32_t *depth;   /* the round it was reached in; -1: never */
	uint32_t *sent;   /* frames it delivered */
	uint32_t *recvd;  /* frames delivered to it */
	uint32_t *probes; /* its sends that met a dead rank (or one that died with
			     the frame: no frame counted in sent) */
	/* out: totals over the ranks alive at the end */
	int rounds, live, reached;
	uint64_t frames, probes_all;
	uint32_t max_sent, max_recvd, max_probes;
	size_t state_bytes; /* a rank's broadcast state */
};
/* 0; -1 on bad arguments (origin dead, n < 1) or out of memory. */
int oxr_bmg_simulate(struct oxr_bmg_sim *s);
void oxr_bmg_sim_free(struct oxr_bmg_sim *s);

#endif
