"""The correct three-stage pipeline verified with a look-back of one iteration: the tile consumed at
iteration k was written at iteration k-2, beyond the bound, so the MMA check is unknown (with the
reason and what to raise), never verified and never a false violation. The blame names loop k and the
look-back that decides it (2, found by running the check again).

expect: unknown
code: UNKNOWN_LOOKBACK
fact: UNKNOWN_LOOKBACK blame.fix == "verify with lookback=2"
fact: UNKNOWN_LOOKBACK blame.loc.text == "for k in T.serial(T.cdiv(K, BK)):"
"""

from tests.verify.corpus.kernels_pipeline_three_stages_ok import KERNEL  # noqa: F401

PARAMS = {"lookback": 1}
