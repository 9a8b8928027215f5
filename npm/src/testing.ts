// Test-runner helpers: a fresh doubleagent session per test, over one server per run.
//
// node:test — `const da = useDoubleagent("scenarios/x.toml")` at the top of a file (or a
// `describe`): the server starts before its tests and stops after them; every test gets a fresh
// session, dropped after it: `da.session` while one test runs at a time, `da.sessionOf(t)` (t: the
// test's context) in tests that run concurrently.
//
// vitest / jest — a globalSetup module `export default globalSetup("scenarios/x.toml")` (jest:
// and `export { globalTeardown }` from a globalTeardown module) starts one server for the run and
// hands its ready line to the workers through the environment; in tests, `await
// connect().session()`.

import { after, afterEach, before, beforeEach } from "node:test";

import { Connection, serve, type Ready, type ServeOptions, type Server, type Session } from "./index.js";

/** What `useDoubleagent` hands a test file. */
export interface Handle {
  /** The server (the default session's world). */
  readonly server: Server;
  /** The running test's own session, while one test runs at a time (else use `sessionOf`). */
  readonly session: Session;
  /** The own session of the test whose context is `t`: for tests that run concurrently. */
  sessionOf(t: object): Session;
}

/** node:test: one server for the file (or suite), a fresh session per test. */
export function useDoubleagent(scenario: string, opts: ServeOptions = {}): Handle {
  let server: Server | undefined;
  // Keyed by each test's context: concurrent tests each have their own.
  const sessions = new Map<object, Session>();
  let n = 0;
  before(async () => {
    server = await serve(scenario, opts);
  });
  after(async () => {
    await server?.stop();
  });
  beforeEach(async (t) => {
    n += 1;
    sessions.set(t, await server!.session(`t${n}-${process.pid}`));
  });
  afterEach(async (t) => {
    // The server may be gone already (a test stopped it): the session dies with it.
    await sessions.get(t)?.drop().catch(() => undefined);
    sessions.delete(t);
  });
  return {
    get server() {
      if (!server) throw new Error("the doubleagent server is not running outside a test");
      return server;
    },
    get session() {
      if (sessions.size > 1) {
        throw new Error(`${sessions.size} tests are running at once, each with its own doubleagent session: take yours with da.sessionOf(t), t being the test's context`);
      }
      const [only] = sessions.values();
      if (!only) throw new Error("a doubleagent session exists only inside a test");
      return only;
    },
    sessionOf(t: object) {
      const s = sessions.get(t);
      if (!s) throw new Error("no doubleagent session for this context: pass the test's own context, inside the test");
      return s;
    },
  };
}

const READY_ENV = "DOUBLEAGENT_READY";
const TOKEN_ENV = "DOUBLEAGENT_ADMIN_TOKEN";
const KEY = Symbol.for("doubleagent.globalSetup");

/** vitest/jest globalSetup: start one server for the run; the workers find it with `connect()`.
 *  The returned function resolves to a teardown (vitest calls it; jest uses `globalTeardown`). */
export function globalSetup(scenario: string, opts: ServeOptions = {}): () => Promise<() => Promise<void>> {
  return async () => {
    const server = await serve(scenario, opts);
    process.env[READY_ENV] = JSON.stringify(server.ready);
    if (opts.adminToken) process.env[TOKEN_ENV] = opts.adminToken;
    (globalThis as any)[KEY] = server;
    return globalTeardown;
  };
}

/** jest globalTeardown (vitest needs none): stop the server `globalSetup` started. */
export async function globalTeardown(): Promise<void> {
  const server: Server | undefined = (globalThis as any)[KEY];
  (globalThis as any)[KEY] = undefined;
  await server?.stop();
}

/** In a worker: the server the globalSetup started, from the environment it was handed. */
export function connect(): Connection {
  const raw = process.env[READY_ENV];
  if (!raw) throw new Error(`no ${READY_ENV} in the environment: is doubleagent's globalSetup configured?`);
  const ready: Ready = JSON.parse(raw);
  return new Connection(ready.url, ready, process.env[TOKEN_ENV] || undefined);
}
