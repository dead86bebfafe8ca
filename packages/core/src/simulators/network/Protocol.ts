/**
 * How a transport hands a request to the simulator and gets its answer back.
 * The simulator speaks the network's own HTTP API, but without HTTP: the HTTP
 * face (`@parley/http-node`'s `SimulatorServer`) and the in-process client
 * (`Transport.ts`) both translate to these few shapes.
 */
import { Effect } from "effect"
import { HttpClientError, type HttpClientRequest } from "effect/http"

export interface SimFile {
  /** Form field name (`file`). */
  readonly key: string
  readonly filename: string
  readonly contentType: string
  readonly bytes: Uint8Array
}

export type SimBody =
  | { readonly _tag: "None" }
  | { readonly _tag: "Bytes"; readonly contentType: string; readonly bytes: Uint8Array }
  /** Multipart or URL-encoded form: text fields and files. */
  | {
    readonly _tag: "Form"
    readonly fields: Readonly<Record<string, string>>
    readonly files: ReadonlyArray<SimFile>
  }

export interface SimRequest {
  readonly method: string
  /**
   * Where the caller reached the network (scheme, host, any path prefix; no
   * trailing slash). Addresses the network hands out (media `url`, paging
   * `next`) are built on it.
   */
  readonly baseUrl: string
  /** The path after `baseUrl`, from its leading `/` (`/v24.0/<id>/messages`). */
  readonly path: string
  /** Query parameters (the first value of each). */
  readonly query: Readonly<Record<string, string>>
  /** The `Authorization` header as received. */
  readonly authorization: string | undefined
  readonly body: SimBody
}

export interface SimResponse {
  readonly status: number
  readonly contentType: string
  readonly body: Uint8Array
}

export type { WebhookSink } from "../../network/SimulatedNetwork.ts"

/** The body of a request an in-process simulator answers (`who` names it in the refusal of other bodies). */
export const simBodyOf = (
  request: HttpClientRequest.HttpClientRequest,
  who: string
): Effect.Effect<SimBody, HttpClientError.HttpClientError> => {
  const body = request.body
  switch (body._tag) {
    case "Empty":
      return Effect.succeed({ _tag: "None" })
    case "Uint8Array":
      return Effect.succeed({ _tag: "Bytes", contentType: body.contentType, bytes: body.body })
    case "FormData":
      return Effect.promise(async () => {
        const fields: Record<string, string> = {}
        const files: Array<SimFile> = []
        for (const [key, value] of body.formData.entries()) {
          if (typeof value === "string") fields[key] = value
          else {
            const bytes = new Uint8Array(await value.arrayBuffer())
            files.push({ key, filename: value.name, contentType: value.type, bytes })
          }
        }
        return { _tag: "Form", fields, files } as const
      })
    default:
      return Effect.fail(
        new HttpClientError.HttpClientError({
          reason: new HttpClientError.EncodeError({
            request,
            description: `${who} does not take ${body._tag} bodies`
          })
        })
      )
  }
}
