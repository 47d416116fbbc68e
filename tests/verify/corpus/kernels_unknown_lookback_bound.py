"""The correct three-stage pipeline verified with a look-back of one iteration: the tile consumed at
iteration k was written at iteration k-2, beyond the bound, so the MMA check is unknown (with the
reason and what to raise), never verified and never a false violation.

expect: unknown
code: UNKNOWN_LOOKBACK
"""

from tests.verify.corpus.kernels_pipeline_three_stages_ok import KERNEL  # noqa: F401

PARAMS = {"lookback": 1}
