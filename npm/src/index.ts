// A typed client over doubleagent's admin API, mirroring the Python package: `serve()` starts the
// binary on port 0 and reads its ready line; `Server.session()` hands out an isolated world
// reached through the `/_s/NAME` URL prefix, so the code under test needs only a base URL.

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { randomUUID } from "node:crypto";

/** Ledger filters the server applies itself; any other filter is compared with the entry here. */
export const SERVER_FILTERS = ["service", "route", "key", "work_id", "since", "disposition", "event", "actor"] as const;

/** The admin API answered with an error: `{"error": ..., "status": N}`. */
export class AdminError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly body?: unknown,
  ) {
    super(`${status}: ${reason}`);
    this.name = "AdminError";
  }
}

/** One ledger entry, as the server sends it (see docs/ledger.md for every field). */
export interface Entry {
  seq: number;
  service: string;
  method: string;
  path: string;
  disposition: string;
  applied: boolean;
  route?: string | null;
  received_at?: string;
  idempotency_key?: string | null;
  work_id?: string | null;
  revision?: unknown;
  body?: unknown;
  fate?: string | null;
  action_id?: string | null;
  replay_of?: number | null;
  response?: { status?: number | null; delivery?: string; at?: string | null };
  actor?: string | null;
  event?: string | null;
  detail?: unknown;
  [field: string]: unknown;
}

/** A broken rule: its ID, what happened, the ledger seqs involved, what was expected. */
export interface Finding {
  rule: string;
  summary: string;
  entries: number[];
  hint: string;
}

/** The verifier's verdict over one session's ledger. */
export class Verdict {
  constructor(
    /** "clean", "findings" or "incomplete" (no findings, but not everything could be judged). */
    readonly state: string,
    readonly clean: boolean,
    readonly findings: Finding[],
    readonly entries: number,
    readonly claims: boolean,
    readonly notes: string[],
    /** The verdict as `doubleagent verify` prints it (fetched when there are findings). */
    readonly text: string,
  ) {}

  get rules(): Set<string> {
    return new Set(this.findings.map((f) => f.rule));
  }

  /** Throw an Error carrying the CLI's report unless there are no findings. */
  assertClean(): void {
    if (!this.clean) {
      const msg = this.text.trimEnd() || this.findings.map((f) => `${f.rule}  ${f.summary}`).join("\n");
      throw new Error(msg);
    }
  }
}

/** A duration as the server reads it: "25h", "1500ms"; a number is seconds. */
export type Duration = string | number;

function duration(d: Duration): string {
  if (typeof d === "string") return d;
  const ms = Math.round(d * 1000);
  if (!(ms >= 0)) throw new RangeError(`a duration cannot be negative: ${d}`);
  return `${ms}ms`;
}

/** The ready line a server prints: url, scenario, services, agents. */
export interface Ready {
  event: "ready";
  url: string;
  scenario?: string;
  services?: Record<string, string>;
  agents?: Record<string, string>;
  [field: string]: unknown;
}

export type Filters = Record<string, string | number | boolean | null>;

/** What a server's default session and a named session share: URLs and admin calls. */
export class World {
  constructor(
    /** The root URL of this world (`http://127.0.0.1:PORT` or `.../_s/NAME`). */
    readonly url: string,
    readonly ready: Ready,
    protected readonly token?: string,
  ) {}

  /** `URL/NAME`: where the code under test reaches fake service NAME. */
  serviceUrl(name: string): string {
    return `${this.url}/${this.known("services", name)}`;
  }

  /** `URL/agents/NAME`: agent NAME (its card is below it, at `/.well-known/agent-card.json`). */
  agentUrl(name: string): string {
    return `${this.url}/agents/${this.known("agents", name)}`;
  }

  private known(kind: "services" | "agents", name: string): string {
    const names = Object.keys(this.ready[kind] ?? {});
    if (!names.includes(name)) {
      throw new Error(`the scenario has no ${kind.slice(0, -1)} named ${JSON.stringify(name)}; it has: ${names.join(", ") || "none"}`);
    }
    return name;
  }

  /** One admin call; JSON in and out unless `raw`. */
  async admin(method: string, path: string, opts: { query?: [string, string][]; body?: unknown; raw?: boolean; timeoutMs?: number } = {}): Promise<any> {
    let url = `${this.url}/_admin${path}`;
    if (opts.query?.length) url += "?" + new URLSearchParams(opts.query).toString();
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const r = await fetch(url, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    });
    const payload = Buffer.from(await r.arrayBuffer());
    if (!r.ok) {
      let doc: any;
      let reason = payload.toString();
      try {
        doc = JSON.parse(reason);
        if (doc && typeof doc.error === "string") reason = doc.error;
      } catch {
        // Not JSON: the text itself is the reason.
      }
      throw new AdminError(r.status, reason, doc);
    }
    return opts.raw ? payload : JSON.parse(payload.toString());
  }

  health(): Promise<Record<string, unknown>> {
    return this.admin("GET", "/health");
  }

  /** The ledger's entries, oldest first. The server filters by service, route, key, work_id,
   *  since, disposition, event and actor; any other filter is an entry field compared for
   *  equality (`{applied: true}`, `{fate: "respond"}`). */
  async ledger(filters: Filters = {}): Promise<Entry[]> {
    const [query, local] = splitFilters(filters);
    const doc = await this.admin("GET", "/ledger", { query });
    return (doc.entries as Entry[]).filter((e) => Object.entries(local).every(([k, v]) => e[k] === v));
  }

  /** Wait until at least `count` entries match (server-side filters only); rejects with a
   *  TimeoutError after `timeout` of wall-clock time. */
  async waitFor(count = 1, filters: Filters = {}, timeout: Duration = 10): Promise<Entry[]> {
    const [query, local] = splitFilters(filters);
    const extra = Object.keys(local);
    if (extra.length) throw new TypeError(`waitFor filters on ${SERVER_FILTERS.join(", ")}; not on ${extra.join(", ")}`);
    query.push(["count", String(count)], ["timeout", duration(timeout)]);
    const seconds = typeof timeout === "number" ? timeout : 300;
    try {
      const doc = await this.admin("GET", "/ledger/wait", { query, timeoutMs: (seconds + 30) * 1000 });
      return doc.entries;
    } catch (e) {
      if (e instanceof AdminError && e.status === 408) {
        const t = new Error(e.reason);
        t.name = "TimeoutError";
        throw t;
      }
      throw e;
    }
  }

  clock(): Promise<Record<string, unknown>> {
    return this.admin("GET", "/clock");
  }

  /** Move the manual clock: `advance("25h")`, `advance(1.5)` (seconds). */
  advance(by: Duration): Promise<Record<string, unknown>> {
    return this.admin("POST", "/clock/advance", { body: { by: duration(by) } });
  }

  /** A fresh world from the same scenario: empty ledger, keys, fates and clock. */
  reset(): Promise<Record<string, unknown>> {
    return this.admin("POST", "/reset");
  }

  /** Record that instruction revision `revision` took over (for one work item, or all). */
  declareRevision(revision: number | string, workId?: string): Promise<Record<string, unknown>> {
    return this.admin("POST", "/revision", { body: { revision, work_id: workId ?? null } });
  }

  /** The orchestrator's own account, judged by the verifier:
   *  `claims({actions: [{key: "k-1", claim: "succeeded"}]})`. */
  claims(c: { actions?: object[]; tasks?: object[]; adopted?: string[] }): Promise<Record<string, unknown>> {
    return this.admin("POST", "/claims", { body: { actions: c.actions ?? [], tasks: c.tasks ?? [], adopted: c.adopted ?? [] } });
  }

  /** Run the verifier over this world's ledger (and claims). */
  async verify(): Promise<Verdict> {
    const doc = await this.admin("GET", "/verify");
    const text = doc.clean ? "" : (await this.admin("GET", "/verify.txt", { raw: true })).toString();
    return new Verdict(
      doc.state ?? (doc.clean ? "clean" : "findings"),
      Boolean(doc.clean),
      (doc.findings ?? []).map((f: Finding) => ({ rule: f.rule, summary: f.summary, entries: [...f.entries], hint: f.hint })),
      doc.entries ?? 0,
      Boolean(doc.claims),
      [...(doc.notes ?? [])],
      text,
    );
  }

  /** Write the HTML timeline (ledger and verdict) to `path`; return it. */
  async reportHtml(path: string): Promise<string> {
    const html: Buffer = await this.admin("GET", "/report", { raw: true });
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, html);
    return path;
  }
}

function splitFilters(filters: Filters): [[string, string][], Filters] {
  const query: [string, string][] = [];
  const local: Filters = {};
  for (const [k, v] of Object.entries(filters)) {
    if ((SERVER_FILTERS as readonly string[]).includes(k)) query.push([k, String(v)]);
    else local[k] = v;
  }
  return [query, local];
}

/** A named session: its own ledger, keys, fates and clock, behind `/_s/NAME`. */
export class Session extends World {
  constructor(
    readonly root: World,
    readonly name: string,
  ) {
    // The server's rule for session names (they go into URLs as they are).
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) {
      throw new RangeError(`bad session name ${JSON.stringify(name)}: use 1 to 64 letters, digits, '-', '_' or '.'`);
    }
    super(`${root.url}/_s/${name}`, root.ready, (root as Session).token);
  }

  /** End the session now (otherwise it expires after the server's --session-ttl). */
  async drop(): Promise<void> {
    await this.root.admin("POST", "/reset", { query: [["session", this.name], ["drop", "true"]] });
  }
}

/** A server already running (say, started by a globalSetup): its ready line and token. */
export class Connection extends World {
  /** An isolated world: a fresh one under a new unique name unless `name` is given (1 to 64
   *  letters, digits, '-', '_' or '.'; a RangeError otherwise). */
  async session(name?: string): Promise<Session> {
    const s = new Session(this, name ?? `t-${randomUUID().replaceAll("-", "").slice(0, 16)}`);
    await s.health(); // the server is up; the session itself is made by its first use
    return s;
  }
}

/** The binary to run: `explicit`, `$DOUBLEAGENT_BIN`, the Python package's binary, or
 *  `doubleagent` on PATH. */
export function findBinary(explicit?: string): string {
  for (const c of [explicit, process.env.DOUBLEAGENT_BIN]) if (c) return c;
  for (const python of ["python3", "python"]) {
    try {
      const out = execFileSync(python, ["-c", "import doubleagent; print(doubleagent.find_binary())"], {
        stdio: ["ignore", "pipe", "ignore"],
        timeout: 10_000,
      });
      const path = out.toString().trim();
      if (path && existsSync(path)) return path;
    } catch {
      // No Python, or no doubleagent package in it: try the next place.
    }
  }
  const exe = process.platform === "win32" ? "doubleagent.exe" : "doubleagent";
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, exe))) return join(dir, exe);
  }
  throw new Error("no doubleagent binary: set the binary option or DOUBLEAGENT_BIN, install the Python package, or put doubleagent on PATH");
}

export interface ServeOptions {
  binary?: string;
  /** More `serve` options, e.g. `["--journal", "ledger.jsonl"]`. */
  args?: string[];
  /** Default: DOUBLEAGENT_ADMIN_TOKEN (of `env`, else of this process), which the server reads too. */
  adminToken?: string;
  env?: Record<string, string>;
  startupTimeoutMs?: number;
}

/** A running `doubleagent serve`: the default session's world, and `session()` for more. */
export class Server extends Connection {
  private stderrText = "";

  constructor(
    ready: Ready,
    readonly process: ChildProcess,
    readonly scenarioPath: string,
    token: string | undefined,
    private readonly tmp: string | undefined,
  ) {
    super(ready.url, ready, token);
    process.stderr?.on("data", (d: Buffer) => (this.stderrText += d.toString()));
  }

  /** What the server wrote to stderr so far (its log). */
  stderr(): string {
    return this.stderrText;
  }

  /** Stop the server (SIGTERM, then SIGKILL after 10 s). */
  async stop(): Promise<void> {
    const p = this.process;
    if (p.exitCode === null && p.signalCode === null) {
      const exited = new Promise<void>((resolve) => p.once("exit", () => resolve()));
      p.kill("SIGTERM");
      const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    if (this.tmp) rmSync(this.tmp, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** Start `doubleagent serve` on 127.0.0.1:0 with a scenario file or TOML text; resolves once
 *  its ready line is read. */
export async function serve(scenario: string, opts: ServeOptions = {}): Promise<Server> {
  const program = findBinary(opts.binary);
  let path = scenario;
  let tmp: string | undefined;
  // TOML text has a newline or an `=`; anything else is a path (a missing file is the server's
  // error to report, with its name).
  if (scenario.includes("\n") || scenario.includes("=")) {
    tmp = mkdtempSync(join(tmpdir(), "doubleagent-"));
    path = join(tmp, "scenario.toml");
    writeFileSync(path, scenario);
  }
  const args = ["serve", path, "--listen", "127.0.0.1:0", ...(opts.args ?? [])];
  if (opts.adminToken) args.push("--admin-token", opts.adminToken);
  const env: NodeJS.ProcessEnv = { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn", ...opts.env };
  // Without adminToken the server takes DOUBLEAGENT_ADMIN_TOKEN from its environment.
  const token = opts.adminToken || env.DOUBLEAGENT_ADMIN_TOKEN || undefined;
  const child = spawn(program, args, { stdio: ["ignore", "pipe", "pipe"], env });
  let early = "";
  const collect = (d: Buffer) => (early += d.toString());
  child.stderr.on("data", collect);
  const ready = await new Promise<Ready>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    const fail = (why: string) => {
      child.kill("SIGKILL");
      // TOML text's file is removed with the server: name what it held instead.
      const log = tmp ? early.replaceAll(path, "<inline scenario>") : early;
      if (tmp) rmSync(tmp, { recursive: true, force: true });
      reject(new Error(`doubleagent did not start (${why}); stderr:\n${log}`));
    };
    const timer = setTimeout(() => fail("no ready line in time"), opts.startupTimeoutMs ?? 30_000);
    child.once("error", (e) => {
      clearTimeout(timer);
      fail(e.message);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(`exit ${code}`);
    });
    lines.once("line", (line) => {
      clearTimeout(timer);
      child.removeAllListeners("exit");
      // The rest of stdout is drained so a full pipe never blocks the server.
      child.stdout.resume();
      try {
        const r = JSON.parse(line);
        if (r?.event !== "ready") throw new Error(line);
        resolve(r);
      } catch {
        fail(`unexpected first line: ${line}`);
      }
    });
  });
  child.stderr.off("data", collect);
  return new Server(ready, child, path, token, tmp);
}
