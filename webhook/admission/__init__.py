"""AdmissionReview v1 in and out: no HTTP here, no rules here."""
