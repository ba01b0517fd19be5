/* SPDX-License-Identifier: MIT */
/*
 * oxr-cmo: between the bconv text notation and CMO / OX bytes in hex.
 *
 *   oxr-cmo encode '(CMO_ZZ,123123)'          -> 00000014000000010001e0f3
 *   oxr-cmo decode 00000014 00000001 0001e0f3 -> (CMO_ZZ,123123)
 *
 * Exit status: 0 ok, 1 bad input, 2 usage error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oxr/oxr.h>

static const char usage_text[] =
	"usage: oxr-cmo encode [--order network|little] [--serial N] [TEXT...]\n"
	"       oxr-cmo decode [--order network|little] [--frame] [--serial N|any] [HEX...]\n"
	"\n"
	"encode: each TEXT holds items such as (CMO_ZZ,123123), (OX_DATA,(CMO_NULL)) or\n"
	"        (OX_COMMAND,(SM_popCMO)); prints the bytes of each item as a line of hex.\n"
	"decode: the HEX arguments together hold bytes (white space between bytes is\n"
	"        fine); prints the text of each item in them on its own line.\n"
	"\n"
	"  --order network|little  byte order of the bytes (default network)\n"
	"  --serial N       encode: OX frames carry serial N (default: no serial field)\n"
	"                   decode: frames carry a serial, which must be N; 'any' does\n"
	"                   not check it (implies --frame)\n"
	"  --frame          decode: the bytes are OX frames, without a serial unless\n"
	"                   --serial is given (default: bare CMOs)\n"
	"  -h, --help       print this help and exit\n"
	"\n"
	"No TEXT or HEX, or '-': read standard input.\n"
	"Exit status: 0 ok, 1 bad input, 2 usage error.\n";

struct opts {
	int decode;
	int order;
	int frame;
	int has_serial, serial_any;
	int32_t serial;
	char **args;
	int nargs;
	oxr_cmo_limits lim;
};

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "oxr-cmo: %s\n", why);
	fputs(usage_text, stderr);
	return 2;
}

/* 1, bad input: the library's detail.  Its offsets and columns count from
 * the start of the item, so say where that is when it is not the first. */
static int bad(const char *msg, const char *unit, size_t item_at)
{
	if (item_at)
		fprintf(stderr, "oxr-cmo: item at %s %zu: %s\n", unit, item_at, msg);
	else
		fprintf(stderr, "oxr-cmo: %s\n", msg);
	return 1;
}

static int parse_serial(const char *v, struct opts *o)
{
	char *end;
	long long n;

	o->has_serial = 1;
	if (!strcmp(v, "any") && o->decode) {
		o->serial_any = 1;
		return 0;
	}
	errno = 0;
	n = strtoll(v, &end, 10);
	if (!*v || *end || errno || n < INT32_MIN || n > INT32_MAX)
		return -1;
	o->serial = (int32_t)n;
	return 0;
}

/* Options may come anywhere; "--" ends them.  0 go on, -1 done (--help),
 * else the exit status of a usage error. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	int i, only_args = 0;

	o->args = argv + 2;
	for (i = 2; i < argc; i++) {
		char *a = argv[i], *eq, *val;
		size_t n;

		if (only_args || strncmp(a, "--", 2) || !strcmp(a, "-")) {
			o->args[o->nargs++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_args = 1;
			continue;
		}
		if (!strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return -1;
		}
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		if (n == 7 && !strncmp(a, "--frame", n) && !eq && o->decode) {
			o->frame = 1;
			continue;
		}
		if (!(n == 7 && !strncmp(a, "--order", n)) &&
		    !(n == 8 && !strncmp(a, "--serial", n)))
			return usage("unknown option");
		val = eq ? eq + 1 : ++i < argc ? argv[i] : NULL;
		if (!val)
			return usage("an option lacks its value");
		if (n == 8) {
			if (parse_serial(val, o))
				return usage("--serial wants an int32 (or 'any' when decoding)");
			o->frame |= o->decode;
		} else if (!strcmp(val, "network") || !strcmp(val, "little")) {
			o->order = !strcmp(val, "little") ? OXR_ORDER_LITTLE : OXR_ORDER_NETWORK;
		} else {
			return usage("--order wants network or little");
		}
	}
	return 0;
}

struct buf {
	char *p;
	size_t n, cap;
};

static int buf_add(struct buf *b, const void *s, size_t n)
{
	if (b->cap - b->n < n) {
		size_t cap = 2 * b->cap + n;
		char *np = realloc(b->p, cap);

		if (!np)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	return 0;
}

static int slurp(FILE *f, struct buf *b)
{
	char chunk[65536];
	size_t n;

	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_add(b, chunk, n))
			return -1;
	return ferror(f) ? -1 : 0;
}

/* Argument i of the input (all of them joined by spaces when i < 0), or
 * standard input when there are none or it is '-'. */
static char *gather(const struct opts *o, int i, size_t *len)
{
	struct buf b = { 0 };
	int k, err = 0;

	for (k = i < 0 ? 0 : i; k < (o->nargs ? o->nargs : 1) && !err; k++) {
		if (!o->nargs || !strcmp(o->args[k], "-"))
			err = slurp(stdin, &b);
		else
			err = buf_add(&b, o->args[k], strlen(o->args[k]));
		err = err || buf_add(&b, " ", 1);
		if (i >= 0)
			break;
	}
	if (err) {
		perror("oxr-cmo: reading input");
		free(b.p);
		return NULL;
	}
	*len = b.n - 1;
	return b.p;
}

static int is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int encode(const struct opts *o, const char *s, size_t len, oxr_arena *a)
{
	size_t off = 0, used, n, i;
	oxr_text_item it;
	uint8_t *buf;
	oxr_status_t st;

	for (;;) {
		while (off < len && is_space(s[off]))
			off++;
		if (off == len)
			return 0;
		oxr_arena_reset(a);
		if (oxr_text_parse(s + off, len - off, a, &it, &used))
			return bad(oxr_errmsg(), "character", off ? off + 1 : 0);
		it.msg.serial = o->serial;
		if (it.is_frame)
			st = oxr_ox_encode_alloc(&it.msg, o->has_serial, o->order, &buf, &n);
		else
			st = oxr_cmo_encode_alloc(it.msg.cmo, o->order, &buf, &n);
		if (st)
			return bad(oxr_errmsg(), "character", off ? off + 1 : 0);
		for (i = 0; i < n; i++)
			printf("%02x", buf[i]);
		putchar('\n');
		free(buf);
		off += used;
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex digits to bytes in place; white space only between bytes. */
static int unhex(char *s, size_t len, size_t *n)
{
	size_t i;
	int hi = -1, v;

	*n = 0;
	for (i = 0; i < len; i++) {
		if (is_space(s[i]) && hi < 0)
			continue;
		v = hexval((unsigned char)s[i]);
		if (v < 0) {
			fprintf(stderr, is_space(s[i]) ?
				"oxr-cmo: odd number of hex digits before character %zu\n" :
				"oxr-cmo: character %zu is not a hex digit\n", i + 1);
			return 1;
		}
		if (hi < 0) {
			hi = v;
		} else {
			s[(*n)++] = (char)(hi << 4 | v);
			hi = -1;
		}
	}
	if (hi >= 0) {
		fprintf(stderr, "oxr-cmo: odd number of hex digits\n");
		return 1;
	}
	return 0;
}

static int print_item(const struct opts *o, const oxr_decoder *d, size_t at)
{
	const oxr_ox_msg *m = oxr_decoder_msg(d);
	char *text;
	oxr_status_t st;

	if (o->frame && o->has_serial && !o->serial_any && m->serial != o->serial) {
		fprintf(stderr, "oxr-cmo: the frame at byte %zu has serial %d, not %d\n", at,
			m->serial, o->serial);
		return 1;
	}
	st = o->frame ? oxr_text_print_msg(m, &text, NULL)
		      : oxr_text_print_cmo(oxr_decoder_cmo(d), &text, NULL);
	if (st)
		return bad(oxr_errmsg(), "byte", at);
	puts(text);
	free(text);
	return 0;
}

static int decode(const struct opts *o, char *s, size_t len, oxr_arena *a)
{
	const uint8_t *buf = (const uint8_t *)s;
	oxr_decoder *d;
	size_t n, off, used;
	oxr_status_t st;
	int rc = 0;

	if (unhex(s, len, &n))
		return 1;
	if (oxr_decoder_create(&d, o->frame ? OXR_DECODE_OX : OXR_DECODE_CMO, o->order, &o->lim, a))
		return bad(oxr_errmsg(), "byte", 0);
	if (o->frame)
		oxr_decoder_set_serial(d, o->has_serial);
	for (off = 0; off < n && !rc; off += used) {
		st = oxr_decoder_feed(d, buf + off, n - off, OXR_FEED_BORROW, &used);
		if (st == OXR_AGAIN) {
			fprintf(stderr, "oxr-cmo: decode error at byte %zu: the input ends inside "
				"the %s that starts at byte %zu\n", n,
				o->frame ? "frame" : "object", off);
			rc = 1;
		} else if (st != OXR_OK) {
			rc = bad(oxr_errmsg(), "byte", off);
		} else {
			rc = print_item(o, d, off);
		}
	}
	oxr_decoder_destroy(d);
	return rc;
}

static int run_input(const struct opts *o, int i, oxr_arena *a)
{
	size_t len;
	char *in = gather(o, i, &len);
	int rc;

	if (!in)
		return 1;
	rc = o->decode ? decode(o, in, len, a) : encode(o, in, len, a);
	free(in);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	oxr_arena *a;
	int rc, i;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc < 2 || (strcmp(argv[1], "encode") && strcmp(argv[1], "decode")))
		return usage(argc < 2 ? "encode or decode?" : "unknown command");
	o.decode = !strcmp(argv[1], "decode");
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	/* the limits oxr-server's decoders take from the same environment, so
	 * bytes are judged here as a server would judge them; a malformed
	 * variable fails either command, as it fails a server's start */
	if (oxr_cmo_limits_from_env(&o.lim))
		return bad(oxr_errmsg(), "", 0);
	if (oxr_arena_create(&a))
		return bad(oxr_errmsg(), "", 0);
	/* Hex may run across arguments; each TEXT is a text of its own. */
	if (o.decode || o.nargs <= 1)
		rc = run_input(&o, -1, a);
	else
		for (i = 0; i < o.nargs && !rc; i++)
			rc = run_input(&o, i, a);
	oxr_arena_destroy(a);
	if (fflush(stdout) && !rc) {
		perror("oxr-cmo: writing output");
		rc = 1;
	}
	return rc;
}
