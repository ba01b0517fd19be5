/* SPDX-License-Identifier: MIT */
/*
 * A port that goes down under a verbs link (the netdev under rxe0, in
 * ci/rxe-guest): a binary of its own, because it takes the port away from
 * every test running beside it; ctest runs it alone.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "link_pair.h"

TestSuite(verbs_port, .timeout = 120);

/* The state of port 1 of the test device, from sysfs ("4: ACTIVE"). */
static int port_active(void)
{
	char path[128], state[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/state",
		 getenv("OXR_DEVICE") ? getenv("OXR_DEVICE") : "rxe0");
	f = fopen(path, "r");
	if (f) {
		if (!fgets(state, sizeof(state), f))
			state[0] = 0;
		fclose(f);
	}
	return strstr(state, "ACTIVE") != NULL;
}

/* The port goes down (the netdev under rxe0, in the guest): an idle link's
 * waiting receive fails at once with the cause, from the device's async
 * event, not after the QP's retries.  Needs root and ci/rxe-guest's dummy0. */
Test(verbs_port, a_port_that_goes_down_fails_the_waiting_calls)
{
	struct pair p;
	struct side x;
	pthread_t t;
	int i;

	if (geteuid() != 0 || system("ip link show dummy0 >/dev/null 2>&1") != 0)
		cr_skip_test("needs root and the dummy0 netdev of ci/rxe-guest");
	verbs_pair(&p);
	x = (struct side){ .g = p.b, .timeout_ms = 30000 };
	pthread_create(&t, NULL, blocked_recv, &x);
	usleep(200000);
	cr_assert_eq(system("ip link set dummy0 down"), 0);
	pthread_join(t, NULL);
	cr_assert_eq(system("ip link set dummy0 up"), 0);
	/* back as it was: port ACTIVE, the IPv6 link-local address out of DAD
	 * (the rdma_cm test binds it) */
	for (i = 0; i < 100 && (!port_active() ||
				system("ip -6 addr show dev dummy0 tentative | grep -q inet6") == 0);
	     i++)
		usleep(100000);
	cr_assert_eq(x.st, OXR_ERR_PEER, "the receive failed: %d %s", x.st, x.err);
	cr_assert(strstr(x.err, "went down"), "and says why: %s", x.err);
	cr_assert(port_active(), "the port is back for the tests after this one");
	free_pair(&p);
}

