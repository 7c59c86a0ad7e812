"""The v1alpha3 building blocks, one module each: what a block must look like
(its schema), its own rules, and its update rules. Callers pass the block's
value and its path; every function returns a list of FieldError."""
