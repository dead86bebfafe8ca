/**
 * The import rules of the repository (docs/architecture.md), checked over the TypeScript import graph:
 * - core's capability folders import each other without a cycle;
 * - `shared/` imports only itself, `ports/` only `shared/` and itself;
 * - production code never imports the test kit (`testing/`) and never a simulator (`simulators/`): only the
 *   host (http-node) chooses to run one;
 * - domain code imports no transport (no HTTP server, no Node HTTP, no SQL driver);
 * - a capability's storage (its `*Repo.ts` modules: ports such as `ContactsRepo`, `MessagingLocks`) is its own:
 *   another capability reaches it through its service or a narrow port it owns, wired in `Parley.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import ts from "typescript"

const repo = Path.resolve(import.meta.dirname, "../../..")
const core = Path.join(repo, "packages/core/src")

interface Import {
  readonly from: string
  /** A file of the repository, or the bare specifier of a package (`effect/http`, `node:http`). */
  readonly to: string
  readonly names: string
  /** `import type` (or every name imported as a type): no code of the module runs. */
  readonly typeOnly: boolean
}

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return ["node_modules", "dist", "dist-inbox"].includes(entry.name) ? [] : sourceFiles(path)
    return /\.tsx?$/.test(entry.name) ? [path] : []
  })

const isTypeOnly = (clause: ts.ImportClause | undefined): boolean => {
  if (clause === undefined) return false
  if (clause.isTypeOnly) return true
  const bindings = clause.namedBindings
  return clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
}

const importsOf = (file: string): Array<Import> => {
  const text = Fs.readFileSync(file, "utf8")
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false)
  const found: Array<Import> = []
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined) {
      const specifier = (node.moduleSpecifier as ts.StringLiteral).text
      const names = ts.isImportDeclaration(node) ? (node.importClause?.getText(source) ?? "") : ""
      const typeOnly = ts.isImportDeclaration(node) ? isTypeOnly(node.importClause) : node.isTypeOnly
      found.push({ from: file, to: specifier.startsWith(".") ? Path.resolve(Path.dirname(file), specifier) : specifier, names, typeOnly })
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments
      if (arg !== undefined && ts.isStringLiteral(arg)) {
        found.push({ from: file, to: arg.text.startsWith(".") ? Path.resolve(Path.dirname(file), arg.text) : arg.text, names: "", typeOnly: false })
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/**
 * Test kits are not production: core's `testing/` and the CLI's `parley test` commands (`http-node/src/testing/`),
 * which run the kit on purpose.
 */
const testKits = [Path.join(core, "testing"), Path.join(repo, "packages/http-node/src/testing")].map((dir) => dir + Path.sep)
const production = ["core", "store-pg", "http-node", "client"].flatMap((pkg) =>
  sourceFiles(Path.join(repo, "packages", pkg, "src"))
).filter((file) => !testKits.some((dir) => file.startsWith(dir)))
const imports = production.flatMap(importsOf)

/** A core file's top-level folder (`executions`, `messaging`, ...), or undefined for the roots (`Parley.ts`, `Api.ts`). */
const folderOf = (file: string): string | undefined => {
  if (!file.startsWith(core + Path.sep)) return undefined
  const parts = Path.relative(core, file).split(Path.sep)
  return parts.length > 1 ? parts[0] : undefined
}

const rel = (file: string) => Path.relative(repo, file)

/** Strongly connected components of the folder graph with more than one folder (Tarjan). */
const cyclesOf = (edges: ReadonlyMap<string, ReadonlySet<string>>): Array<Array<string>> => {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const connect = (v: string): void => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const v of edges.keys()) if (!index.has(v)) connect(v)
  return found
}

/** Folders of shared infrastructure, not capabilities: their ports are everyone's. */
const infrastructure = new Set(["ports", "shared"])

/**
 * Storage modules another capability still reads, by importing folder (issue 28 §2: each goes when its capability
 * gets a service method or a narrow port for it). The list only shrinks: an entry nothing imports any more fails too.
 * `secrets/` is the exception by design: it seals the credentials of messaging's and webhooks' repositories
 * between the services and the adapters.
 */
const storageReadsToRetire: Record<string, ReadonlyArray<string>> = {
  secrets: ["messaging/numbers/MessageConfigsRepo.ts", "webhooks/WebhooksRepo.ts"]
}

/** Imports of code (not only types) from another capability's storage module, as `folder -> module`. */
const foreignStorageReads = imports.flatMap(({ from, to, typeOnly }) => {
  const [a, b] = [folderOf(from), folderOf(to)]
  if (a === undefined || b === undefined || a === b || infrastructure.has(b) || typeOnly || !/Repo\.ts$/.test(to)) return []
  return [{ edge: `${a} -> ${Path.relative(core, to)}`, file: rel(from) }]
})

describe("import rules", () => {
  it("core's capability folders import each other without a cycle", () => {
    const edges = new Map<string, Set<string>>()
    const why = new Map<string, Array<string>>()
    for (const { from, to } of imports) {
      const [a, b] = [folderOf(from), folderOf(to)]
      if (a === undefined || b === undefined || a === b) continue
      if (!edges.has(a)) edges.set(a, new Set())
      edges.get(a)!.add(b)
      why.set(`${a} -> ${b}`, [...(why.get(`${a} -> ${b}`) ?? []), `${rel(from)} -> ${rel(to)}`])
    }
    const cycles = cyclesOf(edges)
    const report = cycles.map((cycle) =>
      `cycle: ${cycle.join(", ")}\n` +
      [...why].filter(([edge]) => cycle.includes(edge.split(" -> ")[0]!) && cycle.includes(edge.split(" -> ")[1]!))
        .map(([edge, files]) => `  ${edge}: ${files.join("; ")}`).join("\n")
    )
    assert.deepStrictEqual(report, [])
  })

  it("shared/ imports only itself and ports/ only shared/ and itself", () => {
    const wrong = imports.filter(({ from, to }) => {
      const [a, b] = [folderOf(from), folderOf(to)]
      if (b === undefined || a === b) return false
      return a === "shared" || (a === "ports" && b !== "shared")
    }).map(({ from, to }) => `${rel(from)} -> ${rel(to)}`)
    assert.deepStrictEqual(wrong, [])
  })

  it("production code imports neither the test kit nor a simulator", () => {
    const simulators = Path.join(core, "simulators") + Path.sep
    const testing = Path.join(core, "testing") + Path.sep
    // Only the host decides to run the simulators: http-node's `simulators/` wiring, never core's domain.
    const hostChoosesSimulators = (file: string) => file.startsWith(Path.join(repo, "packages/http-node/src/simulators") + Path.sep)
    const wrong = imports.filter(({ from, to }) => {
      if (to.startsWith(testing) || to === "@parley/core/testing" || to.startsWith("@parley/core/testing/")) return true
      if (from.startsWith(simulators)) return false
      return to.startsWith(simulators) || (to === "@parley/core/simulators" && !hostChoosesSimulators(from))
    }).map(({ from, to }) => `${rel(from)} -> ${to.startsWith(repo) ? rel(to) : to}`)
    assert.deepStrictEqual(wrong, [])
  })

  it("core's domain imports no transport", () => {
    const transports = /^(node:http|node:https|node:http2|node:net|@effect\/platform-node|@effect\/sql|pg|undici)(\/|$)/
    const serverSide = /\bHttp(Router|Server|ServerRequest|ServerResponse|Middleware)\b/
    const wrong = imports.filter(({ from, to, names }) =>
      from.startsWith(core + Path.sep) && !from.startsWith(Path.join(core, "simulators") + Path.sep) &&
      // The private-address rule reads IP literals with `node:net`; it opens no connection.
      !(rel(from) === "packages/core/src/shared/PrivateAddress.ts" && to === "node:net") &&
      (transports.test(to) || (to === "effect/http" && serverSide.test(names)))
    ).map(({ from, to }) => `${rel(from)} -> ${to}`)
    assert.deepStrictEqual(wrong, [])
  })

  it("a capability reads no other capability's storage, but through its service or a narrow port", () => {
    const allowed = new Set(Object.entries(storageReadsToRetire).flatMap(([folder, modules]) => modules.map((m) => `${folder} -> ${m}`)))
    const wrong = foreignStorageReads.filter(({ edge }) => !allowed.has(edge)).map(({ edge, file }) => `${file}: ${edge}`)
    assert.deepStrictEqual(wrong, [])
    const retired = [...allowed].filter((edge) => !foreignStorageReads.some((read) => read.edge === edge))
    assert.deepStrictEqual(retired, [], "no longer imported: drop these from storageReadsToRetire")
  })

  it("messaging's locks stay in messaging (executions take their own RouteLocks)", () => {
    const wrong = imports.filter(({ from, names }) => /\bMessagingLocks\b/.test(names) && folderOf(from) !== "messaging" && folderOf(from) !== undefined)
      .map(({ from, to }) => `${rel(from)} -> ${rel(to)}`)
    assert.deepStrictEqual(wrong, [])
  })
})
