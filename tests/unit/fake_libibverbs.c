/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * A stand-in libibverbs for the build-check and load tests: one function,
 * FAKE_REGISTER (verbs_register_driver_NN), exported under whatever symbol
 * version the Makefile's version script names (IBVERBS_PRIVATE_NN, or none).
 */
void FAKE_REGISTER(const void *ops);
void FAKE_REGISTER(const void *ops)
{
	(void)ops;
}
