/* SPDX-License-Identifier: MIT */
/*
 * ring: the smallest oxr group program.  Run it as
 *     oxr-run -n 4 ./ring            (or: mpirun -np 4 ./ring)
 * Rank 0 sends the integer 0 to rank 1; every rank adds its rank and passes
 * the number on; rank 0 gets back 0 + 1 + ... + (n-1) and checks it.
 */
#include <stdio.h>
#include <oxr/oxr.h>

#define TRY(call)                                                                   \
	do {                                                                        \
		if ((call) != OXR_OK) {                                             \
			fprintf(stderr, "ring: %s: %s\n", #call, oxr_errmsg());    \
			return 1;                                                   \
		}                                                                   \
	} while (0)

int main(void)
{
	oxr_boot *boot;
	oxr_ctx *ctx;
	oxr_group *g;
	oxr_arena *a;
	oxr_rmsg *in = NULL;
	mpz_t v;
	int rank, n;

	TRY(oxr_boot_open(&boot));            /* who started us: oxr-run, PMIx, or nobody */
	TRY(oxr_ctx_create(&ctx));            /* settings from OXR_* variables */
	TRY(oxr_group_boot(ctx, boot, &g));   /* links to every other rank */
	TRY(oxr_arena_create(&a));            /* memory for the objects we build */
	rank = oxr_group_rank(g);
	n = oxr_group_size(g);
	mpz_init(v);

	if (rank != 0 || n == 1) {
		if (n > 1) { /* take the number from the left neighbour */
			TRY(oxr_recv(g, rank - 1, -1, &in));
			TRY(oxr_cmo_get_mpz(in->msg.cmo, v));
			oxr_rmsg_free(in);
		}
		mpz_add_ui(v, v, (unsigned long)rank);
	}
	if (n > 1) { /* pass it to the right: an OX_DATA message carrying a CMO_ZZ */
		oxr_ox_msg out = { .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_zz(a, v) };
		TRY(oxr_send(g, (rank + 1) % n, &out));
	}
	if (rank == 0 && n > 1) { /* and back at the start */
		TRY(oxr_recv(g, n - 1, -1, &in));
		TRY(oxr_cmo_get_mpz(in->msg.cmo, v));
		oxr_rmsg_free(in);
	}
	if (rank == 0) {
		long want = (long)n * (n - 1) / 2;
		printf("ring of %d over %s: got %ld, want %ld: %s\n", n, oxr_ctx_transport(ctx),
		       mpz_get_si(v), want, mpz_get_si(v) == want ? "ok" : "WRONG");
		if (mpz_get_si(v) != want)
			return 1;
	}
	mpz_clear(v);
	oxr_arena_destroy(a);
	oxr_group_destroy(g);
	oxr_ctx_destroy(ctx);
	oxr_boot_close(boot);
	return 0;
}
