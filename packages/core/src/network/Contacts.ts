/** How the network writes a contact: a phone number, or the business-scoped user id it gives one. */

/** Digits of a phone number given with `+`, spaces, dashes, dots or parentheses; undefined when it is not one. */
export const normalizePhone = (input: string): string | undefined => {
  const digits = input.replace(/[\s\-().+]/g, "")
  return /^\d{6,15}$/.test(digits) ? digits : undefined
}

const userIdPattern = /^[A-Z]{2}\.(ENT\.)?[0-9A-Za-z]{6,40}$/

export const isUserId = (input: string): boolean => userIdPattern.test(input)

/** Digits of a phone number as given (`+1 555-010-0001` → `15550100001`), decisions 1.2. */
export const phoneDigits = (input: string): string => input.replace(/\D/g, "")
