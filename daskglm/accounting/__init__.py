"""What each method costs: the ledger of rounds, the byte model, the cost model and the
comparison of methods.  Pure records and arithmetic: nothing here contacts a cluster."""
