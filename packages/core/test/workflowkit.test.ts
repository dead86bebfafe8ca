/**
 * The workflow test kit (`testing/WorkflowKit.ts`): interactive replies,
 * media, webhook answers, function stubs and scripted model turns, and the
 * failures it reports.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { layerMemoryParley } from "../src/testing/MemoryParley.ts"
import { testWorkflow } from "../src/testing/WorkflowKit.ts"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const line = (...ids: ReadonlyArray<string>) => ids.slice(1).map((target, i) => ({ source: ids[i]!, target }))

describe("workflow test kit", () => {
  it.effect("a contact taps a button and picks a list row of the bot's interactive messages", () =>
    Effect.gen(function*() {
      const flow = yield* testWorkflow({
        name: "Menu",
        message_debounce_seconds: 3,
        definition: {
          nodes: [
            node("start", "start"),
            node("menu", "send_interactive", {
              interactive_type: "button",
              body_text: "Track or buy?",
              buttons: [{ id: "track", title: "Track" }, { id: "buy", title: "Buy" }]
            }),
            node("choice", "wait_for_response", { save_response_to: "choice" }),
            node("sizes", "send_interactive", {
              interactive_type: "list",
              body_text: "Which size?",
              list_button_text: "Sizes",
              list_sections: [{ title: "Sizes", rows: [{ id: "s", title: "Small" }, { id: "l", title: "Large" }] }]
            }),
            node("size", "wait_for_response", { save_response_to: "size" }),
            node("photo_ask", "send_text", { message: "A photo of the item, please" }),
            node("photo", "wait_for_response", { save_response_to: "photo" }),
            node("thanks", "send_text", { message: "Thanks" })
          ],
          edges: line("start", "menu", "choice", "sizes", "size", "photo_ask", "photo", "thanks")
        }
      })
      const ada = yield* flow.contact("+15551234567", "Ada")
      yield* ada.says("hi")
      const menu = yield* ada.expectReply({ interactive: { type: "button", body: "Track or buy?", options: ["Track", "Buy"] } })
      assert.deepStrictEqual(menu, {
        kind: "interactive",
        interactive_type: "button",
        body: "Track or buy?",
        options: [{ id: "track", title: "Track" }, { id: "buy", title: "Buy" }]
      })
      const refused = yield* Effect.flip(ada.taps("Sell"))
      assert.include(refused.message, "\"Sell\" is not an option of the last interactive message")

      yield* ada.taps("Buy")
      yield* ada.expectReply({ interactive: { body: "Which size?", options: ["Small", "Large"] } })
      yield* ada.picks("Large")
      yield* ada.expectReply({ text: "A photo of the item, please" })
      yield* ada.sends("image", { caption: "the vase" })
      yield* ada.expectReply({ text: "Thanks" })
      yield* flow.expectStatus("ended")
      const vars = (yield* flow.run).execution_context.vars
      assert.deepStrictEqual(vars["choice"], { type: "button_reply", id: "buy", title: "Buy" })
      assert.deepStrictEqual(vars["size"], { type: "list_reply", id: "l", title: "Large" })
      assert.isDefined(vars["photo"])
    }).pipe(Effect.provide(layerMemoryParley)))

  it.effect("webhooks answer per URL, a function answers a fixed JSON and the model follows its script", () =>
    Effect.gen(function*() {
      const flow = yield* testWorkflow({
        workflow: {
          name: "Order desk",
          definition: {
            nodes: [
              node("start", "start"),
              node("lookup", "webhook", {
                url: "https://shop.test/orders/lookup",
                method: "POST",
                body_template: { text: "{{vars.last_user_input}}" },
                save_response_to: "order"
              }),
              node("price", "function", { function_id: "price-fn", save_response_to: "price" }),
              node("mood", "decide", {
                decision_type: "ai",
                provider_model_name: "parley-sim",
                conditions: [{ label: "happy" }, { label: "angry" }]
              }),
              node("calm", "send_text", { message: "Order {{vars.order.id}} costs {{vars.price.total}}. Sorry!" }),
              node("glad", "send_text", { message: "Order {{vars.order.id}} costs {{vars.price.total}}." })
            ],
            edges: [
              ...line("start", "lookup", "price", "mood"),
              { source: "mood", target: "glad", label: "happy" },
              { source: "mood", target: "calm", label: "angry" }
            ]
          }
        }
      }, {
        webhooks: [{ url: "https://elsewhere.test/", status: 500 }, { url: "https://shop.test/orders/", body: { id: "A-7" } }],
        functions: { "price-fn": { answer: { total: "12 EUR" } } },
        model: [{ text: "angry" }]
      })
      const bo = yield* flow.contact("+15557654321")
      yield* bo.says("where is my order?!")
      yield* bo.expectReply({ text: "Order A-7 costs 12 EUR. Sorry!" })
      yield* flow.expectEdges(["next", "next", "next", "angry", "next"])
      yield* flow.expectVars({ order: { id: "A-7" }, price: { total: "12 EUR" } })
      const [request] = yield* flow.webhookRequests
      assert.strictEqual(request?.url, "https://shop.test/orders/lookup")
      assert.deepStrictEqual(JSON.parse(request!.body), { text: "where is my order?!" })
    }).pipe(Effect.provide(layerMemoryParley)))

  it.effect("a template the definition names is created, approved and mirrored; the bot's template is expected by name and parameters", () =>
    Effect.gen(function*() {
      const flow = yield* testWorkflow({
        name: "Shipping",
        definition: {
          nodes: [node("start", "start"), node("shipped", "send_template", { template_id: "order-update", parameters: ["{{vars.last_user_input}}"] })],
          edges: line("start", "shipped")
        }
      }, {
        templates: {
          "order-update": {
            name: "order_update",
            language: "en_US",
            category: "UTILITY",
            components: [{ type: "BODY", text: "Your order {{1}} is on its way", example: { body_text: [["42"]] } }]
          }
        }
      })
      const ada = yield* flow.contact("+15551234567")
      yield* ada.says("42")
      const sent = yield* ada.expectReply({ template: "order_update", language: "en_US", parameters: ["42"] })
      assert.deepStrictEqual(sent, { kind: "template", name: "order_update", language: "en_US", parameters: ["42"] })
      yield* flow.expectStatus("ended")
    }).pipe(Effect.provide(layerMemoryParley)))

  it.effect("expectations say what was expected and what happened", () =>
    Effect.gen(function*() {
      const flow = yield* testWorkflow({
        name: "Echo",
        definition: { nodes: [node("start", "start"), node("echo", "send_text", { message: "You said {{vars.last_user_input}}" })], edges: line("start", "echo") }
      })
      const ada = yield* flow.contact("+15551234567")
      const early = yield* Effect.flip(ada.expectReply({ text: "x" }))
      assert.strictEqual(early.message, "Expected the bot to send text \"x\"; it sent nothing more (no run started)")
      yield* ada.says("hi")
      yield* ada.expectReply({ text_contains: "hi" })
      assert.strictEqual((yield* Effect.flip(ada.expectReply({ text: "again" }))).message, "Expected the bot to send text \"again\"; it sent nothing more (the run is ended)")
      assert.strictEqual(
        (yield* Effect.flip(flow.expectPath(["start"]))).message,
        "Expected the nodes entered to be [\"start\"]; it is [\"start\",\"echo\"]"
      )
      assert.strictEqual((yield* Effect.flip(flow.expectStatus("waiting"))).message, "Expected the run to be waiting; it is ended")
      assert.strictEqual((yield* Effect.flip(flow.expectVars({ last_user_input: "bye" }))).message, "Expected vars.last_user_input to be \"bye\"; it is \"hi\"")
      assert.include((yield* Effect.flip(flow.expectEvents(["execution_ended", "execution_started"]))).message, "missing \"execution_started\"")
    }).pipe(Effect.provide(layerMemoryParley)))

  it.effect("a definition the service refuses fails with its reasons", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(testWorkflow({ name: "Broken", definition: { nodes: [node("start", "start")], edges: line("start", "nowhere") } }))
      assert.include(refused.message, "The workflow was refused")
    }).pipe(Effect.provide(layerMemoryParley)))
})
