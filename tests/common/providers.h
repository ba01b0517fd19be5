/* SPDX-License-Identifier: MIT */
/*
 * Per-provider tests: one body, one instance per transport provider this
 * machine has (as UCX's UCT_INSTANTIATE_TEST_CASE), Criterion parameterized:
 *
 *     PROVIDER_TEST(link, auth_link_both_orders)
 *     {
 *             struct pair p;
 *
 *             make_pair_on(&p, pv, 2, "little", "little");
 *             ...
 *
 * The list is built at run time: OXR_TEST_PROVIDERS (a comma list: "tcp",
 * "shm", "shm-fifo", "verbs", "tcp,verbs") when set, else "tcp", "shm",
 * "shm-fifo" (shm with OXR_SHM_RINGS=0: every link through the receivers'
 * shared FIFOs) and, where
 * oxr_device_query finds an RDMA device a context would use, "verbs".  Each instance sets its
 * provider on its contexts itself (oxr_ctx_params, not the environment) and
 * says in the log which one it runs on; a provider named but missing or
 * unknown fails its instances, never skips them.  The suites of these tests
 * end in _per_provider: ci/ctest-lib.sh counts one instance of each test
 * there per provider (its test_providers_count does the same sums).
 */
#ifndef OXR_TEST_PROVIDERS_H
#define OXR_TEST_PROVIDERS_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#define PROVIDERS_MAX 8

struct provider {
	char name[32];  /* the transport: tcp, shm, verbs */
	char label[32]; /* what the list said: shm-fifo is shm with env */
	char env[32];   /* set in the test's environment (NAME=value), or "" */
};

/* The providers to run on, for ParameterizedTestParameters. */
struct criterion_test_params test_providers(void);

/* Logs "SUITE/NAME on PROVIDER" (stderr, shown without --verbose); fails
 * at once for a name that is no transport. */
void provider_begin(const struct provider *pv, const char *suite, const char *name);

/* The oxr_ctx_params transport value of pv (OXR_CTX_PARAM_TRANSPORT). */
int provider_transport(const struct provider *pv);
/* "OXR_TRANSPORT=<pv>", for the environment of the ranks a test starts
 * (oxr-run, mpirun): their contexts then use pv or fail. */
const char *provider_env(const struct provider *pv);

/* A test in suite SUITE_per_provider, run once per provider with
 * `const struct provider *pv` in scope; its log line names the provider. */
#define PROVIDER_TEST(suite, name, ...)                                                    \
	ParameterizedTestParameters(suite##_per_provider, name)                            \
	{                                                                                  \
		return test_providers();                                                   \
	}                                                                                  \
	static void suite##_##name##_body(const struct provider *pv);                      \
	ParameterizedTest(const struct provider *pv, suite##_per_provider, name,          \
			  ##__VA_ARGS__)                                                   \
	{                                                                                  \
		provider_begin(pv, #suite "_per_provider", #name);                         \
		suite##_##name##_body(pv);                                                 \
	}                                                                                  \
	static void suite##_##name##_body(const struct provider *pv)

#endif
