/* SPDX-License-Identifier: MIT */
/*
 * The engine's mathcap (protocol doc section 7): what it runs, listed
 * exactly, since a master such as asir refuses to send what is not listed;
 * and the check of the master's mathcap (SM_setMathcap) before an object
 * goes out: a tag the master did not list is replaced by an error, as asir
 * does ("Mathcap violation").
 */
#include "engine_impl.h"
#include "oxr_internal.h"

#define OXR_SERVER_VERSION 20261203

/* Every SM code engine.c and sm_102.c run. */
static const int32_t sm_codes[] = {
	OXR_SM_popCMO, OXR_SM_popString, OXR_SM_mathcap, OXR_SM_pops, OXR_SM_setName,
	OXR_SM_evalName, OXR_SM_executeFunction, OXR_SM_shutdown, OXR_SM_setMathcap,
	OXR_SM_getsp, OXR_SM_dupErrors, OXR_SM_pushCMOtag, OXR_SM_nop,
	OXR_SM_set_rank_102, OXR_SM_tcp_accept_102, OXR_SM_tcp_connect_102, OXR_SM_reset_102,
	OXR_SM_bcast_102, OXR_SM_reduce_102,
};

/* Every CMO the codec reads and writes. */
static const int32_t cmo_tags[] = {
	OXR_CMO_NULL, OXR_CMO_INT32, OXR_CMO_DATUM, OXR_CMO_STRING, OXR_CMO_MATHCAP,
	OXR_CMO_LIST, OXR_CMO_MONOMIAL32, OXR_CMO_ZZ, OXR_CMO_QQ, OXR_CMO_ZERO,
	OXR_CMO_DMS_GENERIC, OXR_CMO_DMS_OF_N_VARIABLES, OXR_CMO_RING_BY_NAME,
	OXR_CMO_RECURSIVE_POLYNOMIAL, OXR_CMO_DISTRIBUTED_POLYNOMIAL,
	OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE, OXR_CMO_RATIONAL, OXR_CMO_COMPLEX,
	OXR_CMO_64BIT_MACHINE_DOUBLE, OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,
	OXR_CMO_IEEE_DOUBLE_FLOAT, OXR_CMO_BIGFLOAT32, OXR_CMO_INDETERMINATE, OXR_CMO_TREE,
	OXR_CMO_LAMBDA, OXR_CMO_ERROR, OXR_CMO_ERROR2,
};

#define N(x) (sizeof(x) / sizeof((x)[0]))

static oxr_cmo *int_list(oxr_arena *a, const int32_t *v, size_t n)
{
	oxr_cmo *l = oxr_cmo_new_list(a, (uint32_t)n);
	size_t i;

	for (i = 0; l && i < n; i++)
		if (!(l->kids[i] = oxr_cmo_new_int32(a, v[i])))
			return NULL;
	return l;
}

oxr_cmo *oxr_engine_mathcap(oxr_arena *a)
{
	oxr_cmo *mc = oxr_cmo_new_node(a, OXR_CMO_MATHCAP, 1);
	oxr_cmo *top = oxr_cmo_new_list(a, 3);
	oxr_cmo *sys = oxr_cmo_new_list(a, 4);
	oxr_cmo *data = oxr_cmo_new_list(a, 1), *pair = oxr_cmo_new_list(a, 2);

	if (!mc || !top || !sys || !data || !pair)
		return NULL;
	if (!(sys->kids[0] = oxr_cmo_new_int32(a, OXR_SERVER_VERSION)) ||
	    !(sys->kids[1] = oxr_cmo_new_string(a, "oxr-server")) ||
	    !(sys->kids[2] = oxr_cmo_new_string(a, "1")) ||
	    !(sys->kids[3] = oxr_cmo_new_string(a, "x86_64-linux")) ||
	    !(pair->kids[0] = oxr_cmo_new_int32(a, OXR_OX_DATA)) ||
	    !(pair->kids[1] = int_list(a, cmo_tags, N(cmo_tags))) ||
	    !(top->kids[1] = int_list(a, sm_codes, N(sm_codes))))
		return NULL;
	data->kids[0] = pair;
	top->kids[0] = sys;
	top->kids[2] = data;
	mc->kids[0] = top;
	return mc;
}

/* The list of CMO tags the master accepts in OX_DATA, or NULL (all). */
static const oxr_cmo *accepted(const oxr_cmo *mc)
{
	const oxr_cmo *top, *l;
	uint32_t i;

	if (!mc || mc->tag != OXR_CMO_MATHCAP || mc->nkids != 1)
		return NULL;
	top = mc->kids[0];
	if (top->tag != OXR_CMO_LIST || top->nkids < 3 || top->kids[2]->tag != OXR_CMO_LIST)
		return NULL;
	l = top->kids[2];
	for (i = 0; i < l->nkids; i++) {
		const oxr_cmo *p = l->kids[i];
		if (p->tag == OXR_CMO_LIST && p->nkids == 2 && p->kids[0]->tag == OXR_CMO_INT32 &&
		    p->kids[0]->v.i32 == OXR_OX_DATA && p->kids[1]->tag == OXR_CMO_LIST)
			return p->kids[1];
	}
	return NULL;
}

static int tag_in(const oxr_cmo *l, int32_t tag)
{
	uint32_t i;

	for (i = 0; i < l->nkids; i++)
		if (l->kids[i]->tag == OXR_CMO_INT32 && l->kids[i]->v.i32 == tag)
			return 1;
	return 0;
}

static int allows_rec(const oxr_cmo *l, const oxr_cmo *o)
{
	uint32_t i;

	if (!tag_in(l, o->tag))
		return 0;
	for (i = 0; i < o->nkids; i++)
		if (!allows_rec(l, o->kids[i]))
			return 0;
	return 1;
}

int eng_mathcap_allows(const oxr_engine *e, const oxr_cmo *o)
{
	const oxr_cmo *l = accepted(e->peer_mc);

	/* errors always go through: the master must hear of them */
	return !l || o->tag == OXR_CMO_ERROR2 || allows_rec(l, o);
}
