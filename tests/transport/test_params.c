/* SPDX-License-Identifier: MIT */
/*
 * Configuration in one place (transport/params.c): docs/environment.md's
 * users' table and the parser's table list the same variables with the same
 * defaults; every variable of its launcher/tests/CI table is read somewhere in
 * the tree; a malformed value of any knob fails oxr_ctx_create naming it;
 * oxr_ctx_create_with's field mask beats the environment; no source file
 * outside tests/ and bench/ reads a user knob with getenv.  And the docs'
 * relative links (README.md and the pages of docs/) name files that exist.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oxr/barrier.h"
#include "oxr/master.h"
#include "oxr/server.h"
#include "oxr/transport.h"

#define MAXROWS 96

struct row {
	char name[48];
	char def[96];
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	char *s;

	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = malloc((size_t)n + 1);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = 0;
	fclose(f);
	return s;
}

/* s without backticks and outer blanks, into out. */
static void norm(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;

	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	for (; n && k + 1 < cap; s++, n--)
		if (*s != '`')
			out[k++] = *s;
	out[k] = 0;
}

/* The rows of the first table after `heading`: variable, default. */
static int readme_rows(const char *md, const char *heading, struct row *rows)
{
	const char *p = strstr(md, heading), *end;
	int n = 0;

	cr_assert_not_null(p, "docs/environment.md has no \"%s\"", heading);
	p = strstr(p, "\n|");
	cr_assert_not_null(p);
	for (p++; *p == '|'; p = end + 1) {
		const char *c1 = p + 1, *c2 = strchr(c1, '|'), *c3 = c2 ? strchr(c2 + 1, '|') : NULL;
		char names[256], defs[256], *save1, *save2, *nm, *df;
		int many;

		end = strchr(p, '\n');
		cr_assert(c2 && c3 && end);
		norm(c1, (size_t)(c2 - c1), names, sizeof(names));
		norm(c2 + 1, (size_t)(c3 - c2 - 1), defs, sizeof(defs));
		if (!strncmp(names, "---", 3) || !strcmp(names, "variable"))
			continue;
		/* "a, b" | "1, 2": one default each; "a, b" | "x": x for both */
		many = strchr(names, ',') && strchr(defs, ',');
		nm = strtok_r(names, ",", &save1);
		df = many ? strtok_r(defs, ",", &save2) : defs;
		for (; nm; nm = strtok_r(NULL, ",", &save1)) {
			cr_assert_not_null(df, "docs/environment.md row %s: fewer defaults than variables", names);
			cr_assert_lt(n, MAXROWS);
			norm(nm, strlen(nm), rows[n].name, sizeof(rows[n].name));
			norm(df, strlen(df), rows[n].def, sizeof(rows[n].def));
			n++;
			df = many ? strtok_r(NULL, ",", &save2) : defs;
		}
	}
	return n;
}

static int find_desc(const char *name, oxr_param_desc *d)
{
	size_t i;

	for (i = 0; oxr_ctx_param_describe(i, d); i++)
		if (!strcmp(d->name, name))
			return 1;
	return 0;
}

/* "512", "64 MiB", "2^26", "10^6" as a number; 0 when text is not one. */
static int readme_number(const char *s, uint64_t *v)
{
	unsigned long long a, b;
	char unit[8];
	int used = 0;

	if (sscanf(s, "%llu^%llu%n", &a, &b, &used) == 2 && !s[used]) {
		for (*v = 1; b--;)
			*v *= a;
		return 1;
	}
	if (sscanf(s, "%llu %7s%n", &a, unit, &used) == 2 && !s[used]) {
		int sh = !strcmp(unit, "KiB") ? 10 : !strcmp(unit, "MiB") ? 20
			 : !strcmp(unit, "GiB") ? 30 : -1;
		if (sh < 0)
			return 0;
		*v = a << sh;
		return 1;
	}
	if (sscanf(s, "%llu%n", &a, &used) == 1 && !s[used]) {
		*v = a;
		return 1;
	}
	return 0;
}

#define USERS_TABLE "## For users"
#define OTHERS_TABLE "## For the launcher, the tests and CI"

Test(params, docs_table_matches_parser)
{
	char *md = slurp(OXR_SOURCE_DIR "/docs/environment.md");
	struct row rows[MAXROWS], extra[MAXROWS];
	int n = readme_rows(md, USERS_TABLE, rows), m, i, j;
	oxr_param_desc d;
	size_t k;
	uint64_t v;

	for (i = 0; i < n; i++) {
		cr_expect(find_desc(rows[i].name, &d),
			  "docs/environment.md's %s is not in the parser's table", rows[i].name);
		if (!find_desc(rows[i].name, &d))
			continue;
		cr_expect_str_eq(rows[i].def, d.def,
				 "%s: docs/environment.md says default %s, the parser %s", d.name,
				 rows[i].def, d.def);
		if (readme_number(rows[i].def, &v)) {
			cr_expect(d.def_is_number, "%s: the docs' default is a number", d.name);
			cr_expect_eq(d.def_value, v, "%s: the docs' default %s is %llu, the parser's %llu",
				     d.name, rows[i].def, (unsigned long long)v,
				     (unsigned long long)d.def_value);
		}
	}
	for (k = 0; oxr_ctx_param_describe(k, &d); k++) {
		for (i = 0; i < n && strcmp(rows[i].name, d.name); i++)
			;
		cr_expect_lt(i, n, "the parser's %s is not in docs/environment.md's users' table",
			     d.name);
		cr_expect(strncmp(d.name, "OXR_RUN_", 8) && strncmp(d.name, "OXR_TEST_", 9));
	}
	/* the launcher's and the tests' variables: their own table, not the parser's */
	m = readme_rows(md, OTHERS_TABLE, extra);
	cr_assert_gt(m, 5);
	for (j = 0; j < m; j++) {
		cr_expect(!find_desc(extra[j].name, &d), "%s is in both tables", extra[j].name);
		for (i = 0; i < n; i++)
			cr_expect(strcmp(rows[i].name, extra[j].name), "%s in both tables",
				  extra[j].name);
	}
	free(md);
}

/* The tree's text files, read once: what the tests' table is checked against. */
struct tree {
	char **text;
	char **path;
	int n, cap;
};

static void load_tree(struct tree *t, const char *dir)
{
	char path[768];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/%s", OXR_SOURCE_DIR, dir);
	cr_assert_not_null(d = opendir(path), "%s", path);
	while ((e = readdir(d))) {
		char sub[512];
		struct stat st;
		size_t len = strlen(e->d_name);

		if (e->d_name[0] == '.' && strcmp(e->d_name, ".ci"))
			continue;
		cr_assert_lt(snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name), (int)sizeof(sub));
		snprintf(path, sizeof(path), "%s/%s", OXR_SOURCE_DIR, sub);
		if (stat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			load_tree(t, sub);
			continue;
		}
		/* this file names every variable of the table; the docs only describe them */
		if (!S_ISREG(st.st_mode) || st.st_size > (1 << 20) ||
		    !strcmp(sub, "tests/transport/test_params.c") ||
		    (len > 3 && !strcmp(e->d_name + len - 3, ".md")))
			continue;
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 256;
			t->text = realloc(t->text, (size_t)t->cap * sizeof(*t->text));
			t->path = realloc(t->path, (size_t)t->cap * sizeof(*t->path));
			cr_assert(t->text && t->path);
		}
		t->text[t->n] = slurp(path);
		t->path[t->n] = strdup(sub);
		t->n++;
	}
	closedir(d);
}

static int ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Where text reads the variable: getenv("NAME") in C, $NAME or ${NAME... in a
 * script, $ENV{NAME} in CMake.  A mention in a comment or a message is not a read. */
static int reads(const char *text, const char *name)
{
	size_t len = strlen(name);
	const char *p;

	for (p = text; (p = strstr(p, name)); p += len) {
		if (ident(p[len]) || (p > text && ident(p[-1]) && p[-1] != '{'))
			continue;
		if (p - text >= 8 && !strncmp(p - 8, "getenv(\"", 8) && p[len] == '"')
			return 1;
		if (p - text >= 1 && p[-1] == '$')
			return 1;
		if (p - text >= 2 && !strncmp(p - 2, "${", 2))
			return 1;
		if (p - text >= 4 && !strncmp(p - 4, "ENV{", 4) && p[len] == '}')
			return 1;
	}
	return 0;
}

/* Every variable the launcher/tests/CI table lists is read somewhere: a row for a
 * variable nothing reads (renamed, or removed with its script) fails here. */
Test(params, docs_test_variables_are_read)
{
	static const char *const dirs[] = { ".ci",   "ci",    "cmo",   "transport", "collectives",
					    "server", "tools", "tests", "bench",     "examples" };
	char *md = slurp(OXR_SOURCE_DIR "/docs/environment.md");
	struct row extra[MAXROWS];
	struct tree t = { 0 };
	int m = readme_rows(md, OTHERS_TABLE, extra), i, j;
	size_t k;

	for (k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++)
		load_tree(&t, dirs[k]);
	cr_assert_gt(t.n, 100, "read only %d files of the tree", t.n);
	cr_assert_gt(m, 5);
	for (i = 0; i < m; i++) {
		for (j = 0; j < t.n && !reads(t.text[j], extra[i].name); j++)
			;
		cr_expect_lt(j, t.n,
			     "docs/environment.md lists %s, but no file of the tree reads it "
			     "(getenv(\"%s\"), $%s, ${%s...} or $ENV{%s})",
			     extra[i].name, extra[i].name, extra[i].name, extra[i].name, extra[i].name);
	}
	/* the check can fail: a name nothing reads is found nowhere */
	for (j = 0; j < t.n && !reads(t.text[j], "OXR_NO_SUCH_VARIABLE"); j++)
		;
	cr_assert_eq(j, t.n);
	for (j = 0; j < t.n; j++)
		free(t.text[j]), free(t.path[j]);
	free(t.text);
	free(t.path);
	free(md);
}

/* Every relative link of one Markdown file, [text](target) or ![alt](target),
 * names a file or folder that exists, relative to that file. */
static int check_links(const char *rel)
{
	char path[1100], dir[512], target[512];
	const char *p, *slash;
	char *md;
	int links = 0;

	snprintf(path, sizeof(path), "%s/%s", OXR_SOURCE_DIR, rel);
	md = slurp(path);
	slash = strrchr(rel, '/');
	snprintf(dir, sizeof(dir), "%s/%.*s", OXR_SOURCE_DIR, slash ? (int)(slash - rel) : 0, rel);
	for (p = md; (p = strstr(p, "](")); p += 2) {
		const char *end = strchr(p + 2, ')');
		size_t n;
		struct stat st;

		if (!end)
			break;
		n = (size_t)(end - p - 2);
		if (n == 0 || n >= sizeof(target))
			continue;
		memcpy(target, p + 2, n);
		target[n] = 0;
		if (strchr(target, ' ') || strchr(target, '\n') || target[0] == '#' ||
		    strstr(target, "://") || !strncmp(target, "mailto:", 7))
			continue;
		target[strcspn(target, "#")] = 0;
		snprintf(path, sizeof(path), "%s/%s", dir, target);
		cr_expect_eq(stat(path, &st), 0, "%s links to %s, which does not exist", rel,
			     target);
		links++;
	}
	free(md);
	return links;
}

Test(docs, relative_links_resolve)
{
	char path[512];
	DIR *d;
	struct dirent *e;
	int links = check_links("README.md"), pages = 0;

	snprintf(path, sizeof(path), "%s/docs", OXR_SOURCE_DIR);
	cr_assert_not_null(d = opendir(path), "%s", path);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len > 3 && !strcmp(e->d_name + len - 3, ".md")) {
			snprintf(path, sizeof(path), "docs/%s", e->d_name);
			links += check_links(path);
			pages++;
		}
	}
	closedir(d);
	cr_assert_gt(pages, 5);
	cr_assert_gt(links, 20, "only %d relative links checked", links);
}

/* The .c files under dir (a path below OXR_SOURCE_DIR), its subfolders too
 * (transport/tcp/, transport/verbs/): each getenv("OXR_...") must read a
 * launcher's variable. */
static int scan_getenv(const char *dir)
{
	static const char *const launcher[] = { "OXR_RUN_ADDR", "OXR_RUN_RANK", "OXR_RUN_SIZE",
						"OXR_RUN_TOKEN_FD", NULL };
	char path[512];
	DIR *d;
	struct dirent *e;
	int files = 0;

	snprintf(path, sizeof(path), "%s/%s", OXR_SOURCE_DIR, dir);
	cr_assert_not_null(d = opendir(path), "%s", path);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char *src, *p, name[64], sub[256];
		int j, ok;

		if (e->d_name[0] == '.')
			continue;
		if (e->d_type == DT_DIR) {
			cr_assert_lt(snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name),
				     (int)sizeof(sub));
			files += scan_getenv(sub);
			continue;
		}
		if (len < 3 || strcmp(e->d_name + len - 2, ".c"))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", OXR_SOURCE_DIR, dir, e->d_name);
		src = slurp(path);
		files++;
		for (p = src; (p = strstr(p, "getenv(\"OXR_")); p++) {
			sscanf(p + 8, "%63[A-Z0-9_]", name);
			for (ok = 0, j = 0; launcher[j]; j++)
				ok |= !strcmp(launcher[j], name);
			cr_expect(ok, "%s/%s reads %s with getenv, not through params.c", dir,
				  e->d_name, name);
		}
		free(src);
	}
	closedir(d);
	return files;
}

/* Every getenv("OXR_...") in the library and tools reads a launcher's variable. */
Test(params, no_stray_getenv)
{
	static const char *const dirs[] = { "cmo", "transport", "collectives", "server", "tools" };
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		cr_expect_gt(scan_getenv(dirs[i]), 0, "no .c file under %s", dirs[i]);
}

/* A bad value of each kind for each knob fails oxr_ctx_create naming it. */
Test(params, malformed_values_name_the_variable)
{
	static char longer[5000];
	char want[160];
	oxr_param_desc d;
	oxr_ctx *c;
	size_t i;
	int kinds = 0;

	memset(longer, 'x', sizeof(longer) - 1);
	for (i = 0; oxr_ctx_param_describe(i, &d); i++) {
		const char *bad[3] = { NULL };
		int b;

		if (!strcmp(d.kind, "int") || !strcmp(d.kind, "size")) {
			bad[0] = "12x";
			bad[1] = "99999999999999999999999";
			bad[2] = "-5";
			kinds |= 1;
		} else if (!strcmp(d.kind, "word")) {
			bad[0] = "no-such-word";
			kinds |= 2;
		} else {
			bad[0] = longer;
			kinds |= 4;
		}
		for (b = 0; b < 3 && bad[b]; b++) {
			setenv(d.name, bad[b], 1);
			cr_expect_eq(oxr_ctx_create(&c), OXR_ERR_INVAL, "%s=%.20s accepted", d.name,
				     bad[b]);
			snprintf(want, sizeof(want), "%s=%.20s", d.name, bad[b]);
			cr_expect(strstr(oxr_errmsg(), want) && strstr(oxr_errmsg(), "expected"),
				  "%s=%.20s: %s", d.name, bad[b], oxr_errmsg());
			unsetenv(d.name);
		}
	}
	cr_assert_eq(kinds, 7);
	/* out of range, and a size that must be a multiple of 8 */
	setenv("OXR_BARRIER_RADIX", "1", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_BARRIER_RADIX=1: expected a whole number from 2 to 64"),
		  "%s", oxr_errmsg());
	unsetenv("OXR_BARRIER_RADIX");
	setenv("OXR_CRYSTAL_REGION_BYTES", "100", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_CRYSTAL_REGION_BYTES=100"), "%s", oxr_errmsg());
	unsetenv("OXR_CRYSTAL_REGION_BYTES");
}

/* The engine and the master, which may run without a context, are strict too. */
Test(params, engine_and_master_strict)
{
	oxr_engine *e;
	oxr_master *m;
	static char longer[5000];

	setenv("OXR_SERVER_TIMEOUT_MS", "soon", 1);
	cr_assert_eq(oxr_engine_create(NULL, -1, OXR_ORDER_HOST, OXR_ENGINE_NO_NET, &e),
		     OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_SERVER_TIMEOUT_MS=soon"), "%s", oxr_errmsg());
	unsetenv("OXR_SERVER_TIMEOUT_MS");
	setenv("OXR_SERVER_MAX_STACK", "0", 1);
	cr_assert_eq(oxr_engine_create(NULL, -1, OXR_ORDER_HOST, OXR_ENGINE_NO_NET, &e),
		     OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_SERVER_MAX_STACK=0"), "%s", oxr_errmsg());
	unsetenv("OXR_SERVER_MAX_STACK");
	memset(longer, 'x', sizeof(longer) - 1);
	setenv("OXR_SERVER", longer, 1);
	cr_assert_eq(oxr_master_launch(NULL, 1, &m), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_SERVER=xxx"), "%s", oxr_errmsg());
	/* oxr-server exits on any malformed knob (naming it on its stderr) */
	setenv("OXR_SERVER", OXR_BIN_DIR "/oxr-server", 1);
	setenv("OXR_BARRIER_RADIX", "1", 1);
	cr_assert_neq(oxr_master_launch(NULL, 1, &m), OXR_OK);
	unsetenv("OXR_BARRIER_RADIX");
	cr_assert_eq(oxr_master_launch(NULL, 1, &m), OXR_OK, "%s", oxr_errmsg());
	oxr_master_destroy(m, 5000);
	unsetenv("OXR_SERVER");
}

Test(params, create_with_mask_beats_environment)
{
	oxr_ctx_params p = { .field_mask = OXR_CTX_PARAM_BARRIER_RADIX | OXR_CTX_PARAM_HOST |
					   OXR_CTX_PARAM_TRANSPORT,
			     .barrier_radix = 4, .transport = 1 };
	const oxr_ctx_params *got;
	char host[32] = "10.1.2.3";
	oxr_ctx *c, *d;

	p.host = host;
	setenv("OXR_BARRIER_RADIX", "8", 1);
	setenv("OXR_LINK_TIMEOUT_MS", "1234", 1);
	setenv("OXR_TRANSPORT", "tcp", 1);
	cr_assert_eq(oxr_ctx_create_with(&p, &c), OXR_OK, "%s", oxr_errmsg());
	strcpy(host, "changed");
	got = oxr_ctx_get_params(c);
	cr_assert_eq(got->field_mask, OXR_CTX_PARAM_ALL);
	cr_assert_eq(got->barrier_radix, 4);            /* the mask's */
	cr_assert_eq(got->link_timeout_ms, 1234);       /* the environment's */
	cr_assert_str_eq(got->host, "10.1.2.3");        /* the context's own copy */
	cr_assert_eq(got->bcast_chunk_bytes, 256u << 10); /* the default */
	cr_assert_str_eq(oxr_ctx_transport(c), "tcp");
	/* create(&c) is create_with(NULL, &c) */
	cr_assert_eq(oxr_ctx_create(&d), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_ctx_get_params(d)->barrier_radix, 8);
	oxr_ctx_destroy(d);
	/* live fields only */
	p.field_mask = OXR_CTX_PARAM_LINK_TIMEOUT_MS;
	cr_assert_eq(oxr_ctx_modify(c, &p), OXR_ERR_INVAL);
	p.field_mask = OXR_CTX_PARAM_BARRIER_RADIX;
	p.barrier_radix = 65;
	cr_assert_eq(oxr_ctx_modify(c, &p), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "oxr_ctx_params.barrier_radix=65"), "%s", oxr_errmsg());
	p.barrier_radix = 32;
	cr_assert_eq(oxr_ctx_modify(c, &p), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_ctx_get_params(c)->barrier_radix, 32);
	oxr_ctx_destroy(c);
	/* a program's bad value is an error naming the field and its variable */
	p.field_mask = OXR_CTX_PARAM_VERBS_CM;
	p.verbs_cm = 2;
	cr_assert_eq(oxr_ctx_create_with(&p, &c), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "oxr_ctx_params.verbs_cm=2"), "%s", oxr_errmsg());
	p.field_mask = 1ull << 63;
	cr_assert_eq(oxr_ctx_create_with(&p, &c), OXR_ERR_INVAL);
}

/* OXR_BARRIER=auto (the default): dissemination at 2 ranks, bitmap above. */
Test(params, the_default_barrier_is_dissemination_at_two_ranks_only)
{
	static const struct {
		const char *env;
		int n, want;
	} t[] = {
		{ NULL, 1, OXR_BARRIER_BITMAP },        { NULL, 2, OXR_BARRIER_DISSEMINATION },
		{ NULL, 3, OXR_BARRIER_BITMAP },        { "auto", 2, OXR_BARRIER_DISSEMINATION },
		{ "bitmap", 2, OXR_BARRIER_BITMAP },    { "dissemination", 3, OXR_BARRIER_DISSEMINATION },
	};
	size_t i;

	setenv("OXR_TRANSPORT", "tcp", 1);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		oxr_barrier_t *b;
		oxr_group *g;
		oxr_ctx *c;
		if (t[i].env)
			setenv("OXR_BARRIER", t[i].env, 1);
		else
			unsetenv("OXR_BARRIER");
		cr_assert_eq(oxr_ctx_create(&c), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(oxr_group_create(c, t[i].n, 0, &g), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(oxr_barrier_create(g, OXR_BARRIER_DEFAULT, &b), OXR_OK, "%s",
			     oxr_errmsg());
		cr_assert_eq(oxr_barrier_algo(b), t[i].want, "OXR_BARRIER=%s, %d ranks",
			     t[i].env ? t[i].env : "(unset)", t[i].n);
		oxr_barrier_destroy(b);
		oxr_group_destroy(g);
		oxr_ctx_destroy(c);
	}
	unsetenv("OXR_BARRIER");
	unsetenv("OXR_TRANSPORT");
}

/* What a collective reads comes from its group's context. */
Test(params, barrier_reads_the_context)
{
	oxr_ctx_params p = { .field_mask = OXR_CTX_PARAM_BARRIER | OXR_CTX_PARAM_TRANSPORT,
			     .barrier = 1, .transport = 1 };
	oxr_barrier_t *b;
	oxr_group *g;
	oxr_ctx *c;

	setenv("OXR_BARRIER", "bitmap", 1);
	cr_assert_eq(oxr_ctx_create_with(&p, &c), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_group_create(c, 1, 0, &g), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_group_ctx(g), c);
	cr_assert_eq(oxr_barrier_create(g, OXR_BARRIER_DEFAULT, &b), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_barrier_algo(b), OXR_BARRIER_DISSEMINATION);
	cr_assert_eq(oxr_barrier(b, 1000), OXR_OK, "%s", oxr_errmsg());
	oxr_barrier_destroy(b);
	oxr_group_destroy(g);
	oxr_ctx_destroy(c);
}
