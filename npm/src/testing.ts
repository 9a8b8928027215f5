// Test-runner helpers: a fresh doubleagent session per test, over one server per run.
//
// node:test — `const da = useDoubleagent("scenarios/x.toml")` at the top of a file (or a
// `describe`): the server starts before its tests and stops after them; `da.session` is a fresh
// session in every test, dropped after it.
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
  /** This test's own session. */
  readonly session: Session;
}

/** node:test: one server for the file (or suite), a fresh session per test. */
export function useDoubleagent(scenario: string, opts: ServeOptions = {}): Handle {
  let server: Server | undefined;
  let session: Session | undefined;
  let n = 0;
  before(async () => {
    server = await serve(scenario, opts);
  });
  after(async () => {
    await server?.stop();
  });
  beforeEach(async () => {
    n += 1;
    session = await server!.session(`t${n}-${process.pid}`);
  });
  afterEach(async () => {
    // The server may be gone already (a test stopped it): the session dies with it.
    await session?.drop().catch(() => undefined);
    session = undefined;
  });
  return {
    get server() {
      if (!server) throw new Error("the doubleagent server is not running outside a test");
      return server;
    },
    get session() {
      if (!session) throw new Error("a doubleagent session exists only inside a test");
      return session;
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
