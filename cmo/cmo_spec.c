/* SPDX-License-Identifier: MIT */
/* The CMO layout table (see cmo_spec.h). */
#include <string.h>

#include "oxr/cmo.h"
#include "cmo_spec.h"

#define O(k) { OP_##k, W_ANY }
#define K(w) { OP_KID, W_##w }

/* Indexed by tag: the decoder looks a tag up once per object. */
static const struct cmo_spec small_specs[64] = {
	[OXR_CMO_NULL] = { OXR_CMO_NULL, "CMO_NULL", 0, { O(END) } },
	[OXR_CMO_INT32] = { OXR_CMO_INT32, "CMO_INT32", 0, { O(I32) } },
	[OXR_CMO_DATUM] = { OXR_CMO_DATUM, "CMO_DATUM", 0, { O(BYTES) } },
	[OXR_CMO_STRING] = { OXR_CMO_STRING, "CMO_STRING", 0, { O(BYTES) } },
	[OXR_CMO_MATHCAP] = { OXR_CMO_MATHCAP, "CMO_MATHCAP", 1, { K(LIST) } },
	[OXR_CMO_LIST] = { OXR_CMO_LIST, "CMO_LIST", 0, { O(COUNT), O(KIDS) } },
	[OXR_CMO_MONOMIAL32] = { OXR_CMO_MONOMIAL32, "CMO_MONOMIAL32", 1, { O(WORDS), K(ANY) } },
	[OXR_CMO_ZZ] = { OXR_CMO_ZZ, "CMO_ZZ", 0, { O(ZZ) } },
	[OXR_CMO_QQ] = { OXR_CMO_QQ, "CMO_QQ", 2, { O(BARE_ZZ), O(BARE_ZZ) } },
	[OXR_CMO_ZERO] = { OXR_CMO_ZERO, "CMO_ZERO", 0, { O(END) } },
	[OXR_CMO_DMS_GENERIC] = { OXR_CMO_DMS_GENERIC, "CMO_DMS_GENERIC", 0, { O(END) } },
	[OXR_CMO_DMS_OF_N_VARIABLES] = { OXR_CMO_DMS_OF_N_VARIABLES, "CMO_DMS_OF_N_VARIABLES", 1, { K(LIST) } },
	[OXR_CMO_RING_BY_NAME] = { OXR_CMO_RING_BY_NAME, "CMO_RING_BY_NAME", 1, { K(STRING) } },
	[OXR_CMO_RECURSIVE_POLYNOMIAL] = { OXR_CMO_RECURSIVE_POLYNOMIAL, "CMO_RECURSIVE_POLYNOMIAL", 2, { K(LIST), K(ANY) } },
	[OXR_CMO_DISTRIBUTED_POLYNOMIAL] = { OXR_CMO_DISTRIBUTED_POLYNOMIAL, "CMO_DISTRIBUTED_POLYNOMIAL", 1,
	  { O(COUNT), K(RINGDEF), { OP_KIDS, W_TERM } } },
	[OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE] = { OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE, "CMO_POLYNOMIAL_IN_ONE_VARIABLE", 0,
	  { O(COUNT), O(I32), O(PAIRS) } },
	[OXR_CMO_RATIONAL] = { OXR_CMO_RATIONAL, "CMO_RATIONAL", 2, { K(ANY), K(ANY) } },
	[OXR_CMO_COMPLEX] = { OXR_CMO_COMPLEX, "CMO_COMPLEX", 2, { K(ANY), K(ANY) } },
	[OXR_CMO_64BIT_MACHINE_DOUBLE] = { OXR_CMO_64BIT_MACHINE_DOUBLE, "CMO_64BIT_MACHINE_DOUBLE", 0, { O(F64) } },
	[OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE] = { OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE, "CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE", 0,
	  { O(DOUBLES) } },
	[OXR_CMO_IEEE_DOUBLE_FLOAT] = { OXR_CMO_IEEE_DOUBLE_FLOAT, "CMO_IEEE_DOUBLE_FLOAT", 0, { O(F64) } },
	[OXR_CMO_BIGFLOAT32] = { OXR_CMO_BIGFLOAT32, "CMO_BIGFLOAT32", 3,
	  { O(BARE_I32), O(BARE_I32), O(BARE_I32), O(WORDS) } },
	[OXR_CMO_INDETERMINATE] = { OXR_CMO_INDETERMINATE, "CMO_INDETERMINATE", 1, { K(ANY) } },
	[OXR_CMO_TREE] = { OXR_CMO_TREE, "CMO_TREE", 3, { K(STRING), K(LIST), K(LIST) } },
	[OXR_CMO_LAMBDA] = { OXR_CMO_LAMBDA, "CMO_LAMBDA", 2, { K(LIST), K(TREE) } },
};

static const struct cmo_spec large_specs[] = {
	{ OXR_CMO_ERROR, "CMO_ERROR", 0, { O(END) } },
	{ OXR_CMO_ERROR2, "CMO_ERROR2", 1, { K(ANY) } },
};

#define N_LARGE (sizeof(large_specs) / sizeof(large_specs[0]))

const struct cmo_spec *oxr_cmo_spec(int32_t tag)
{
	size_t i;

	if (tag >= 0 && tag < 64)
		return small_specs[tag].name ? &small_specs[tag] : NULL;
	for (i = 0; i < N_LARGE; i++)
		if (large_specs[i].tag == tag)
			return &large_specs[i];
	return NULL;
}

uint8_t oxr_cmo_counted_op(const struct cmo_spec *s)
{
	int i;

	for (i = 0; i < CMO_MAX_OPS; i++)
		if (s->ops[i].kind == OP_KIDS || s->ops[i].kind == OP_PAIRS)
			return s->ops[i].kind;
	return OP_END;
}

int oxr_cmo_want_ok(uint8_t want, int32_t tag)
{
	switch (want) {
	case W_STRING: return tag == OXR_CMO_STRING;
	case W_LIST: return tag == OXR_CMO_LIST;
	case W_TREE: return tag == OXR_CMO_TREE;
	case W_RINGDEF:
		return tag == OXR_CMO_DMS_GENERIC || tag == OXR_CMO_RING_BY_NAME ||
		       tag == OXR_CMO_DMS_OF_N_VARIABLES;
	case W_TERM: return tag == OXR_CMO_MONOMIAL32 || tag == OXR_CMO_ZERO;
	}
	return 1;
}

const char *oxr_cmo_want_name(uint8_t want)
{
	switch (want) {
	case W_STRING: return "CMO_STRING";
	case W_LIST: return "CMO_LIST";
	case W_TREE: return "CMO_TREE";
	case W_RINGDEF: return "a ring definition (CMO_DMS_GENERIC, CMO_RING_BY_NAME, CMO_DMS_OF_N_VARIABLES)";
	case W_TERM: return "CMO_MONOMIAL32 or CMO_ZERO";
	}
	return "any CMO";
}

const char *oxr_cmo_tag_name(int32_t tag)
{
	const struct cmo_spec *s = oxr_cmo_spec(tag);

	return s ? s->name : NULL;
}

int32_t oxr_cmo_tag_of(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < 64 + N_LARGE; i++) {
		const struct cmo_spec *sp = i < 64 ? &small_specs[i] : &large_specs[i - 64];
		if (sp->name && strlen(sp->name) == len && !memcmp(sp->name, name, len))
			return sp->tag;
	}
	return 0;
}
