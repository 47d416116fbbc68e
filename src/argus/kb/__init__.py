"""The knowledge base: curated Hopper optimization techniques, and skills mined by KLineage
(`argus.lineage.skills`, loaded with `with_skills`), as data files with one schema, the kernel
features their preconditions test, retrieval that ranks them for a kernel, and the executable
(policy) transforms.

    from argus.kb import kernel_features, retrieve, apply
    from argus.kernels import get_kernel
    from argus.verify import verify

    gemm = get_kernel("gemm_mma_sync")
    for match in retrieve(kernel_features(gemm), findings=verify(gemm), k=5):
        print(match.entry.id, round(match.score, 2), match.reasons[0])
    params = apply("pipeline-stages", get_kernel("gemm_cp_async"), value=3)   # {"STAGES": 3, ...}

See docs/kb.md.
"""

from argus.kb.errors import KBError, SchemaError, SchemaProblem
from argus.kb.features import FEATURES, Features, kernel_features
from argus.kb.retrieval import Match, locus_sites, match_entry, retrieve
from argus.kb.schema import CATEGORIES, PRECONDITION_CATEGORIES, Entry, parse_entry
from argus.kb.store import entries, get_entry, load_entries, load_file, search, with_skills
from argus.kb.transforms import Action, actions, apply, declared_actions, ranked_actions

__all__ = [
    "CATEGORIES",
    "FEATURES",
    "PRECONDITION_CATEGORIES",
    "Action",
    "Entry",
    "Features",
    "KBError",
    "Match",
    "SchemaError",
    "SchemaProblem",
    "actions",
    "apply",
    "declared_actions",
    "entries",
    "get_entry",
    "kernel_features",
    "load_entries",
    "load_file",
    "locus_sites",
    "match_entry",
    "parse_entry",
    "ranked_actions",
    "retrieve",
    "search",
    "with_skills",
]
