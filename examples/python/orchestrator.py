"""A small payment orchestrator, as an agent framework might have it: pay a vendor, retrying when
the payment service does not answer. `pay` has the classic bug: every attempt mints a new
Idempotency-Key, so a response lost after the transfer was applied becomes a second transfer.
`pay_safely` keeps one key per intent, so a retry replays the first answer instead.
"""

from __future__ import annotations

import uuid

import httpx


def pay(payments_url: str, to: str, amount: int, attempts: int = 2) -> dict:
    """Buggy: a fresh key per attempt (blind retry)."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            r = httpx.post(
                payments_url + "/v1/transfers",
                json={"to": to, "amount": amount},
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
            r.raise_for_status()
            return r.json()
        except httpx.HTTPError as e:
            last = e
    raise RuntimeError(f"payment failed after {attempts} attempts") from last


def pay_safely(payments_url: str, to: str, amount: int, attempts: int = 2) -> dict:
    """Fixed: one key for the intent, reused by every attempt."""
    key = str(uuid.uuid4())
    last: Exception | None = None
    for _ in range(attempts):
        try:
            r = httpx.post(
                payments_url + "/v1/transfers",
                json={"to": to, "amount": amount},
                headers={"Idempotency-Key": key},
            )
            r.raise_for_status()
            return {"key": key, **r.json()}
        except httpx.HTTPError as e:
            last = e
    raise RuntimeError(f"payment failed after {attempts} attempts") from last
