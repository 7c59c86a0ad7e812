"""Rules as ValidatingAdmissionPolicies (CEL): checks kube-apiserver runs in-process."""
