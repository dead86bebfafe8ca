/**
 * Quiet hours (issue 32 §2): a local window (`start`–`end`, crossing midnight when `end` is earlier; a whole day when
 * they are equal) on the days it starts, read in the recipient's time zone. The zone is the contact's own when set,
 * else the one of its phone number's country (one zone per country: the most populous where a country has several),
 * else the settings' default.
 */
import { Schema } from "effect"

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/

export const QuietHoursWindow = Schema.Struct({
  start: Schema.String.check(Schema.isPattern(HHMM)).annotate({ description: "Local time the quiet window starts, `HH:MM`" }),
  end: Schema.String.check(Schema.isPattern(HHMM)).annotate({ description: "Local time it ends, `HH:MM` (earlier than `start`: the next day; equal: the whole day)" }),
  days: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 6 }))).annotate({
    description: "Days the window starts on, 0 (Sunday) to 6 (Saturday); empty: every day"
  }),
  default_time_zone: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({
    description: "IANA zone of a recipient whose country is not known (default UTC)"
  })
})
export type QuietHoursWindow = typeof QuietHoursWindow.Type

/** Whether the host knows the IANA zone. */
export const isTimeZone = (zone: string): boolean => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone })
    return true
  } catch {
    return false
  }
}

// Calling codes (longest first when matching) to the zone of most of the country's people.
const ZONES: ReadonlyArray<readonly [string, string]> = [
  ["1", "America/New_York"], ["7", "Europe/Moscow"], ["20", "Africa/Cairo"], ["27", "Africa/Johannesburg"],
  ["30", "Europe/Athens"], ["31", "Europe/Amsterdam"], ["32", "Europe/Brussels"], ["33", "Europe/Paris"],
  ["34", "Europe/Madrid"], ["36", "Europe/Budapest"], ["39", "Europe/Rome"], ["40", "Europe/Bucharest"],
  ["41", "Europe/Zurich"], ["43", "Europe/Vienna"], ["44", "Europe/London"], ["45", "Europe/Copenhagen"],
  ["46", "Europe/Stockholm"], ["47", "Europe/Oslo"], ["48", "Europe/Warsaw"], ["49", "Europe/Berlin"],
  ["51", "America/Lima"], ["52", "America/Mexico_City"], ["53", "America/Havana"], ["54", "America/Argentina/Buenos_Aires"],
  ["55", "America/Sao_Paulo"], ["56", "America/Santiago"], ["57", "America/Bogota"], ["58", "America/Caracas"],
  ["60", "Asia/Kuala_Lumpur"], ["61", "Australia/Sydney"], ["62", "Asia/Jakarta"], ["63", "Asia/Manila"],
  ["64", "Pacific/Auckland"], ["65", "Asia/Singapore"], ["66", "Asia/Bangkok"], ["81", "Asia/Tokyo"],
  ["82", "Asia/Seoul"], ["84", "Asia/Ho_Chi_Minh"], ["86", "Asia/Shanghai"], ["90", "Europe/Istanbul"],
  ["91", "Asia/Kolkata"], ["92", "Asia/Karachi"], ["93", "Asia/Kabul"], ["94", "Asia/Colombo"], ["95", "Asia/Yangon"],
  ["98", "Asia/Tehran"], ["212", "Africa/Casablanca"], ["213", "Africa/Algiers"], ["216", "Africa/Tunis"],
  ["218", "Africa/Tripoli"], ["221", "Africa/Dakar"], ["225", "Africa/Abidjan"], ["233", "Africa/Accra"],
  ["234", "Africa/Lagos"], ["237", "Africa/Douala"], ["244", "Africa/Luanda"], ["251", "Africa/Addis_Ababa"],
  ["254", "Africa/Nairobi"], ["255", "Africa/Dar_es_Salaam"], ["256", "Africa/Kampala"], ["258", "Africa/Maputo"],
  ["260", "Africa/Lusaka"], ["263", "Africa/Harare"], ["351", "Europe/Lisbon"], ["352", "Europe/Luxembourg"],
  ["353", "Europe/Dublin"], ["358", "Europe/Helsinki"], ["359", "Europe/Sofia"], ["370", "Europe/Vilnius"],
  ["371", "Europe/Riga"], ["372", "Europe/Tallinn"], ["380", "Europe/Kyiv"], ["381", "Europe/Belgrade"],
  ["385", "Europe/Zagreb"], ["386", "Europe/Ljubljana"], ["420", "Europe/Prague"], ["421", "Europe/Bratislava"],
  ["502", "America/Guatemala"], ["503", "America/El_Salvador"], ["504", "America/Tegucigalpa"],
  ["505", "America/Managua"], ["506", "America/Costa_Rica"], ["507", "America/Panama"], ["591", "America/La_Paz"],
  ["593", "America/Guayaquil"], ["595", "America/Asuncion"], ["598", "America/Montevideo"],
  ["852", "Asia/Hong_Kong"], ["880", "Asia/Dhaka"], ["886", "Asia/Taipei"], ["961", "Asia/Beirut"],
  ["962", "Asia/Amman"], ["964", "Asia/Baghdad"], ["965", "Asia/Kuwait"], ["966", "Asia/Riyadh"],
  ["971", "Asia/Dubai"], ["972", "Asia/Jerusalem"], ["974", "Asia/Qatar"], ["977", "Asia/Kathmandu"],
  ["1787", "America/Puerto_Rico"], ["1809", "America/Santo_Domingo"], ["1829", "America/Santo_Domingo"],
  ["1849", "America/Santo_Domingo"], ["1876", "America/Jamaica"]
]
const BY_CODE = new Map(ZONES)

/** The zone of a phone number's country (its digits, calling code first), if known. */
export const zoneOfPhone = (digits: string): string | undefined => {
  for (let length = 4; length >= 1; length--) {
    const zone = BY_CODE.get(digits.slice(0, length))
    if (zone !== undefined && digits.length > length) return zone
  }
  return undefined
}

interface Local {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly minutes: number
  readonly weekday: number
}

const formats = new Map<string, Intl.DateTimeFormat>()
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

const localOf = (ms: number, zone: string): Local => {
  let format = formats.get(zone)
  if (format === undefined) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      weekday: "short"
    })
    formats.set(zone, format)
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((p) => [p.type, p.value]))
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    minutes: Number(parts.hour) * 60 + Number(parts.minute),
    weekday: WEEKDAYS.indexOf(parts.weekday ?? "")
  }
}

/** The instant of a local wall time (`minutes` after local midnight of the date) in `zone`. */
const instantOf = (year: number, month: number, day: number, minutes: number, zone: string): number => {
  const wall = Date.UTC(year, month - 1, day) + minutes * 60_000
  let guess = wall
  // The zone's offset at the guess, twice: settles across a change of offset.
  for (let i = 0; i < 2; i++) {
    const l = localOf(guess, zone)
    const seen = Date.UTC(l.year, l.month - 1, l.day) + l.minutes * 60_000
    guess = guess + (wall - seen)
  }
  return guess
}

const toMinutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))

/** When the quiet window that holds `ms` ends (in `zone`); undefined when `ms` is outside every window. */
const windowEndAt = (window: QuietHoursWindow, zone: string, ms: number): number | undefined => {
  const start = toMinutes(window.start)
  const end = toMinutes(window.end)
  const length = end > start ? end - start : end + 24 * 60 - start
  const days = new Set(window.days.length === 0 ? [0, 1, 2, 3, 4, 5, 6] : window.days)
  const today = localOf(ms, zone)
  // A window started today or yesterday may hold now (one crossing midnight).
  for (const back of [0, 1]) {
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day - back))
    if (!days.has(date.getUTCDay())) continue
    const opens = instantOf(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), start, zone)
    const closes = instantOf(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), start + length, zone)
    if (ms >= opens && ms < closes) return closes
  }
  return undefined
}

/**
 * When sending to a recipient in `zone` may go on: undefined when `ms` is outside quiet hours, else the end of the
 * quiet time that holds it (windows that follow each other, a quiet Sunday after a quiet Saturday night, count as one).
 */
export const quietUntil = (window: QuietHoursWindow, zone: string, ms: number): number | undefined => {
  let until: number | undefined
  let at = ms
  for (let i = 0; i < 8; i++) {
    const end = windowEndAt(window, zone, at)
    if (end === undefined) break
    until = end
    at = end
  }
  return until
}

/** The zone a recipient's quiet hours are read in. */
export const recipientZone = (contactZone: string | null, recipient: string, window: QuietHoursWindow): string =>
  contactZone ?? zoneOfPhone(recipient) ?? window.default_time_zone ?? "UTC"
