// A small payment orchestrator, as an agent framework might have it: pay a vendor, retrying when
// the payment service does not answer. `pay` has the classic bug: every attempt mints a new
// Idempotency-Key, so a response lost after the transfer was applied becomes a second transfer.
// `paySafely` keeps one key per intent, so a retry replays the first answer instead.

import { randomUUID } from "node:crypto";

async function attempt(paymentsUrl: string, to: string, amount: number, key: string): Promise<any> {
  const r = await fetch(`${paymentsUrl}/v1/transfers`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ to, amount }),
  });
  if (!r.ok) throw new Error(`payment answered ${r.status}`);
  return r.json();
}

/** Buggy: a fresh key per attempt (blind retry). */
export async function pay(paymentsUrl: string, to: string, amount: number, attempts = 2): Promise<any> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await attempt(paymentsUrl, to, amount, randomUUID());
    } catch (e) {
      last = e;
    }
  }
  throw new Error(`payment failed after ${attempts} attempts`, { cause: last });
}

/** Fixed: one key for the intent, reused by every attempt. */
export async function paySafely(paymentsUrl: string, to: string, amount: number, attempts = 2): Promise<any> {
  const key = randomUUID();
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return { key, ...(await attempt(paymentsUrl, to, amount, key)) };
    } catch (e) {
      last = e;
    }
  }
  throw new Error(`payment failed after ${attempts} attempts`, { cause: last });
}
