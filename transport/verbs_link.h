/* SPDX-License-Identifier: MIT */
/*
 * The verbs half of a link: an RC queue pair, a receive ring the peer writes
 * into, credits, and one-sided writes into the peer's windows.  The link's
 * TCP socket stays open beside it, quiet, so a dead peer shows up as EOF at
 * once; every byte of the OX stream goes over the QP.
 */
#ifndef OXR_VERBS_LINK_H
#define OXR_VERBS_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport_impl.h"

struct vlink;

/* The wire size of an offer (what a side tells its peer about its QP). */
#define OXR_VOFFER_BYTES 64

/* Creates the QP (INIT) and the ring, posts the receives, writes the offer. */
oxr_status_t oxr_vlink_create(oxr_group *g, int peer, struct vlink **out,
			      uint8_t offer[OXR_VOFFER_BYTES]);
/* Moves the QP to RTS with the peer's offer (checked: it came from the network). */
oxr_status_t oxr_vlink_connect(oxr_group *g, struct vlink *v, const uint8_t offer[OXR_VOFFER_BYTES]);
/* Checks the peer's offer (it came from the network) and takes its ring;
 * leaves the QP alone (oxr_vlink_connect_cm moves it). */
oxr_status_t oxr_vlink_take_offer(oxr_group *g, struct vlink *v,
				  const uint8_t offer[OXR_VOFFER_BYTES]);
struct ibv_qp *oxr_vlink_qp(struct vlink *v);
/* The link's peer has a new rank (a shrink renumbered the group). */
void oxr_vlink_renumber(struct vlink *v, int peer);
/* verbs_cm.c: the same, with the QP connected by librdmacm on IP addresses
 * instead of by the offer's QPN/GID (OXR_VERBS_CM=rdmacm).  The acceptor of
 * the TCP link listens and tells the connector where, over fd. */
oxr_status_t oxr_vlink_connect_cm(oxr_group *g, struct vlink *v,
				  const uint8_t offer[OXR_VOFFER_BYTES], int acceptor, int fd,
				  const char *addr, int64_t deadline_ms);

/* Waits (bounded) until the writes posted on l have completed (an isend
 * followed by exit must not lose its bytes). */
void oxr_vlink_drain(oxr_group *g, struct link *l, int timeout_ms);
void oxr_vlink_destroy(oxr_group *g, struct vlink *v);

/* The OX stream, with recv(2)/sendmsg(2) conventions: -1 with errno EAGAIN
 * when nothing can move now. */
/* arena: buf is arena memory (the decoder's place for a payload), which a
 * rendezvous may READ into directly through the registration cache. */
ssize_t oxr_vlink_recv(oxr_group *g, struct link *l, void *buf, size_t n, int arena);
ssize_t oxr_vlink_sendv(oxr_group *g, struct link *l, const struct iovec *iov, int niov);
/* Bytes received and not yet read (the engine must read them). */
int oxr_vlink_buffered(const struct vlink *v);

/* The window memory a peer may write: registered with remote write. */
struct oxr_vmr;
oxr_status_t oxr_vmr_reg(oxr_group *g, void *base, size_t len, int remote_write,
			 struct oxr_vmr **out, uint64_t *addr, uint32_t *rkey);
void oxr_vmr_dereg(struct oxr_vmr *m);
/* One-sided write of src[0..len) to raddr/rkey on the peer of l; returns
 * when src may be reused.  Ordered before everything sent on l after it. */
oxr_status_t oxr_vlink_write(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			     const void *src, size_t len);

/* A small put is held back to go out with the next write of the stream (its
 * notification); this posts it alone if it is still waiting.  -1 on error. */
int oxr_vlink_flush(struct link *l);

/* The group's completion queue: created with the first verbs link. */
void oxr_vgroup_destroy(oxr_group *g);
/* Polls the CQ and acts on what completed; *progress = completions seen. */
oxr_status_t oxr_vgroup_poll(oxr_group *g, int *progress);
/* Before a sleep: arms the completion channel; 1 if something is already
 * there (then do not sleep). */
int oxr_vgroup_arm(oxr_group *g);
/* The device's async fd is readable: QP fatal, port down and device fatal
 * events fail the links they concern. */
void oxr_vgroup_async(oxr_group *g);
/* The channel fired (epoll said so): takes the event. */
void oxr_vgroup_event(oxr_group *g);

#endif
