"""The OAI LTE EPS components: HSS, MME, SPGW-C/-U, eNB (with its UE simulator)."""
