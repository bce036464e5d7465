"""The gates as rules over a `TraceView` (documented in docs/judge.md).

The offline judge is these rules; the LLM judge is held to `check_reasoned` (a fact of the record, not
an opinion) and to the datum test of `datums_in` when it says a span cites a datum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shoparena.judge.gates import GateCheck
from shoparena.judge.trace import (
    STOPWORDS,
    ModelTurn,
    Observed,
    TraceView,
    numbers_in,
    price_key,
    words,
)
from shoparena.records.trajectory import TokenUsage
from shoparena.records.verdict import ANALYSES_RESULTS, CITES_DATUM, COMPARES_CANDIDATES, REASONED


@dataclass(frozen=True)
class RuleSettings:
    min_reasoning_words: int = 20
    """Model-written words across the trace below which nothing was reasoned."""
    min_completion_tokens: int = 32
    """Reported completion tokens below which no real inference happened (when usage is reported)."""
    min_tokens_per_word: float = 0.5
    """Reported tokens per word of reasoning text below which the text cannot come from that inference."""
    require_usage: bool = False
    """Fail gate 1 when the record reports no inference at all (usage all zero)."""
    min_analysis_hits: int = 2
    """Distinct observation facts one post-observation turn must mention to analyse the results."""
    price_tolerance: float = 0.01
    """A written price within this fraction of a seen price (or of a sum of two) is a rounding, not a fabrication."""


DEFAULT_RULES = RuleSettings()

_COMPARISON = re.compile(
    r"\b(cheaper|pricier|(?:more|less) expensive|lower|higher|better|worse|best|instead|whereas|while|"
    r"rather than|compared?|comparing|versus|vs\.?|however|but|than|prefer(?:red)?|over|only|exceeds?|"
    r"within|outside|because|since|unlike|both|either)\b",
    re.IGNORECASE,
)
_PRICE_CUE_BEFORE = re.compile(
    r"(?:[$¥€£]|\brp\.?|\busd|\bidr|\bprice[sd]?(?: (?:is|of|at))?|\bpriced at|\bcosts?|\bcosting|\btotal(?: of| is)?)"
    r"\s*[:=]?\s*$",
    re.IGNORECASE,
)
_PRICE_CUE_AFTER = re.compile(r"^\s*(?:dollars|usd|idr|yuan|rupiah|\$)\b", re.IGNORECASE)
_ID_LIKE = re.compile(r"(?<![\w.,])\d{6,}(?!\w|[.,]\d)")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence(s) of `text` holding [start, end), cut from `text` itself so it stays verbatim."""
    left = 0
    for match in _SENTENCE_END.finditer(text, 0, start):
        left = match.end()
    match = _SENTENCE_END.search(text, end)
    right = match.start() if match else len(text)
    return text[left:right].strip()


def _find_token(text: str, token: str) -> re.Match[str] | None:
    return re.search(rf"(?<![a-z0-9]){re.escape(token)}(?![a-z0-9])", text, re.IGNORECASE)


# -- gate 1 ---------------------------------------------------------------------------------------
def check_reasoned(view: TraceView, usage: TokenUsage, rules: RuleSettings = DEFAULT_RULES) -> GateCheck:
    """Gate 1. Inference is read from the verified inference log when the record has one (an agent
    behind the inference proxy: what it reports about its own usage is a claim and is ignored), else
    from `usage` (the harness's own model client counted it for in-process agents)."""
    if view.ungrounded_recommendation is not None:
        return GateCheck(
            REASONED,
            False,
            f"the recommendation names products no search of the episode returned "
            f"({view.ungrounded_recommendation}): it was not reasoned from the results",
        )
    if view.inference is not None and view.inference.served == 0:
        claimed = (
            f"; the {usage.completion_tokens} completion tokens the agent reports are not evidence"
            if usage.completion_tokens or usage.model_calls
            else ""
        )
        return GateCheck(
            REASONED,
            False,
            f"the verified inference log holds no served model request ({view.inference.requests} "
            f"request(s) made){claimed}",
        )
    steered = view.inference.unshown_id_calls if view.inference is not None else 0
    if steered:
        return GateCheck(
            REASONED,
            False,
            f"the verified inference log shows {steered} model tool call(s) naming product ids that no "
            "verified tool result of their request held: the model was shown text the agent wrote "
            "(doctored or summarised results), so the choice was not the model's",
        )
    if view.llm_calls == 0:
        if view.code_calls:
            reason = (
                f"the verified log shows {view.code_calls} code-origin call(s) and none emitted by the model"
            )
        else:
            reason = "the model made no tool call"
        return GateCheck(REASONED, False, reason)
    reasoning_words = view.reasoning_words()
    if reasoning_words < rules.min_reasoning_words:
        return GateCheck(
            REASONED,
            False,
            f"the model wrote {reasoning_words} word(s) of reasoning (< {rules.min_reasoning_words})",
        )
    source = "reported"
    if view.inference is not None:
        source = "verified by the inference proxy"
        usage = TokenUsage(
            prompt_tokens=view.inference.prompt_tokens,
            completion_tokens=view.inference.completion_tokens,
            model_calls=view.inference.served,
        )
    reported = usage.completion_tokens > 0 or usage.model_calls > 0
    if not reported:
        if rules.require_usage:
            return GateCheck(REASONED, False, "the record reports no model inference (usage is zero)")
        return GateCheck(REASONED, True, f"{reasoning_words} words of model reasoning (usage not reported)")
    if usage.completion_tokens < rules.min_completion_tokens:
        return GateCheck(
            REASONED,
            False,
            f"{usage.completion_tokens} completion tokens {source} (< {rules.min_completion_tokens})",
        )
    if usage.completion_tokens < rules.min_tokens_per_word * reasoning_words:
        return GateCheck(
            REASONED,
            False,
            f"{reasoning_words} words of reasoning but only {usage.completion_tokens} completion tokens "
            f"{source}: the text was not produced by that inference",
        )
    return GateCheck(
        REASONED,
        True,
        f"{usage.completion_tokens} completion tokens over {usage.model_calls} model call(s) ({source}), "
        f"{reasoning_words} words of reasoning",
    )


# -- gate 2 ---------------------------------------------------------------------------------------
def analysis_hits(turn: ModelTurn) -> list[tuple[str, int, int]]:
    """Facts of earlier observations this turn mentions that neither the user nor the model wrote first."""
    hits: dict[str, tuple[int, int]] = {}
    for token in set(words(turn.text)):
        if (
            len(token) >= 3
            and token in turn.seen.tokens
            and token not in turn.own_words
            and token not in STOPWORDS
            and not token.isdigit()
        ):
            match = _find_token(turn.text, token)
            if match:
                hits[token] = (match.start(), match.end())
    for value, written, start, end in numbers_in(turn.text):
        cents = price_key(value)
        digits = written.replace(",", "").split(".")[0]
        if len(digits) >= 3 and cents in turn.seen.numbers and cents not in turn.own_numbers:
            hits.setdefault(f"#{cents}", (start, end))
        elif written in turn.seen.ids and written not in turn.own_words:
            hits.setdefault(written, (start, end))
    return sorted(((key, *pos) for key, pos in hits.items()), key=lambda hit: hit[1])


def check_analyses(view: TraceView, rules: RuleSettings = DEFAULT_RULES) -> GateCheck:
    best: tuple[ModelTurn, list] | None = None
    for turn in view.turns:
        if not turn.after_observation:
            continue
        hits = analysis_hits(turn)
        if best is None or len(hits) > len(best[1]):
            best = (turn, hits)
        if len(hits) >= rules.min_analysis_hits:
            spans = list(dict.fromkeys(sentence_around(turn.text, s, e) for _, s, e in hits[:2]))
            return GateCheck(
                ANALYSES_RESULTS,
                True,
                f"a turn after the results mentions {len(hits)} fact(s) they returned",
                spans,
            )
    if best is None:
        return GateCheck(ANALYSES_RESULTS, False, "no model text follows a successful tool result")
    return GateCheck(
        ANALYSES_RESULTS,
        False,
        f"no turn after the results mentions {rules.min_analysis_hits} facts they returned "
        f"(best: {len(best[1])})",
    )


# -- gate 3 ---------------------------------------------------------------------------------------
def datums_in(text: str, seen: Observed, query: str = "") -> list[tuple[str, str, int, int]]:
    """Specific data of `seen` written in `text`: (kind, datum, start, end) for ids, prices, attributes."""
    found: list[tuple[str, str, int, int]] = []
    for match in _ID_LIKE.finditer(text):
        if match.group(0) in seen.ids:
            found.append(("id", match.group(0), match.start(), match.end()))
    for value, written, start, end in numbers_in(text):
        if price_key(value) in seen.prices and written not in seen.ids:
            found.append(("price", written, start, end))
    query_lower = query.lower()
    for value in seen.attribute_values:
        if value in query_lower or value in STOPWORDS:
            continue
        match = _find_token(text, value)
        if match:
            found.append(("attribute", value, match.start(), match.end()))
    return sorted(found, key=lambda item: item[2])


def _near_seen_price(cents: int, seen: Observed, tolerance: float) -> bool:
    if cents in seen.numbers:
        return True
    prices = list(seen.prices)
    for price in prices:
        if abs(price - cents) <= tolerance * max(price, 1):
            return True
    if len(prices) <= 400:
        for i, a in enumerate(prices):
            for b in prices[i:]:
                if abs(a + b - cents) <= tolerance * max(a + b, 1):
                    return True
    return False


MAX_BASKET_PRICES = 10  # subset sums of at most this many cited prices (2^10 sums)


def basket_totals(turn: ModelTurn) -> set[int]:
    """Totals of any subset of the seen prices this turn itself cites (a basket summed in the text)."""
    cited = list(
        dict.fromkeys(
            price_key(value) for value, *_ in numbers_in(turn.text) if price_key(value) in turn.seen.prices
        )
    )[:MAX_BASKET_PRICES]
    totals = {0}
    for cents in cited:
        totals |= {total + cents for total in totals}
    totals.discard(0)
    return totals


def fabricated_data(turn: ModelTurn, rules: RuleSettings = DEFAULT_RULES) -> list[str]:
    """Ids and prices this turn writes that no earlier observation, the query or the model's calls showed.

    A total of prices the turn itself cites is arithmetic on seen data, not an invention."""
    bad: list[str] = []
    totals: set[int] | None = None
    for match in _ID_LIKE.finditer(turn.text):
        token = match.group(0)
        if (
            token not in turn.seen.ids
            and token not in turn.seen.tokens
            and token not in turn.own_words
            and price_key(float(token)) not in turn.seen.numbers
        ):
            bad.append(f"id {token}")
    for value, written, start, end in numbers_in(turn.text):
        if len(written) >= 6 and written.isdigit():
            continue  # id-like, judged above
        before = turn.text[max(0, start - 16) : start]
        after = turn.text[end : end + 10]
        if not (_PRICE_CUE_BEFORE.search(before) or _PRICE_CUE_AFTER.search(after)):
            continue
        cents = price_key(value)
        if cents in turn.own_numbers or _near_seen_price(cents, turn.seen, rules.price_tolerance):
            continue
        if totals is None:
            totals = basket_totals(turn)
        if any(abs(total - cents) <= rules.price_tolerance * max(total, 1) for total in totals):
            continue
        bad.append(f"price {written}")
    return bad


def check_cites_datum(view: TraceView, rules: RuleSettings = DEFAULT_RULES) -> GateCheck:
    for turn in view.turns:
        fabricated = fabricated_data(turn, rules)
        if fabricated:
            return GateCheck(
                CITES_DATUM,
                False,
                f"the model cites data no observation showed: {', '.join(fabricated[:3])}",
                [],
            )
    for turn in view.turns:
        found = datums_in(turn.text, turn.seen, view.query)
        if found:
            kind, datum, start, end = found[0]
            return GateCheck(
                CITES_DATUM,
                True,
                f"cites the {kind} {datum} seen in an earlier observation",
                [sentence_around(turn.text, start, end)],
            )
    return GateCheck(CITES_DATUM, False, "no price, id or attribute value from an observation is cited")


# -- gate 4 ---------------------------------------------------------------------------------------
def product_mentions(turn: ModelTurn) -> dict[str, tuple[int, int]]:
    """Seen products this turn names, by id or by a price only that product was shown at."""
    mentions: dict[str, tuple[int, int]] = {}
    for match in _ID_LIKE.finditer(turn.text):
        if match.group(0) in turn.seen.products:
            mentions.setdefault(match.group(0), (match.start(), match.end()))
    for value, _written, start, end in numbers_in(turn.text):
        owners = turn.seen.prices.get(price_key(value), set())
        if len(owners) == 1:
            mentions.setdefault(next(iter(owners)), (start, end))
    return mentions


def check_compares(view: TraceView) -> GateCheck:
    for turn in view.turns:
        mentions = product_mentions(turn)
        if len(mentions) < 2:
            continue
        marker = _COMPARISON.search(turn.text)
        if not marker:
            continue
        positions = sorted(mentions.values())
        start = min(positions[0][0], marker.start())
        end = max(positions[1][1], marker.end())
        span = sentence_around(turn.text, start, end)
        return GateCheck(
            COMPARES_CANDIDATES,
            True,
            f"weighs {len(mentions)} candidates ({', '.join(sorted(mentions)[:3])}) with '{marker.group(0)}'",
            [span],
        )
    return GateCheck(
        COMPARES_CANDIDATES, False, "no turn weighs two seen candidates against each other with a reason"
    )
