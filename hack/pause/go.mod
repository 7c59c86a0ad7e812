module workload-webhook/hack/pause

go 1.22
