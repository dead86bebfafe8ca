/**
 * The operations doc and the Grafana dashboard name only what the host declares: every metric family in the doc's
 * table and no other, with its type and labels, and every query (the doc's PromQL, the dashboard's targets) on a
 * declared metric (a histogram's `_bucket`, `_sum`, `_count`) with declared labels.
 */
import { assert, describe, it } from "@effect/vitest"
import { metricFamilies } from "@parley/core"
import { readFileSync } from "node:fs"

const root = new URL("../../../", import.meta.url)
const doc = readFileSync(new URL("docs/operations.md", root), "utf8")
const dashboard = JSON.parse(readFileSync(new URL("docs/grafana/parley.json", root), "utf8")) as {
  readonly panels: ReadonlyArray<{ readonly type: string; readonly title: string; readonly targets?: ReadonlyArray<{ readonly expr: string }> }>
}

const families = new Map(metricFamilies().map((f) => [f.name, f]))

/** The family a series name belongs to, with the labels a query may use on it. */
const resolve = (series: string) => {
  const direct = families.get(series)
  if (direct !== undefined) return { family: direct, labels: direct.labels }
  const suffix = /_(bucket|sum|count)$/.exec(series)
  const base = suffix === null ? undefined : families.get(series.slice(0, -suffix[0].length))
  if (base === undefined || base.type !== "Histogram") return undefined
  return { family: base, labels: suffix![1] === "bucket" ? [...base.labels, "le"] : base.labels }
}

/** Problems of one PromQL expression: unknown metrics, labels the metric does not have. */
const problems = (expr: string): Array<string> => {
  const found: Array<string> = []
  const used = [...expr.matchAll(/\b(parley_[a-z0-9_]+)(\{([^}]*)\})?/g)]
  if (used.length === 0) found.push(`no Parley metric in ${expr}`)
  const allowed = new Set<string>()
  for (const [, name, , selector] of used) {
    const resolved = resolve(name!)
    if (resolved === undefined) {
      found.push(`${name} is not declared`)
      continue
    }
    resolved.labels.forEach((l) => allowed.add(l))
    for (const [, label] of (selector ?? "").matchAll(/([a-z_]+)\s*(=~|!=|!~|=)/g)) {
      if (!resolved.labels.includes(label!)) found.push(`${name} has no label ${label}`)
    }
  }
  for (const [, list] of expr.matchAll(/\bby\s*\(([^)]*)\)/g)) {
    for (const label of list!.split(",").map((l) => l.trim()).filter((l) => l !== "")) {
      if (!allowed.has(label)) found.push(`grouping by ${label}, which no metric of ${expr} has`)
    }
  }
  return found
}

describe("the operations doc and the Grafana dashboard", () => {
  it("the doc's table lists every declared metric family, with its type and labels, and nothing else", () => {
    assert.isAbove(families.size, 15)
    const rows = [...doc.matchAll(/^\| `(parley_[a-z0-9_]+)` \| (\w+) \| ([^|]*) \|/gm)].map(([, name, type, labels]) => ({
      name: name!,
      type: type!,
      labels: [...labels!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!)
    }))
    assert.sameMembers(rows.map((r) => r.name), [...families.keys()])
    for (const row of rows) {
      const family = families.get(row.name)!
      assert.strictEqual(row.type, family.type.toLowerCase(), row.name)
      assert.sameMembers(row.labels, [...family.labels], row.name)
      assert.isNotEmpty(family.description, `${row.name} has a HELP text`)
    }
  })

  it("the doc's PromQL examples name declared metrics and labels", () => {
    const blocks = [...doc.matchAll(/```promql\n([\s\S]*?)```/g)].map((m) => m[1]!)
    assert.isAtLeast(blocks.length, 5)
    // One expression per line, or continued on the next with leading spaces.
    const expressions = blocks.flatMap((block) => block.replace(/\n\s+/g, " ").split("\n").filter((l) => l.trim() !== ""))
    for (const expr of expressions) assert.deepStrictEqual(problems(expr), [], expr)
    for (const alert of ["parley_job_queue_oldest_ready_seconds", "parley_webhook_deliveries_failed_total", "parley_messages_sent_total", "parley_executions_live_oldest_seconds"]) {
      assert.isTrue(expressions.some((e) => e.includes(alert)), `an alert on ${alert}`)
    }
  })

  it("every query of the dashboard names declared metrics and labels, and every family has a panel", () => {
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr))
    assert.isAbove(exprs.length, 15)
    for (const expr of exprs) assert.deepStrictEqual(problems(expr), [], expr)
    const shown = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(parley_[a-z0-9_]+)/g)].map((m) => resolve(m[1]!)?.family.name)))
    assert.sameMembers([...shown], [...families.keys()], "a panel per metric family")
  })
})
