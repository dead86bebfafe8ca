/**
 * The business accounts a project reaches through the proxy (decisions 4.10):
 * an account is the project's while it holds a live number of the project,
 * and a call made for the account uses that number's token. A network id
 * that names no number in the path (a media id, a template id) is looked for
 * in each of them, as the network would answer it for each token.
 */
import { Effect, Option, type Result } from "effect"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import type { NetworkAnswer, NetworkError } from "../network/MessagingNetwork.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { createdCursorKeyOf } from "./Message.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"

/** The network's "unknown object" refusal (code 100): the id is not this token's account's. */
export const isUnknownObject = (error: NetworkError): boolean => error._tag === "NetworkRefused" && error.code === 100

/** Which account knew the id, and the network's answer for it. */
export interface AccountAnswer<A> {
  readonly config: MessageConfigRecord
  readonly outcome: Result.Result<NetworkAnswer<A>, NetworkError>
}

export const makeProxyAccounts = Effect.gen(function*() {
  const configs = yield* MessageConfigsRepo

  /** One live number per business account of the project (its oldest-listed), in a stable order. */
  const accounts = Effect.fn("MessagingProxy.accounts")(function*(projectId: string) {
    const byAccount = new Map<string, MessageConfigRecord>()
    let window: ListWindow = { mode: "cursor", limit: 100 }
    while (true) {
      const page: ListSlice<MessageConfigRecord> = yield* configs.list(projectId, {}, window)
      for (const c of page.items) if (!byAccount.has(c.business_account_id)) byAccount.set(c.business_account_id, c)
      const last = page.items[page.items.length - 1]
      if (!page.hasMore || last === undefined) break
      window = { mode: "cursor", limit: 100, after: createdCursorKeyOf(last) }
    }
    return [...byAccount.values()]
  })

  /**
   * `call` with each account's token until the network knows the id (any answer but "unknown object"); None when no
   * account of the project knows it. `first` (a config of the project) is tried before the others.
   */
  const findAcross = <A>(
    projectId: string,
    call: (config: MessageConfigRecord) => Effect.Effect<NetworkAnswer<A>, NetworkError>,
    first?: MessageConfigRecord | undefined
  ) =>
    Effect.gen(function*() {
      const all = yield* accounts(projectId)
      const ordered = first === undefined
        ? all
        : [first, ...all.filter((c) => c.business_account_id !== first.business_account_id)]
      for (const config of ordered) {
        const outcome = yield* Effect.result(call(config))
        if (outcome._tag === "Failure" && isUnknownObject(outcome.failure)) continue
        return Option.some<AccountAnswer<A>>({ config, outcome })
      }
      return Option.none<AccountAnswer<A>>()
    })

  /** The project's live config of a number on `businessAccountId`, if the account is the project's. */
  const accountConfig = (projectId: string, businessAccountId: string) =>
    configs.listByBusinessAccount(businessAccountId).pipe(
      Effect.map((all) => Option.fromNullishOr(all.find((c) => c.project_id === projectId && c.deleted_at === null)))
    )

  return { accounts, findAcross, accountConfig }
})
