// Node's built-in fetch giving up with AbortSignal.timeout on a `delay:` fate (REC-4, ACC-1, ACC-3).
//
// The clock is manual: the abort happens on the wall clock while the response waits on the
// scenario clock, so the client is gone before the response could be written. The ledger must
// say `abandoned` (not `sent`), and a new-key retry after it is a blind retry, whenever verified.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';

const BIN = process.env.DOUBLEAGENT_BIN;
const SCENARIOS = process.env.DOUBLEAGENT_SCENARIOS;

async function serve(scenario) {
  const child = spawn(BIN, ['serve', path.join(SCENARIOS, scenario), '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const lines = createInterface({ input: child.stdout });
  const [first] = await Promise.race([
    new Promise((resolve) => lines.once('line', (l) => resolve([l]))),
    new Promise((_, reject) => child.once('exit', (c) => reject(new Error(`doubleagent exited ${c}`)))),
  ]);
  const ready = JSON.parse(first);
  assert.equal(ready.event, 'ready');
  lines.on('line', () => {}); // keep draining stdout
  return { url: ready.url.replace(/\/$/, ''), child };
}

const admin = async (da, p, init) => {
  const r = await fetch(`${da.url}/_admin${p}`, init);
  assert.ok(r.ok, `${p}: ${r.status}`);
  return r.json();
};

function pay(da, key, signal) {
  return fetch(`${da.url}/payments/v1/payment_intents`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': key },
    body: 'amount=100&currency=usd&metadata[order]=7&metadata[fate]=slow',
    signal,
  });
}

test('REC-4: a fetch aborted by AbortSignal.timeout is abandoned, and its new-key retry is flagged', async () => {
  const da = await serve('stripe-payments.toml');
  try {
    await assert.rejects(pay(da, 'k-1', AbortSignal.timeout(300)), { name: 'TimeoutError' });
    // The server sees the close when the client goes: poll (bounded) for the abandoned record.
    let first;
    for (let i = 0; i < 100 && first?.response?.delivery !== 'abandoned'; i++) {
      [first] = (await admin(da, '/ledger?route=create-slow')).entries;
      if (first?.response?.delivery !== 'abandoned') await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(first.response.delivery, 'abandoned', JSON.stringify(first));
    assert.equal(first.applied, true);

    // The application retries with a new key (a fresh payment attempt): the 2nd fate answers.
    const r = await pay(da, 'k-2');
    assert.equal(r.status, 200);
    assert.equal((await r.json()).id, 'pi_2');

    const rulesOf = (v) => v.findings.map((f) => f.rule).sort();
    const before = await admin(da, '/verify');
    assert.ok(rulesOf(before).includes('REC-4'), JSON.stringify(before));
    assert.ok(rulesOf(before).includes('ACC-1'), JSON.stringify(before));
    // The delayed response's time passing changes nothing: the client had already gone.
    await admin(da, '/clock/advance', { method: 'POST', body: JSON.stringify({ by: '5s' }) });
    const [still] = (await admin(da, '/ledger?route=create-slow')).entries;
    assert.equal(still.response.delivery, 'abandoned');
    const after = await admin(da, '/verify');
    assert.deepEqual(rulesOf(after), rulesOf(before));
  } finally {
    da.child.kill('SIGTERM');
  }
});
