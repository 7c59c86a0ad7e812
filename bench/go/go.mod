module workload-webhook/bench

go 1.24
