/** Slugs generated from names (decisions 2.1): lowercase, accents stripped, non-alphanumerics collapsed to `-`. */

export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/
export const SLUG_MAX = 100

export const slugify = (name: string, fallback: string): string => {
  const base = name
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, SLUG_MAX)
    .replace(/-+$/, "")
  return base.length === 0 ? fallback : base
}

/** `base`, then `base-2`, `base-3`, ... kept within the length limit. */
export const slugCandidate = (base: string, attempt: number): string => {
  if (attempt <= 1) return base
  const suffix = `-${attempt}`
  return `${base.slice(0, SLUG_MAX - suffix.length).replace(/-+$/, "")}${suffix}`
}
