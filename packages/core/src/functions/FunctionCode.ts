/**
 * Function code as users write it (decisions §10.5.1) and the guest-side
 * support every runtime runs beside it.
 *
 * - Script form: a top-level `async function handler(request, env)`.
 * - Module form: `export default { async fetch(request, env, ctx) { ... } }`.
 *
 * `toModuleSource` turns either into the module form runtimes load.
 * `guestSupportSource` is JavaScript (an expression) evaluated inside the
 * function's own realm: it builds the `Request`, calls the handler, reads the
 * `Response`, captures `console.*` and fronts `env.KV`. Both adapters run the
 * same text, so they format logs and errors identically.
 */
import { ConsoleLimits } from "./FunctionRuntime.ts"
import { KvLimits } from "./FunctionKv.ts"

export type CodeShape = "module" | "script"

const moduleShape = /^[ \t]*export[ \t]+default\b/m
const scriptShape = /^[ \t]*(?:(?:async[ \t]+)?function[ \t]*\*?[ \t]*handler[ \t]*\(|(?:const|let|var)[ \t]+handler[ \t]*=)/m

/**
 * Which accepted shape the code has, or undefined for neither. A line starting
 * with `export default` selects the module form; otherwise a top-level
 * `handler` function (declared, or assigned to a `const`) is required. A
 * textual check: a syntax error still shows only when the code is loaded.
 */
export const detectCodeShape = (code: string): CodeShape | undefined =>
  moduleShape.test(code) ? "module" : scriptShape.test(code) ? "script" : undefined

export const codeShapeProblem =
  "The code must define `async function handler(request, env)` or `export default { async fetch(request, env) { ... } }`"

/**
 * The module a runtime loads as `function.js`. The script form keeps its lines
 * (stack traces point at the user's line numbers) and gains a default export
 * calling `handler(request, env)`.
 */
export const toModuleSource = (code: string, shape: CodeShape): string =>
  shape === "module" ? code : `${code}
;if (typeof handler !== "function") throw new TypeError("The code defines no handler(request, env) function");
export default { fetch: (request, env) => handler(request, env) };
`

/**
 * The function's own frames of a stack: everything before the first frame of
 * the runtime's guest code, with workerd's `file:///bundle/` prefix dropped.
 */
export const functionStack = (stack: unknown): string | undefined => {
  if (typeof stack !== "string") return undefined
  const lines = stack.replace(/file:\/\/\/bundle\//g, "").split("\n")
  const guest = lines.findIndex((line) => /parley-(?:main|guest|invoke)\.js|evalmachine\./.test(line))
  return (guest === -1 ? lines : lines.slice(0, guest)).join("\n")
}

/** Console entries with their stacks cut to the function's own frames. */
export const withFunctionStacks = <A extends { readonly stack?: string | undefined }>(entries: ReadonlyArray<A>) =>
  entries.map((entry) => entry.stack === undefined ? entry : { ...entry, stack: functionStack(entry.stack) ?? "" })

/** The base URL a request path is resolved against. */
export const functionRequestBase = "http://function.invalid"

/**
 * Guest support, a JavaScript expression evaluating to
 * `{ makeConsole, makeKv, invoke, probe }`, run inside the function's realm:
 *
 * - `makeConsole(current, now)`: console methods appending to `current()` (the
 *   invocation's log array, or undefined outside one), at most 100 entries of
 *   at most 4 KB.
 * - `makeKv(call)`: `env.KV` (`get(key, "text" | "json")`, `put(key, value,
 *   { expirationTtl })`, `delete(key)`, `list({ prefix, limit, cursor })`),
 *   checking limits before `call(op, args)` reaches the host.
 * - `invoke(module, input, ctx)`: takes `input.request`, or builds the
 *   `Request` from `{ method, url, headers, body }`, and with `{ env, kv }`
 *   calls `module.default.fetch(request, env, ctx)`
 *   and answers `{ ok: true, status, headers, body }` or `{ ok: false, error:
 *   { message, stack } }`; it never throws.
 * - `probe(module)`: `{ ok: true }` when the module has a `fetch` handler.
 */
export const guestSupportSource = `(() => {
  "use strict";
  const MAX_LOGS = ${ConsoleLimits.maxEntries};
  const MAX_LOG_BYTES = ${ConsoleLimits.maxEntryBytes};
  const MAX_KEY_BYTES = ${KvLimits.maxKeyBytes};
  const MAX_VALUE_BYTES = ${KvLimits.maxValueBytes};
  const MAX_LIST = ${KvLimits.maxListLimit};
  const LEVELS = ["debug", "info", "log", "warn", "error"];
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const isError = (value) => value !== null && typeof value === "object" &&
    (value instanceof Error || Object.prototype.toString.call(value) === "[object Error]");
  const clip = (text) => {
    if (text.length * 3 <= MAX_LOG_BYTES) return text;
    const bytes = encoder.encode(text);
    if (bytes.length <= MAX_LOG_BYTES) return text;
    return decoder.decode(bytes.subarray(0, MAX_LOG_BYTES)).replace(/\\uFFFD+$/, "");
  };
  const describe = (value) => {
    switch (typeof value) {
      case "string": return value;
      case "undefined": return "undefined";
      case "function": return "[Function " + (value.name || "(anonymous)") + "]";
      case "bigint": return value + "n";
      case "symbol": return value.toString();
      case "object": {
        if (value === null) return "null";
        if (isError(value)) return String(value.name) + ": " + String(value.message);
        try {
          const json = JSON.stringify(value, (_, v) => typeof v === "bigint" ? v + "n" : v);
          if (json !== undefined) return json;
        } catch {}
        try { return String(value); } catch { return "[object]"; }
      }
      default: return String(value);
    }
  };
  const errorOf = (error) => isError(error)
    ? { message: clip(String(error.name) + ": " + String(error.message)),
        stack: typeof error.stack === "string" ? clip(error.stack) : undefined }
    : { message: clip("Uncaught " + describe(error)) };
  const makeConsole = (current, now) => {
    const target = {};
    for (const level of LEVELS) {
      target[level] = (...args) => {
        const logs = current();
        if (logs === undefined || logs.length >= MAX_LOGS) return;
        const entry = { level, message: clip(args.map(describe).join(" ")), loggedAt: now() };
        const error = args.find(isError);
        if (error !== undefined && typeof error.stack === "string") entry.stack = clip(error.stack);
        logs.push(entry);
      };
    }
    target.trace = target.debug;
    return target;
  };
  const checkKey = (key) => {
    if (typeof key !== "string" || key.length === 0) throw new TypeError("KV keys must be non-empty strings");
    if (encoder.encode(key).length > MAX_KEY_BYTES) throw new RangeError("KV keys are limited to " + MAX_KEY_BYTES + " bytes");
  };
  const makeKv = (call) => Object.freeze({
    async get(key, options) {
      checkKey(key);
      const type = typeof options === "string" ? options : (options && options.type) || "text";
      if (type !== "text" && type !== "json") throw new TypeError("KV get supports the types text and json");
      const value = await call("get", { key });
      if (value === null || value === undefined) return null;
      return type === "json" ? JSON.parse(value) : value;
    },
    async put(key, value, options) {
      checkKey(key);
      if (typeof value !== "string") throw new TypeError("KV values must be strings");
      if (encoder.encode(value).length > MAX_VALUE_BYTES) throw new RangeError("KV values are limited to " + MAX_VALUE_BYTES + " bytes");
      const ttl = options && options.expirationTtl;
      if (ttl !== undefined && !(typeof ttl === "number" && Number.isFinite(ttl) && ttl > 0)) {
        throw new TypeError("expirationTtl must be a positive number of seconds");
      }
      await call("put", ttl === undefined ? { key, value } : { key, value, expirationTtl: ttl });
    },
    async delete(key) {
      checkKey(key);
      await call("delete", { key });
    },
    async list(options) {
      const prefix = (options && options.prefix) || "";
      const limit = (options && options.limit) || MAX_LIST;
      const cursor = (options && options.cursor) || undefined;
      if (typeof prefix !== "string") throw new TypeError("prefix must be a string");
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) throw new RangeError("limit must be an integer from 1 to " + MAX_LIST);
      const page = await call("list", cursor === undefined ? { prefix, limit } : { prefix, limit, cursor });
      const keys = page.keys.map((k) => k.expiration === undefined || k.expiration === null ? { name: k.name } : { name: k.name, expiration: k.expiration });
      return page.cursor === undefined || page.cursor === null
        ? { keys, list_complete: true }
        : { keys, list_complete: false, cursor: page.cursor };
    }
  });
  const handlerOf = (module) => {
    const entry = module && module.default;
    if (entry === null || (typeof entry !== "object" && typeof entry !== "function") || typeof entry.fetch !== "function") {
      throw new TypeError("The code exports no fetch(request, env) handler");
    }
    return entry;
  };
  const invoke = async (module, input, ctx) => {
    try {
      const entry = handlerOf(module);
      let request = input.request;
      if (request === undefined) {
        const init = { method: input.method, headers: input.headers };
        if (input.method !== "GET" && input.method !== "HEAD" && input.body.byteLength > 0) init.body = input.body;
        request = new Request(input.url, init);
      }
      const env = Object.assign({}, input.env, { KV: input.kv });
      const response = await entry.fetch(request, env, ctx);
      if (!(response instanceof Response)) throw new TypeError("The handler must return a Response, not " + describe(response));
      const headers = [];
      for (const [name, value] of response.headers) headers.push([name, value]);
      const body = await response.arrayBuffer();
      return { ok: true, status: response.status, headers, body };
    } catch (error) {
      return { ok: false, error: errorOf(error) };
    }
  };
  const probe = (module) => {
    try {
      handlerOf(module);
      return { ok: true };
    } catch (error) {
      return { ok: false, error: errorOf(error) };
    }
  };
  return { makeConsole, makeKv, invoke, probe, errorOf };
})()`
