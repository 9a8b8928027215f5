// The package against the real binary: serve, sessions, the ledger, the clock, claims, the
// verdict, the HTML report, binary discovery and the test-runner helpers.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";

import { AdminError, findBinary, serve } from "doubleagent";
import { connect, globalSetup, useDoubleagent } from "doubleagent/testing";

const SCENARIO = `
name = "npm-package"
clock = "manual"

[services.payments]
idempotency = { preset = "stripe", retention = "24h" }

[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
intent = ["/to", "/amount"]
fates = ["drop-after-apply", "respond"]
respond = { status = 201, json = { id = "{{action.id}}", status = "succeeded" } }
`;

async function transfer(url, key) {
  try {
    const r = await fetch(`${url}/v1/transfers`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ to: "acct-9", amount: 100 }),
    });
    return r.status;
  } catch {
    return 0; // the fate dropped the response
  }
}

test("serve starts on port 0 from TOML text, and stop ends it", async () => {
  const server = await serve(SCENARIO);
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(server.serviceUrl("payments"), `${server.url}/payments`);
  assert.throws(() => server.serviceUrl("nope"), /no service named "nope"; it has: payments/);
  assert.equal((await server.health()).status, "ok");
  await server.stop();
  assert.notEqual(server.process.exitCode ?? server.process.signalCode, null);
});

test("a bad scenario is refused with the server's own error", async () => {
  await assert.rejects(serve("[services.x]\nnope = 1\n"), /did not start[\s\S]*nope/);
  // Named as the inline scenario, not as the temporary file it was written to (gone by now).
  await assert.rejects(serve("[services.x]\nnope = 1\n"), (e) => /<inline scenario>:2:1: /.test(e.message) && !/doubleagent-/.test(e.message));
});

test("acc1_rec4 a blind retry is found, and assertClean throws the CLI's report", async () => {
  const server = await serve(SCENARIO);
  try {
    const s = await server.session();
    assert.match(s.url, /\/_s\/t-[0-9a-f]{16}$/);
    assert.equal(await transfer(s.serviceUrl("payments"), "k-1"), 0);
    assert.equal(await transfer(s.serviceUrl("payments"), "k-2"), 201);
    assert.equal((await s.ledger({ applied: true })).length, 2);
    assert.equal((await s.waitFor(2, { service: "payments" })).length, 2);
    const v = await s.verify();
    assert.equal(v.state, "findings");
    assert.ok(v.rules.has("ACC-1") && v.rules.has("REC-4"), [...v.rules].join(","));
    assert.throws(() => v.assertClean(), /ACC-1/);
    assert.deepEqual(await server.ledger(), [], "the default session saw nothing");
    const dir = mkdtempSync(join(tmpdir(), "da-report-"));
    const html = await s.reportHtml(join(dir, "out", "report.html"));
    assert.match(readFileSync(html, "utf8"), /<html/i);
    await s.drop();
  } finally {
    await server.stop();
  }
});

test("acc3 a same-key retry with its claim is clean; the clock, revisions and errors", async () => {
  const server = await serve(SCENARIO);
  try {
    const s = await server.session("named-one");
    assert.equal(await transfer(s.serviceUrl("payments"), "k-1"), 0);
    assert.equal(await transfer(s.serviceUrl("payments"), "k-1"), 201);
    await s.claims({ actions: [{ key: "k-1", claim: "succeeded" }] });
    (await s.verify()).assertClean();
    await s.advance("25h");
    assert.equal((await s.clock()).elapsed_ms, 25 * 3600 * 1000);
    await s.advance(1.5);
    assert.equal((await s.clock()).elapsed_ms, 25 * 3600 * 1000 + 1500);
    assert.equal((await s.declareRevision(2)).revision, 2);
    await assert.rejects(s.advance("soon"), (e) => e instanceof AdminError && e.status === 400 && /by:/.test(e.reason));
    await assert.rejects(s.waitFor(99, {}, 0.2), { name: "TimeoutError" });
    await s.reset();
    assert.deepEqual(await s.ledger(), []);
  } finally {
    await server.stop();
  }
});

test("an admin token is sent on every call", async () => {
  const server = await serve(SCENARIO, { adminToken: "tok-1" });
  try {
    const s = await server.session();
    assert.equal((await s.verify()).clean, true);
    const r = await fetch(`${server.url}/_admin/ledger`);
    assert.equal(r.status, 401);
  } finally {
    await server.stop();
  }
});

test("the admin token in the environment is the client's default, as it is the server's", async () => {
  // The spawned server takes DOUBLEAGENT_ADMIN_TOKEN from the environment it inherits (as
  // docs/staging.md says to set it); the client must send the same token.
  process.env.DOUBLEAGENT_ADMIN_TOKEN = "env-tok";
  try {
    const server = await serve(SCENARIO);
    try {
      assert.deepEqual(await (await server.session()).ledger(), []);
      assert.equal((await fetch(`${server.url}/_admin/ledger`)).status, 401);
    } finally {
      await server.stop();
    }
  } finally {
    delete process.env.DOUBLEAGENT_ADMIN_TOKEN;
  }
  const server = await serve(SCENARIO, { env: { DOUBLEAGENT_ADMIN_TOKEN: "given-tok" } });
  try {
    assert.deepEqual(await (await server.session()).ledger(), []);
  } finally {
    await server.stop();
  }
});

test("a session name is checked by the server's rule before it goes into a URL", async () => {
  const server = await serve(SCENARIO);
  try {
    // "x?y" reset nothing and "a/b" made session "a".
    for (const bad of ["x?y", "a/b", "bad name", "\u00e9", "", "x".repeat(65), "x#y", "x\n"]) {
      await assert.rejects(server.session(bad), (e) => e instanceof RangeError && /bad session name .*: use 1 to 64 letters/.test(e.message));
    }
    assert.match((await server.session("A-b_c.9")).url, /\/_s\/A-b_c\.9$/);
    const names = (await server.admin("GET", "/sessions")).sessions;
    assert.ok(!names.includes("a") && !names.includes("x"), names.join(","));
  } finally {
    await server.stop();
  }
});

test("the binary: the option first, then DOUBLEAGENT_BIN", () => {
  assert.equal(findBinary("/opt/x/doubleagent"), "/opt/x/doubleagent");
  const was = process.env.DOUBLEAGENT_BIN;
  process.env.DOUBLEAGENT_BIN = "/from/env";
  try {
    assert.equal(findBinary(), "/from/env");
  } finally {
    if (was === undefined) delete process.env.DOUBLEAGENT_BIN;
    else process.env.DOUBLEAGENT_BIN = was;
  }
  assert.ok(existsSync(findBinary()));
});

describe("useDoubleagent gives every test a fresh session", () => {
  const da = useDoubleagent(SCENARIO);
  for (const n of [1, 2]) {
    test(`test ${n} starts with an empty ledger and the first fate`, async () => {
      assert.deepEqual(await da.session.ledger(), []);
      assert.equal(await transfer(da.session.serviceUrl("payments"), "k-1"), 0);
      assert.equal((await da.session.ledger()).length, 1);
    });
  }
});

describe("useDoubleagent gives concurrent tests their own sessions", { concurrency: true }, () => {
  const da = useDoubleagent(SCENARIO);
  const names = ["a", "b", "c"];
  let arrived = 0;
  let release;
  const together = new Promise((r) => (release = r));
  for (const name of names) {
    test(`concurrent test ${name}`, async (t) => {
      const s = da.sessionOf(t);
      if (++arrived === names.length) release();
      await together;
      // Every test is running: which one `da.session` means is ambiguous, and it says so.
      assert.throws(() => da.session, /3 tests are running at once[\s\S]*da\.sessionOf\(t\)/);
      await transfer(da.sessionOf(t).serviceUrl("payments"), `k-${name}`);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(da.sessionOf(t), s);
      assert.equal((await s.ledger()).length, 1, `session ${s.name}`);
    });
  }
});

test("globalSetup hands the server to workers through the environment", async () => {
  const teardown = await globalSetup(SCENARIO)();
  try {
    const s = await connect().session();
    assert.equal(await transfer(s.serviceUrl("payments"), "k-1"), 0);
    assert.equal((await s.ledger()).length, 1);
  } finally {
    await teardown();
    delete process.env.DOUBLEAGENT_READY;
  }
});
