/**
 * Cross-cutting pieces of the HTTP contract: API-key authentication
 * (resolving the caller's project) and the mapping of request decode failures
 * to the spec's error body. Implementations live in the host.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { Principal } from "../projects/Projects.ts"
import {
  BadRequest,
  HeadersTooLarge,
  InternalError,
  PayloadTooLarge,
  RequestTimeout,
  TooManyRequests,
  Unauthorized,
  Unprocessable
} from "../shared/ApiError.ts"

/** The authenticated caller of the current request. */
export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()(
  "@parley/core/http/CurrentPrincipal"
) {}

/** `X-API-Key` (or `Authorization: Bearer`) → the key's project; 401 otherwise. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentPrincipal }>()(
  "@parley/core/http/Authentication",
  {
    security: { apiKey: HttpApiSecurity.apiKey({ key: "X-API-Key", in: "header" }) },
    // 429: the general per-key limit, counted right after the key is resolved (`ApiRateLimits`).
    error: [Unauthorized, TooManyRequests],
    requiredForClient: true
  }
) {}

/**
 * The API key of the messaging proxy's routes, as the contract documents it
 * and the client sends it. The proxy checks it itself (the same 401), so the
 * host's implementation passes every request through.
 */
export class ProxyKey extends HttpApiMiddleware.Service<ProxyKey>()("@parley/core/http/ProxyKey", {
  security: { apiKey: HttpApiSecurity.apiKey({ key: "X-API-Key", in: "header" }) },
  requiredForClient: true
}) {}

/**
 * Turns request decode failures into 400 (unparsable JSON, missing envelope) or 422 (a field, named). Its errors
 * also document, on every operation, what the host refuses before any route: a body over its limit (413, the
 * host's `InputLimits`), a request line with headers over Node's (431) and a request that does not arrive in time
 * (408, Node's request timeout).
 */
export class RequestErrors extends HttpApiMiddleware.Service<RequestErrors>()("@parley/core/http/RequestErrors", {
  error: [BadRequest, Unprocessable, InternalError, PayloadTooLarge, HeadersTooLarge, RequestTimeout]
}) {}
