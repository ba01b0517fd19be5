/* SPDX-License-Identifier: MIT */
/*
 * The PMIx bootstrap as a cluster user meets it: boot_child started by Open
 * MPI's mpirun (its PMIx server is the launcher), and boot_child started
 * without one.  mpirun missing is a failure, not a skip: this file is only
 * built when oxr has PMIx, and ci/test installs openmpi-bin.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_child.h"

extern char **environ;

#define CHILD OXR_BIN_DIR "/boot_child"

/* mpirun's full path from PATH, or NULL. */
static char *find_mpirun(void)
{
	const char *path = getenv("PATH");
	char *dirs, *dir, *save = NULL, *hit = NULL;

	if (!path)
		return NULL;
	dirs = strdup(path);
	for (dir = strtok_r(dirs, ":", &save); dir && !hit; dir = strtok_r(NULL, ":", &save)) {
		char cand[4096];

		snprintf(cand, sizeof(cand), "%s/mpirun", *dir ? dir : ".");
		if (access(cand, X_OK) == 0)
			hit = strdup(cand);
	}
	free(dirs);
	return hit;
}

static int has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/*
 * Our environment without anything that would tie the child to an outer
 * launch (ctest itself run under mpirun or srun) or force a bootstrap, plus
 * extra (NULL-terminated).  Open MPI refuses root without the two ALLOW
 * variables, and CI containers run as root.  Under ASan, libpmix's own leaks
 * are suppressed (mpirun passes the environment on to its ranks).
 */
static char **child_env(const char *const *extra)
{
	static const char *const drop[] = { "PMIX_", "OMPI_", "PRTE_", "OXR_BOOT=",
					    "OXR_RUN_ADDR=", "LSAN_OPTIONS=", NULL };
	static char lsan[4096];
	const char *old = getenv("LSAN_OPTIONS");
	size_t n = 0, k = 0, i;
	char **env;

	snprintf(lsan, sizeof(lsan), "LSAN_OPTIONS=%s%ssuppressions=%s/tests/lsan.supp",
		 old ? old : "", old && *old ? ":" : "", OXR_SOURCE_DIR);
	while (environ[n])
		n++;
	for (i = 0; extra[i]; i++)
		n++;
	env = calloc(n + 4, sizeof(*env));
	cr_assert_not_null(env);
	for (i = 0; environ[i]; i++) {
		size_t d;

		for (d = 0; drop[d] && !has_prefix(environ[i], drop[d]); d++)
			;
		if (!drop[d])
			env[k++] = environ[i];
	}
	env[k++] = (char *)"OMPI_ALLOW_RUN_AS_ROOT=1";
	env[k++] = (char *)"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";
	env[k++] = lsan;
	for (i = 0; extra[i]; i++)
		env[k++] = (char *)extra[i];
	env[k] = NULL;
	return env;
}

/*
 * Runs argv with both outputs captured, for at most limit seconds, in its
 * own process group so that a stuck launch is ended with everything it
 * started; a run past the limit fails the test with what it printed.
 */
static struct run run_cmd(char *const argv[], const char *const *extra, int limit)
{
	char **env = child_env(extra);
	const struct run_opts o = { .envp = env, .own_group = 1 };
	struct run r = spawn_run_opts((const char *const *)argv, NULL, NULL, limit, &o);

	free(env);
	cr_assert(!r.timed_out, "%s ran past %d s (hung?)\nstdout:\n%s\nstderr:\n%s", argv[0],
		  limit, r.out, r.err);
	return r;
}

/*
 * boot_child mode under mpirun -np np.  Flags: --oversubscribe because CI
 * machines have fewer cores than 4 and Open MPI refuses more ranks than
 * slots; --bind-to none because binding oversubscribed ranks is pointless
 * and fails in some cpusets; --mca plm isolated so that mpirun starts ranks
 * here itself, never through ssh or an enclosing Slurm allocation.
 */
static struct run mpirun(int np, const char *mode, const char *const *extra)
{
	char *path = find_mpirun();
	char nps[16];
	char *argv[] = { path, (char *)"-np", nps, (char *)"--oversubscribe",
			 (char *)"--bind-to", (char *)"none", (char *)"--mca", (char *)"plm",
			 (char *)"isolated", (char *)CHILD, (char *)mode, NULL };
	struct run res;

	cr_assert_not_null(path, "mpirun not found in PATH: the PMIx test needs Open MPI's "
				 "launcher (apt-get install openmpi-bin; ci/test installs it)");
	snprintf(nps, sizeof(nps), "%d", np);
	res = run_cmd(argv, extra, 120);
	cr_log_info("mpirun -np %d boot_child %s: %.2f s", np, mode, res.secs);
	free(path);
	return res;
}

/* Exit 0, and one "rank R size N kind pmix" line per rank. */
static void mpirun_ok(int np, const char *mode, const char *const *extra)
{
	struct run res = mpirun(np, mode, extra);
	int seen[64] = { 0 }, lines = 0, r;
	char *line, *save = NULL;

	cr_assert_eq(res.rc, 0, "mpirun -np %d exited %d\nstdout:\n%s\nstderr:\n%s", np, res.rc,
		     res.out, res.err);
	for (line = strtok_r(res.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int size;
		char kind[32];

		if (sscanf(line, "rank %d size %d kind %31s", &r, &size, kind) != 3)
			continue;
		lines++;
		cr_assert(r >= 0 && r < np, "rank out of range: %s", line);
		cr_assert_eq(size, np, "wrong size: %s", line);
		cr_assert_str_eq(kind, "pmix", "wrong bootstrap: %s", line);
		cr_assert_eq(seen[r]++, 0, "rank %d reported twice", r);
	}
	cr_assert_eq(lines, np, "%d rank lines for -np %d\nstderr:\n%s", lines, np, res.err);
	free(res.out);
	free(res.err);
}

static const char *const no_extra[] = { NULL };

/* One .timeout for every test: Criterion 2.4 leaks a timer (and LSan fails
 * the run) when a test with a shorter one ends while a longer one runs. */

Test(boot_pmix, mpirun_np1, .timeout = 150) { mpirun_ok(1, "ok", no_extra); }
Test(boot_pmix, mpirun_np2, .timeout = 150) { mpirun_ok(2, "ok", no_extra); }
Test(boot_pmix, mpirun_np4, .timeout = 150) { mpirun_ok(4, "ok", no_extra); }

/* Forcing PMIx under its launcher is the same as finding it. */
Test(boot_pmix, mpirun_forced, .timeout = 150)
{
	static const char *const forced[] = { "OXR_BOOT=pmix", NULL };

	mpirun_ok(2, "ok", forced);
}

/* 8 MiB from each rank: above the 4 MiB one PMIx value may hold, which
 * aborts mpirun itself unless the blob goes in chunks. */
Test(boot_pmix, mpirun_big, .timeout = 150) { mpirun_ok(4, "big", no_extra); }

/* Ranks that disagree on len: every rank says so, mpirun fails. */
Test(boot_pmix, mpirun_badlen, .timeout = 150)
{
	struct run res = mpirun(4, "badlen", no_extra);

	cr_assert_neq(res.rc, 0, "badlen passed\nstderr:\n%s", res.err);
	cr_assert(strstr(res.err, "len must be the same on every rank"), "unclear error:\n%s",
		  res.err);
	free(res.out);
	free(res.err);
}

/* Rank 1 leaves after the first allgather: the others' barrier fails (or
 * mpirun ends them) instead of hanging, and the job fails. */
Test(boot_pmix, mpirun_rank_dies, .timeout = 150)
{
	struct run res = mpirun(4, "die-after-first", no_extra);

	cr_assert_neq(res.rc, 0, "a job with a dead rank passed\nstderr:\n%s", res.err);
	free(res.out);
	free(res.err);
}

/* Forced PMIx without a launcher: a prompt, clear failure (PMIx would set up
 * a singleton otherwise), not a hang and not a crash. */
Test(boot_pmix, forced_without_launcher, .timeout = 150)
{
	static const char *const forced[] = { "OXR_BOOT=pmix", NULL };
	char *argv[] = { (char *)CHILD, (char *)"ok", NULL };
	struct run res = run_cmd(argv, forced, 20);

	cr_log_info("boot_child with OXR_BOOT=pmix, no launcher: %.3f s", res.secs);
	cr_assert(res.rc > 0, "want a failing exit, got %d\nstdout:\n%s\nstderr:\n%s", res.rc,
		  res.out, res.err);
	cr_assert(strstr(res.err, "PMIX_NAMESPACE"), "unclear error:\n%s", res.err);
	free(res.out);
	free(res.err);
}

/* A launch's PMIx variables left behind with its server gone: PMIx_Init
 * fails at once (libpmix crashes if finalized after that; we must not). */
Test(boot_pmix, stale_environment, .timeout = 150)
{
	static const char *const stale[] = { "PMIX_NAMESPACE=oxr-stale", "PMIX_RANK=0",
					     "PMIX_SERVER_URI41=oxr-stale.0;tcp4://127.0.0.1:1",
					     NULL };
	char *argv[] = { (char *)CHILD, (char *)"ok", NULL };
	struct run res = run_cmd(argv, stale, 20);

	cr_log_info("boot_child with a stale PMIx environment: %.3f s", res.secs);
	cr_assert(res.rc > 0, "want a failing exit, got %d\nstdout:\n%s\nstderr:\n%s", res.rc,
		  res.out, res.err);
	cr_assert(strstr(res.err, "PMIx_Init failed"), "unclear error:\n%s", res.err);
	free(res.out);
	free(res.err);
}
