"""Learning-theory methods: task attribution by kernel surrogates, Policy Newton in RKHS, batch-size
scheduling by functional scaling laws, subspace-cluster preservation."""
