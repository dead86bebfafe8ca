/**
 * JSON text with object keys sorted: a value stored in jsonb comes back in the store's key order (by key length,
 * then bytes), not the writer's, so equality and content hashes are taken over this form.
 */
export const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : typeof value === "object" && value !== null
    ? `{${Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
    : JSON.stringify(value)
