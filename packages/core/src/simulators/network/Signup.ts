/**
 * The simulated network's embedded signup: the business accounts and numbers a
 * customer can pick after the simulated login, the authorization that hands
 * back a one-time code, and the code exchange
 * (`GET /<version>/oauth/access_token?client_id=&client_secret=&code=`) in the
 * network's own wire format. Some accounts and numbers are there to fail the
 * way the network fails (decisions 2.13): an account at its limit, a number
 * whose verification failed, a grant the business withdrew before the code
 * was exchanged.
 */
import { Effect } from "effect"
import { fail, type Json, numericId, ok, type Outcome, type SimState, type SimulatedNumberInput } from "./Model.ts"
import { simError, SimulatorInputError } from "../../network/ErrorCodes.ts"

/** A number offered in the signup dialog. */
export interface SignupNumber {
  readonly phoneNumberId: string
  readonly displayPhoneNumber: string
  readonly verifiedName: string
  /** Also on the business app (coexistence) rather than dedicated to the API. */
  readonly coexistence: boolean
  /** Its registration code was verified; an unverified number cannot be connected. */
  readonly verified: boolean
}

/** A business account offered in the signup dialog and what choosing it does. */
export interface SignupBusiness {
  readonly id: string
  readonly name: string
  /** `ok`; `waba_limit_reached`: refused at once; `grant_withdrawn`: a code is given, its exchange is refused. */
  readonly outcome: "ok" | "waba_limit_reached" | "grant_withdrawn"
  readonly numbers: ReadonlyArray<SignupNumber>
}

const number = (id: string, display: string, name: string, more: Partial<SignupNumber> = {}): SignupNumber => ({
  phoneNumberId: id,
  displayPhoneNumber: display,
  verifiedName: name,
  coexistence: false,
  verified: true,
  ...more
})

/** The accounts every simulated login sees. */
export const SIGNUP_CATALOGUE: ReadonlyArray<SignupBusiness> = [
  {
    id: "300000000000001",
    name: "Demo Business",
    outcome: "ok",
    numbers: [
      number("300000000000011", "+1 555-020-0011", "Demo Support"),
      number("300000000000012", "+1 555-020-0012", "Demo Shop", { coexistence: true }),
      number("300000000000019", "+1 555-020-0019", "Demo Unverified", { verified: false })
    ]
  },
  {
    id: "300000000000002",
    name: "Business at its account limit",
    outcome: "waba_limit_reached",
    numbers: [number("300000000000021", "+1 555-020-0021", "Full Business")]
  },
  {
    id: "300000000000003",
    name: "Business that withdraws its grant",
    outcome: "grant_withdrawn",
    numbers: [number("300000000000031", "+1 555-020-0031", "Withdrawn Business")]
  }
]

/** Calling codes of the countries a new number can be provisioned in. */
export const PROVISIONING_PREFIXES: Readonly<Record<string, string>> = {
  US: "1",
  CA: "1",
  MX: "52",
  BR: "55",
  ES: "34",
  GB: "44",
  IN: "91",
  ID: "62"
}

/** A code handed back by the dialog; exchanged once, within `SIGNUP_CODE_TTL_MS`. */
export interface SignupGrant {
  readonly code: string
  readonly accessToken: string
  readonly businessAccountId: string
  readonly phoneNumberId: string
  readonly expiresAt: number
  readonly withdrawn: boolean
  used: boolean
}

export const SIGNUP_CODE_TTL_MS = 10 * 60 * 1000

/** The token the business's own numbers are registered with (it never leaves the simulator). */
export const ownerToken = (businessAccountId: string) => `sim-signup-owner-${businessAccountId}`

/** A provisioned number's id and display number, from a fresh uuid. */
export const provisionedNumber = (uuid: string, country: string): SignupNumber => {
  const id = numericId(uuid)
  const prefix = PROVISIONING_PREFIXES[country] ?? "1"
  return number(id, `+${prefix} 555-04${id.slice(-1)}-${id.slice(-5, -1)}`, "Provisioned Number")
}

const oauthError = (message: string, subcode: number) =>
  fail(simError(100, message, { subcode, type: "OAuthException" }))

/**
 * `GET oauth/access_token`: the app's id and secret and a code of the signup
 * dialog give the token that acts for the business account the customer chose.
 */
export const exchangeCode = (
  state: SimState,
  app: { readonly appId: string; readonly appSecret: string },
  query: Readonly<Record<string, string>>,
  now: number
): Outcome => {
  if (query["client_id"] !== app.appId || query["client_secret"] !== app.appSecret) {
    return oauthError("Error validating client secret.", 36008)
  }
  const code = query["code"]
  const grant = code === undefined ? undefined : state.signupGrants.get(code)
  if (grant === undefined) return oauthError("Invalid verification code format.", 36007)
  if (grant.used) return oauthError("This authorization code has been used.", 36009)
  if (grant.withdrawn || grant.expiresAt <= now) return oauthError("This authorization code has expired.", 36007)
  grant.used = true
  state.tokens.set(grant.accessToken, { businessAccountId: grant.businessAccountId, expired: false })
  state.touch("token", grant.accessToken)
  const answer: Json = { access_token: grant.accessToken, token_type: "bearer" }
  return ok(answer)
}

/** What the customer chose in the simulated signup dialog. */
export interface SignupChoice {
  readonly businessAccountId: string
  /** A number of the account, or none with `provisionCountry` for a new one. */
  readonly phoneNumberId?: string | undefined
  readonly provisionCountry?: string | undefined
}

export type SignupAnswer =
  | {
    readonly _tag: "Granted"
    readonly code: string
    readonly businessAccountId: string
    readonly phoneNumberId: string
    readonly provisioned: boolean
  }
  | { readonly _tag: "Refused"; readonly reason: "waba_limit_reached" | "phone_verification_failed" }


/** What the authorization needs of the simulator: its ids, its clock, and how it connects a number. */
export interface SignupServices {
  readonly uuid: Effect.Effect<string>
  readonly now: () => number
  readonly registerNumber: (input: SimulatedNumberInput) => Effect.Effect<void>
}

/** The customer's choice in the signup dialog: a one-time code for the number, or the network's refusal. */
export const authorizeSignup = (
  state: SimState,
  services: SignupServices,
  choice: SignupChoice
): Effect.Effect<SignupAnswer, SimulatorInputError> =>
  Effect.gen(function*() {
    const business = SIGNUP_CATALOGUE.find((b) => b.id === choice.businessAccountId)
    if (business === undefined) {
      return yield* new SimulatorInputError({ message: `unknown business account ${choice.businessAccountId}` })
    }
    if (business.outcome === "waba_limit_reached") return { _tag: "Refused", reason: "waba_limit_reached" } as const
    const uuid = yield* services.uuid
    const chosen = choice.phoneNumberId !== undefined
      ? business.numbers.find((n) => n.phoneNumberId === choice.phoneNumberId)
      : choice.provisionCountry !== undefined && choice.provisionCountry in PROVISIONING_PREFIXES
      ? provisionedNumber(uuid, choice.provisionCountry)
      : undefined
    if (chosen === undefined) {
      return yield* new SimulatorInputError({ message: "choose a number of the account or a country to provision in" })
    }
    if (!chosen.verified) return { _tag: "Refused", reason: "phone_verification_failed" } as const
    if (!state.numbers.has(chosen.phoneNumberId)) {
      yield* services.registerNumber({
        phoneNumberId: chosen.phoneNumberId,
        businessAccountId: business.id,
        accessToken: ownerToken(business.id),
        displayPhoneNumber: chosen.displayPhoneNumber,
        verifiedName: chosen.verifiedName,
        isOnBizApp: chosen.coexistence
      })
    }
    const code = `sim-code-${uuid}`
    state.signupGrants.set(code, {
      code,
      accessToken: `sim-signup-token-${uuid}`,
      businessAccountId: business.id,
      phoneNumberId: chosen.phoneNumberId,
      expiresAt: services.now() + SIGNUP_CODE_TTL_MS,
      withdrawn: business.outcome === "grant_withdrawn",
      used: false
    })
    return {
      _tag: "Granted",
      code,
      businessAccountId: business.id,
      phoneNumberId: chosen.phoneNumberId,
      provisioned: choice.phoneNumberId === undefined
    } as const
  })
