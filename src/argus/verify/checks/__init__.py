"""The verifier's checks: each turns one invariant of the catalog into SMT queries (or, for the
performance warnings, exact enumeration over the threads of a warp) and returns findings."""
