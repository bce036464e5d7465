"""Scoring (SPEC §4): the rule scorer, title similarity, and suite metrics.

Public API (what the eval runner and the arena call):
- `RuleScorer(lookup, similarity, mode).score(problem, product_ids, **meta)` / `.score_many(...)`
- `score_answers(problems, answers, lookup, similarity, mode)` / `score_answer_file(...)` -> SuiteScore
- `aggregate(scores)`, `pass_at_k(n, c, k)`, `suite_pass_at_k(scores, k)`, `judge_coefficient(q)`,
  `arena_final_score(success_rate, q)`
- `minilm_similarity(cache_path)`, `LexicalSimilarity()`, `make_similarity(kind)`
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Answer": "shoparena.scoring.answers",
        "AnswerReject": "shoparena.scoring.answers",
        "read_answers": "shoparena.scoring.answers",
        "SuiteMetrics": "shoparena.scoring.metrics",
        "aggregate": "shoparena.scoring.metrics",
        "arena_final_score": "shoparena.scoring.metrics",
        "judge_coefficient": "shoparena.scoring.metrics",
        "pass_at_k": "shoparena.scoring.metrics",
        "suite_pass_at_k": "shoparena.scoring.metrics",
        "AXES": "shoparena.scoring.rules",
        "DictLookup": "shoparena.scoring.rules",
        "ItemScore": "shoparena.scoring.rules",
        "ProblemScore": "shoparena.scoring.rules",
        "ProductLookup": "shoparena.scoring.rules",
        "RuleScorer": "shoparena.scoring.rules",
        "ScoringMode": "shoparena.scoring.rules",
        "EmbeddingSimilarity": "shoparena.scoring.similarity",
        "LexicalSimilarity": "shoparena.scoring.similarity",
        "TitleSimilarity": "shoparena.scoring.similarity",
        "make_similarity": "shoparena.scoring.similarity",
        "minilm_similarity": "shoparena.scoring.similarity",
        "SuiteScore": "shoparena.scoring.suite",
        "load_problem_file": "shoparena.scoring.suite",
        "score_answer_file": "shoparena.scoring.suite",
        "score_answers": "shoparena.scoring.suite",
    },
)

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
