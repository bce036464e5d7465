"""Scoring (SPEC §4): the rule scorer, title similarity, and suite metrics.

Public API (what the eval runner and the arena call):
- `RuleScorer(lookup, similarity, mode).score(problem, product_ids, **meta)` / `.score_many(...)`
- `score_answers(problems, answers, lookup, similarity, mode)` / `score_answer_file(...)` -> SuiteScore
- `aggregate(scores)`, `pass_at_k(n, c, k)`, `suite_pass_at_k(scores, k)`, `judge_coefficient(q)`,
  `arena_final_score(success_rate, q)`
- `minilm_similarity(cache_path)`, `LexicalSimilarity()`, `make_similarity(kind)`
"""

from shoparena.scoring.answers import Answer, AnswerReject, read_answers
from shoparena.scoring.metrics import (
    SuiteMetrics,
    aggregate,
    arena_final_score,
    judge_coefficient,
    pass_at_k,
    suite_pass_at_k,
)
from shoparena.scoring.rules import (
    AXES,
    DictLookup,
    ItemScore,
    ProblemScore,
    ProductLookup,
    RuleScorer,
    ScoringMode,
)
from shoparena.scoring.similarity import (
    EmbeddingSimilarity,
    LexicalSimilarity,
    TitleSimilarity,
    make_similarity,
    minilm_similarity,
)
from shoparena.scoring.suite import SuiteScore, load_problem_file, score_answer_file, score_answers

__all__ = [
    "AXES",
    "Answer",
    "AnswerReject",
    "DictLookup",
    "EmbeddingSimilarity",
    "ItemScore",
    "LexicalSimilarity",
    "ProblemScore",
    "ProductLookup",
    "RuleScorer",
    "ScoringMode",
    "SuiteMetrics",
    "SuiteScore",
    "TitleSimilarity",
    "aggregate",
    "arena_final_score",
    "judge_coefficient",
    "load_problem_file",
    "make_similarity",
    "minilm_similarity",
    "pass_at_k",
    "read_answers",
    "score_answer_file",
    "score_answers",
    "suite_pass_at_k",
]
