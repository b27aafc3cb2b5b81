"""mearas experiments harness: nodes, assemblies, sweeps, records and plots."""
