"""Learning-theory methods, one subpackage per paper: task attribution by kernel surrogates (`kernel_surrogate`),
Policy Newton in RKHS (`policy_newton`), batch-size scheduling by functional scaling laws (`bss_fsl`), subspace-cluster
preservation (`cluster_preservation`)."""
