/**
 * What runs inside each workerd process: a generated Cap'n Proto config and
 * the dispatcher worker it names. The dispatcher holds a Worker Loader and
 * loads every function as a dynamic worker of its own (its own isolate),
 * named `<function id>@<generation>`, so a redeploy is a new name and other
 * functions are untouched. Code is pulled from the host on first use, which
 * is also how a respawned process reloads its functions.
 *
 * Host → dispatcher (its unix socket, token header): `GET /ping`, `POST
 * /probe` and `POST /invoke`, bodies framed as `[u32 meta length][meta
 * JSON][request body]`; answers are framed the same way (for an invoke, by
 * the function's wrapper: the dispatcher passes them through). An invoke
 * carries a ticket: the dispatcher asks the host `POST /start?ticket=`
 * before anything of the function runs and answers `phase: "withdrawn"`
 * without running it when the host says no.
 *
 * Dynamic worker → host (the host bridge's unix socket), always through the
 * dispatcher, which adds the token and the function id from the binding's
 * props (code cannot choose them): `GET /code`, `POST /kv` for `env.KV`, and
 * `POST /outbound` for the function's `fetch` (its `globalOutbound`). The
 * dispatcher itself has no network (`internet` allows nothing); a raw socket
 * `connect()` from a function is refused.
 */
import { guestSupportSource } from "@parley/core"

/** Frames `meta` and `body` as `[u32 meta length][meta JSON][body]` (JavaScript shared by both sides of workerd). */
const frameSource = `const frame = (meta, body) => {
  const head = new TextEncoder().encode(JSON.stringify(meta));
  const bytes = new Uint8Array(4 + head.byteLength + (body ? body.byteLength : 0));
  new DataView(bytes.buffer).setUint32(0, head.byteLength);
  bytes.set(head, 4);
  if (body) bytes.set(new Uint8Array(body), 4 + head.byteLength);
  return new Response(bytes);
};`

/**
 * The module loaded as `parley-main.js` next to the user's `function.js`.
 * Invocations arrive through `fetch` (workerd's fastest path between
 * isolates) with the invocation's `env` in the entrypoint's props, and answer
 * a framed envelope the dispatcher passes through untouched.
 */
const wrapperSource = `import { AsyncLocalStorage } from "node:async_hooks";
import { WorkerEntrypoint } from "cloudflare:workers";
import * as user from "./function.js";
const guest = ${guestSupportSource};
const current = new AsyncLocalStorage();
Object.assign(globalThis.console, guest.makeConsole(() => current.getStore(), () => Date.now()));
${frameSource}
export default class extends WorkerEntrypoint {
  probe() {
    return guest.probe(user);
  }
  fetch(request) {
    const logs = [];
    const kv = guest.makeKv((op, args) => this.env.KV.call(Object.assign({}, args, { op })));
    return current.run(logs, async () => {
      const result = await guest.invoke(user, { request, env: this.ctx.props.env, kv }, this.ctx);
      const body = result.body;
      delete result.body;
      result.logs = logs;
      return frame(result, body);
    });
  }
}
`

/** Marks a load that found no code on the host (the function was unloaded meanwhile). */
export const notLoadedMarker = "parley:not_loaded"

export const dispatcherSource = (compatibilityDate: string) =>
  `import { WorkerEntrypoint } from "cloudflare:workers";
const WRAPPER = ${JSON.stringify(wrapperSource)};
const COMPATIBILITY_DATE = ${JSON.stringify(compatibilityDate)};
const decoder = new TextDecoder();
${frameSource}

const fromHost = (env, path, init) => {
  const headers = new Headers(init && init.headers);
  headers.set("x-parley-token", env.TOKEN);
  return env.HOST.fetch("http://host" + path, Object.assign({}, init, { headers }));
};

export class FunctionKv extends WorkerEntrypoint {
  async call(operation) {
    const response = await fromHost(this.env, "/kv?fn=" + encodeURIComponent(this.ctx.props.fn), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(operation)
    });
    const answer = await response.json();
    if (!answer.ok) throw new Error(answer.error);
    return answer.value;
  }
}

export class Outbound extends WorkerEntrypoint {
  async fetch(request) {
    const headers = new Headers(request.headers);
    headers.set("x-parley-token", this.env.TOKEN);
    headers.set("x-parley-url", request.url);
    headers.set("x-parley-method", request.method);
    headers.set("x-parley-function", this.ctx.props.fn);
    const response = await this.env.HOST.fetch("http://host/outbound", {
      method: "POST", headers, body: request.body, redirect: "manual"
    });
    const refused = response.headers.get("x-parley-outbound-error");
    if (refused !== null) throw new TypeError(refused);
    return response;
  }
  connect() {
    throw new Error("Functions cannot open raw sockets");
  }
}

const load = async (env, ctx, fn, gen) => {
  const response = await fromHost(env, "/code?fn=" + encodeURIComponent(fn) + "&gen=" + gen);
  if (response.status === 404) throw new Error(${JSON.stringify(notLoadedMarker)});
  if (!response.ok) throw new Error("The host answered " + response.status + " for the code");
  return {
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_als"],
    mainModule: "parley-main.js",
    modules: { "parley-main.js": WRAPPER, "function.js": await response.text() },
    env: { KV: ctx.exports.FunctionKv({ props: { fn } }) },
    globalOutbound: ctx.exports.Outbound({ props: { fn } })
  };
};

export default {
  async fetch(request, env, ctx) {
    if (request.headers.get("x-parley-token") !== env.TOKEN) return new Response(null, { status: 403 });
    const path = new URL(request.url).pathname;
    if (path === "/ping") return new Response("pong");
    const bytes = new Uint8Array(await request.arrayBuffer());
    const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0);
    const meta = JSON.parse(decoder.decode(bytes.subarray(4, 4 + length)));
    // The host's go comes before anything of the function runs (its loading included): an invocation the host
    // withdrew (this process froze before this point) never runs here, so the host may run it elsewhere.
    if (meta.ticket !== undefined) {
      const go = await fromHost(env, "/start?ticket=" + encodeURIComponent(meta.ticket), { method: "POST" });
      await go.arrayBuffer();
      if (go.status !== 200) return frame({ ok: false, phase: "withdrawn" });
    }
    const worker = env.LOADER.get(meta.fn + "@" + meta.gen, () => load(env, ctx, meta.fn, meta.gen));
    try {
      if (path === "/probe") return frame(await worker.getEntrypoint().probe());
      const init = { method: meta.method, headers: meta.headers };
      if (meta.method !== "GET" && meta.method !== "HEAD" && bytes.byteLength > 4 + length) {
        init.body = bytes.subarray(4 + length);
      }
      // The wrapper answers a framed envelope: passed through as it is.
      return await worker.getEntrypoint(undefined, { props: { env: meta.env } }).fetch(new Request(meta.url, init));
    } catch (error) {
      // Outside the function's handler: loading failed (syntax error, top-level throw) or the isolate broke.
      return frame({ ok: false, phase: "load", error: { message: String(error && error.message || error), stack: error && error.stack } });
    }
  }
};
`

export interface ConfigOptions {
  /** Unix socket the dispatcher listens on. */
  readonly socketPath: string
  /** Unix socket of the host bridge. */
  readonly bridgePath: string
  readonly token: string
  /** V8 old-space cap of every isolate of the process (each function has its own). */
  readonly memoryMb: number
  readonly compatibilityDate: string
}

const literal = (text: string) => JSON.stringify(text)

/** The process's config; `dispatcher.js` sits next to it. */
export const configSource = (options: ConfigOptions) =>
  `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "dispatcher", worker = .dispatcher),
    (name = "host", external = (address = ${literal(`unix:${options.bridgePath}`)}, http = ())),
    (name = "internet", network = (allow = [])),
  ],
  sockets = [
    (name = "http", address = ${literal(`unix:${options.socketPath}`)}, http = (), service = "dispatcher"),
  ],
  v8Flags = [${literal(`--max-old-space-size=${Math.max(16, Math.floor(options.memoryMb))}`)}],
);

const dispatcher :Workerd.Worker = (
  modules = [(name = "dispatcher.js", esModule = embed "dispatcher.js")],
  compatibilityDate = ${literal(options.compatibilityDate)},
  compatibilityFlags = ["nodejs_als"],
  bindings = [
    (name = "LOADER", workerLoader = ()),
    (name = "HOST", service = "host"),
    (name = "TOKEN", text = ${literal(options.token)}),
  ],
  globalOutbound = "internet",
);
`
