"""Canonical forms: the bytes we hash for suite integrity and the fingerprint that names a leak cluster.

Two problems are the same underlying task when their gold items and constraints match, however the
query is worded, whatever order the attributes or items were listed in and whatever the case of the
values. The fingerprint normalises exactly those differences away and nothing else.
"""

from __future__ import annotations

import hashlib

import orjson

from shoparena.problems.models import Problem, RewardSpec


def canonical_json(value: object) -> bytes:
    """Sorted-key compact JSON: equal values give equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def content_hash(records: list[dict]) -> str:
    """sha256 over the canonical JSON of a list of problem records (a suite's integrity hash)."""
    return hashlib.sha256(canonical_json(records)).hexdigest()


def _norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def _number(value: float | None) -> float | None:
    return None if value is None else float(value)


def normalised_spec(spec: RewardSpec) -> dict:
    """One gold item with case, whitespace and ordering differences removed."""
    attributes: dict[str, list[str]] = {}
    for entry in spec.attributes or []:
        for key, values in entry.items():
            attributes.setdefault(_norm(key), []).extend(_norm(v) for v in values)
    return {
        "product_id": str(spec.product_id),
        "title": sorted(_norm(t) for t in spec.title),
        "sku_options": sorted(
            sorted((_norm(k), _norm(v)) for k, v in option.items()) for option in spec.sku_options or []
        ),
        "attributes": {key: sorted(set(values)) for key, values in sorted(attributes.items())},
        "service": sorted(set(spec.service or [])),
        "price": sorted(
            (mode, [_number(b) for b in bounds])
            for entry in spec.price or []
            for mode, bounds in entry.items()
        ),
    }


def reward_fingerprint(problem: Problem) -> str:
    """The leak cluster id: a hash of the normalised reward spec (items sorted), `lc-` + 16 hex digits."""
    items = sorted(canonical_json(normalised_spec(spec)) for spec in problem.rewards)
    digest = hashlib.sha256(b"\n".join(items)).hexdigest()
    return f"lc-{digest[:16]}"


def with_leak_clusters(problems: list[Problem]) -> list[Problem]:
    """Problems read from files that carry no `leak_cluster_id` get the fingerprint of their reward spec,
    so a task reused from another file or shop lands in the same cluster as the original."""
    return [
        p if p.leak_cluster_id else p.model_copy(update={"leak_cluster_id": reward_fingerprint(p)})
        for p in problems
    ]
