// The orchestrator's own suite under node:test: each test gets a fresh doubleagent session (its
// own ledger, keys, fates and clock) behind its own URL, so the code under test needs only that
// URL. Rules: ACC-1 (one intent, one effect), REC-4 (an unknown outcome is looked up, not
// retried blind).

import assert from "node:assert/strict";
import { test } from "node:test";

import { useDoubleagent } from "doubleagent/testing";

import { pay, paySafely } from "./orchestrator.js";

const da = useDoubleagent("scenarios/lost-response.toml");

test("acc1_rec4 a blind retry after a lost response pays twice, and the verifier says so", async () => {
  await pay(da.session.serviceUrl("payments"), "acct-9", 100);
  assert.equal((await da.session.ledger({ service: "payments", applied: true })).length, 2);
  const verdict = await da.session.verify();
  assert.ok(verdict.rules.has("ACC-1") && verdict.rules.has("REC-4"), [...verdict.rules].join(", "));
  assert.throws(() => verdict.assertClean(), /ACC-1/);
});

test("acc1 a same-key retry pays once and its claim verifies clean", async () => {
  const done = await paySafely(da.session.serviceUrl("payments"), "acct-9", 100);
  await da.session.claims({ actions: [{ key: done.key, claim: "succeeded" }] });
  const replays = await da.session.ledger({ disposition: "replayed" });
  assert.deepEqual(replays.map((e) => e.replay_of), [1]);
  (await da.session.verify()).assertClean();
});

test("sessions do not share keys, fates or clocks", async () => {
  const other = await da.server.session();
  await paySafely(other.serviceUrl("payments"), "acct-9", 100);
  assert.deepEqual(await da.session.ledger(), []);
  assert.equal((await other.ledger()).length, 2);
  await da.session.advance("25h");
  assert.equal((await other.clock()).elapsed_ms, 0);
  await other.drop();
});
