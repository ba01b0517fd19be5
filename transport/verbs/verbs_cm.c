/* SPDX-License-Identifier: MIT */
/*
 * Connecting a verbs link's QP with librdmacm (OXR_VERBS_CM=rdmacm), for
 * clusters that address their HCAs by IP (IPoIB, RoCE): rdma_cm resolves
 * the address and the route (GID, path, MTU) instead of the offer's
 * QPN/GID/LID, and runs the IB CM handshake that moves both QPs.
 *
 * The QP stays oxr's own (created on the context's PD and the group's CQ):
 * rdma_connect / rdma_accept carry its number, rdma_init_qp_attr says how to
 * move it to RTR and RTS, and the active side ends with rdma_establish.  The
 * ring description still comes in the offer over the link's socket.
 *
 * Who listens: the acceptor of the TCP link, on OXR_RDMA_ADDR (default: the
 * IPv4 address of the device's IPv4-mapped GID), on a port the OS picks; it
 * tells the connector "OXRM" u32 port, 64 bytes of address over the socket.
 * A link-local IPv6 address needs its interface: fe80::1%dummy0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "verbs_dev.h"
#include "tcp/tcp_socket.h" /* the link's socket: where to connect */
#include "verbs_link.h"

#define TAG_CM 0x4d52584fu /* "OXRM" */

struct cm {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id, *conn;
};

static void cm_free(struct cm *c)
{
	if (c->conn)
		rdma_destroy_id(c->conn);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
}

static int left_ms(int64_t deadline)
{
	int64_t l = deadline - oxr_now_ms();

	return l < 0 ? 0 : l > 1000000 ? 1000000 : (int)l;
}

/*
 * The next event, which must be `want`; its id (a new one on CONNECT_REQUEST).
 * sock >= 0: the link's socket, watched too, since the peer says there that
 * its side failed (its ready, or a close) and no event would ever come.
 */
static oxr_status_t wait_event(struct cm *c, enum rdma_cm_event_type want, int64_t deadline,
			       int sock, struct rdma_cm_id **id, uint32_t *peer_qpn)
{
	struct pollfd pf[2] = { { .fd = c->ch->fd, .events = POLLIN }, { .fd = sock, .events = POLLIN } };
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int status;

	if (poll(pf, sock >= 0 ? 2 : 1, left_ms(deadline)) <= 0)
		return oxr_err(OXR_ERR_TIMEOUT, "rdma_cm: no %s in time", rdma_event_str(want));
	if (!(pf[0].revents & POLLIN))
		return oxr_err(OXR_ERR_PEER, "rdma_cm: the peer gave up before %s (its log says "
			       "why)", rdma_event_str(want));
	if (rdma_get_cm_event(c->ch, &ev))
		return oxr_err(OXR_ERR_IO, "rdma_get_cm_event: %s", strerror(errno));
	got = ev->event;
	status = ev->status;
	if (id)
		*id = ev->id;
	if (peer_qpn)
		*peer_qpn = ev->param.conn.qp_num;
	rdma_ack_cm_event(ev);
	if (got != want)
		return oxr_err(OXR_ERR_IO, "rdma_cm: %s (status %d) where %s was due%s",
			       rdma_event_str(got), status, rdma_event_str(want),
			       got == RDMA_CM_EVENT_ADDR_ERROR || got == RDMA_CM_EVENT_ROUTE_ERROR ?
			       ": is the address on the RDMA device's interface? (OXR_RDMA_ADDR)" :
			       "");
	return OXR_OK;
}

/* RTR then RTS with what rdma_cm resolved; our own ACK timeout and retries. */
static oxr_status_t move_qp(oxr_group *g, struct rdma_cm_id *id, struct ibv_qp *qp)
{
	static const enum ibv_qp_state states[] = { IBV_QPS_RTR, IBV_QPS_RTS };
	int i;

	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = states[i] };
		int mask;
		if (rdma_init_qp_attr(id, &a, &mask))
			return oxr_err(OXR_ERR_IO, "rdma_init_qp_attr(%s): %s", i ? "RTS" : "RTR",
				       strerror(errno));
		if (states[i] == IBV_QPS_RTS) {
			a.timeout = (uint8_t)oxr_vctx(g)->timeout;
			a.retry_cnt = (uint8_t)oxr_vctx(g)->retry;
		}
		if (ibv_modify_qp(qp, &a, mask))
			return oxr_err(OXR_ERR_IO, "verbs: QP to %s by rdma_cm: %s", i ? "RTS" : "RTR",
				       strerror(errno));
	}
	return OXR_OK;
}

/* "host", "a.b.c.d", "fe80::1%dev" into a sockaddr with port. */
static oxr_status_t parse_addr(const char *text, int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *ai;
	char portstr[16];
	int e;

	snprintf(portstr, sizeof(portstr), "%d", port);
	e = getaddrinfo(text, portstr, &hints, &ai);
	if (e)
		return oxr_err(OXR_ERR_INVAL, "rdma_cm address %s: %s", text, gai_strerror(e));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return OXR_OK;
}

/* Where this rank's RDMA device answers: OXR_RDMA_ADDR, else its IPv4-mapped GID. */
static oxr_status_t own_addr(oxr_group *g, char *out, size_t n)
{
	const char *e = g->ctx->params.rdma_addr;
	const uint8_t *gid = oxr_vctx(g)->dev.gid.raw;
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (e && *e) {
		snprintf(out, n, "%s", e);
		return OXR_OK;
	}
	if (memcmp(gid, v4map, 12))
		return oxr_err(OXR_ERR_INVAL, "OXR_VERBS_CM=rdmacm: the GID of %s is not an IPv4 "
			       "one; set OXR_RDMA_ADDR to the address of its interface",
			       oxr_vctx(g)->dev.name);
	snprintf(out, n, "%u.%u.%u.%u", gid[12], gid[13], gid[14], gid[15]);
	return OXR_OK;
}

static oxr_status_t same_device(oxr_group *g, struct rdma_cm_id *id)
{
	const char *name = id->verbs ? ibv_get_device_name(id->verbs->device) : "none";

	if (strcmp(name, oxr_vctx(g)->dev.name) || id->port_num != oxr_vctx(g)->dev.port)
		return oxr_err(OXR_ERR_INVAL, "rdma_cm: the address is on %s port %u, but this "
			       "rank uses %s port %u (OXR_RDMA_ADDR or OXR_DEVICE)", name,
			       id->port_num, oxr_vctx(g)->dev.name, oxr_vctx(g)->dev.port);
	return OXR_OK;
}

static oxr_status_t passive(oxr_group *g, struct cm *c, struct vlink *v, int fd,
			    const char *addr, int64_t deadline)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .rnr_retry_count = 6 };
	struct sockaddr_storage ss;
	uint8_t msg[72] = { 0 };
	char host[64];
	uint32_t qpn;
	oxr_status_t st;

	oxr_store32(msg, TAG_CM, OXR_ORDER_LITTLE);
	if ((st = own_addr(g, host, sizeof(host))) || (st = parse_addr(host, 0, &ss)) ||
	    ((rdma_bind_addr(c->id, (struct sockaddr *)&ss) || rdma_listen(c->id, 1)) &&
	     (st = oxr_err(OXR_ERR_IO, "rdma_cm: listening on %s: %s", host, strerror(errno))))) {
		/* port 0: the connector stops waiting for an address that will not come */
		char why[200];
		snprintf(why, sizeof(why), "%s", oxr_errmsg());
		(void)oxr_tcp_io(fd, msg, sizeof(msg), 1, deadline, addr);
		return oxr_err(st, "%s", why);
	}
	oxr_store32(msg + 4, ntohs(rdma_get_src_port(c->id)), OXR_ORDER_LITTLE);
	memcpy(msg + 8, host, strlen(host));
	if ((st = oxr_tcp_io(fd, msg, sizeof(msg), 1, deadline, addr)) ||
	    (st = wait_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, deadline, fd, &c->conn, &qpn)) ||
	    (st = same_device(g, c->conn)))
		return st;
	(void)qpn;
	if ((st = move_qp(g, c->conn, oxr_vlink_qp(v))))
		return st;
	p.qp_num = oxr_vlink_qp(v)->qp_num;
	p.srq = 1; /* a stream QP takes its receives from the group's SRQ */
	if (rdma_accept(c->conn, &p))
		return oxr_err(OXR_ERR_IO, "rdma_accept: %s", strerror(errno));
	/* not the socket here: the peer's ready may come before this event */
	return wait_event(c, RDMA_CM_EVENT_ESTABLISHED, deadline, -1, NULL, NULL);
}

static oxr_status_t active(oxr_group *g, struct cm *c, struct vlink *v, int fd,
			   const char *addr, int64_t deadline)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 6 };
	struct sockaddr_storage ss;
	uint8_t msg[72];
	char host[65];
	oxr_status_t st;

	if ((st = oxr_tcp_io(fd, msg, sizeof(msg), 0, deadline, addr)))
		return st;
	if (oxr_load32(msg, OXR_ORDER_LITTLE) != TAG_CM || oxr_load32(msg + 4, OXR_ORDER_LITTLE) > 65535)
		return oxr_err(OXR_ERR_PROTO, "rdma_cm: malformed listener address from %s", addr);
	if (oxr_load32(msg + 4, OXR_ORDER_LITTLE) == 0)
		return oxr_err(OXR_ERR_PEER, "rdma_cm: the peer at %s could not listen for the "
			       "QP's connection (its log says why)", addr);
	memcpy(host, msg + 8, 64);
	host[64] = 0;
	if ((st = parse_addr(host, (int)oxr_load32(msg + 4, OXR_ORDER_LITTLE), &ss)))
		return st;
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&ss, left_ms(deadline)))
		return oxr_err(OXR_ERR_IO, "rdma_resolve_addr %s: %s", host, strerror(errno));
	if ((st = wait_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, fd, NULL, NULL)) ||
	    (st = same_device(g, c->id)))
		return st;
	if (rdma_resolve_route(c->id, left_ms(deadline)))
		return oxr_err(OXR_ERR_IO, "rdma_resolve_route %s: %s", host, strerror(errno));
	if ((st = wait_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, fd, NULL, NULL)))
		return st;
	p.qp_num = oxr_vlink_qp(v)->qp_num;
	p.srq = 1;
	if (rdma_connect(c->id, &p))
		return oxr_err(OXR_ERR_IO, "rdma_connect %s: %s", host, strerror(errno));
	/* a QP of our own: rdma_cm answers CONNECT_RESPONSE and leaves the moves to us */
	if ((st = wait_event(c, RDMA_CM_EVENT_CONNECT_RESPONSE, deadline, fd, NULL, NULL)) ||
	    (st = move_qp(g, c->id, oxr_vlink_qp(v))))
		return st;
	if (rdma_establish(c->id))
		return oxr_err(OXR_ERR_IO, "rdma_establish: %s", strerror(errno));
	return OXR_OK;
}

oxr_status_t oxr_vlink_connect_cm(oxr_group *g, struct vlink *v,
				  const uint8_t offer[OXR_VOFFER_BYTES], int acceptor, int fd,
				  const char *addr, int64_t deadline_ms)
{
	struct cm c = { 0 };
	oxr_status_t st = oxr_vlink_take_offer(g, v, offer);

	if (st)
		return st;
	c.ch = rdma_create_event_channel();
	if (!c.ch || rdma_create_id(c.ch, &c.id, NULL, RDMA_PS_TCP)) {
		st = oxr_err(OXR_ERR_IO, "rdma_cm: %s (is rdma_ucm loaded?)", strerror(errno));
		cm_free(&c);
		return st;
	}
	st = acceptor ? passive(g, &c, v, fd, addr, deadline_ms)
		      : active(g, &c, v, fd, addr, deadline_ms);
	if (st)
		st = oxr_err(st, "QP by rdma_cm: %s", oxr_errmsg());
	/* the QP is ours and stays connected; the CM ids only set it up */
	cm_free(&c);
	return st;
}
