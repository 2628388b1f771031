import assert from "node:assert/strict";
import { z } from "zod";
import { describeIssue, issueText } from "../../core/zod_issue.ts";

/** The first issue `schema` finds in `value`, described. */
function described(schema: z.ZodType, value: unknown): string {
  const r = schema.safeParse(value);
  assert.ok(!r.success, "the value must fail");
  return describeIssue(r.error.issues[0]!);
}

Deno.test("describeIssue(): zod's default English becomes our words, per issue kind", () => {
  const cases: [z.ZodType, unknown, string][] = [
    [z.object({ a: z.number() }), { a: "1" }, "a: must be a number"],
    [z.object({ a: z.number() }), {}, "a is required"],
    [z.object({ a: z.number().int() }), { a: 1.5 }, "a: must be an integer"],
    [z.object({ a: z.boolean() }), { a: "yes" }, "a: must be true or false"],
    [z.object({ a: z.array(z.string()) }), { a: "x" }, "a: must be an array"],
    [z.object({}), [], "must be an object"],
    [z.object({ a: z.string().max(3) }), { a: "long" }, "a: must be at most 3 characters"],
    [z.object({ a: z.string().min(1) }), { a: "" }, "a: must not be empty"],
    [z.object({ a: z.string().min(2) }), { a: "x" }, "a: must be at least 2 characters"],
    [z.object({ a: z.number().max(10) }), { a: 11 }, "a: must be at most 10"],
    [z.object({ a: z.number().gt(0) }), { a: 0 }, "a: must be greater than 0"],
    [z.object({ a: z.array(z.number()).max(2) }), { a: [1, 2, 3] }, "a: must have at most 2 items"],
    [z.object({ a: z.array(z.number()).min(1) }), { a: [] }, "a: must not be empty"],
    [z.object({ a: z.enum(["x", "y"]) }), { a: "q" }, "a: must be one of x, y"],
    [z.object({ a: z.literal("x") }), { a: "q" }, "a: must be x"],
    [z.object({ a: z.url() }), { a: "nope" }, "a: must be a URL"],
    [z.object({ a: z.email() }), { a: "nope" }, "a: must be an e-mail address"],
    [z.object({ a: z.number().multipleOf(5) }), { a: 7 }, "a: must be a multiple of 5"],
    [z.object({ a: z.string().regex(/^x+$/) }), { a: "y" }, "a: must be in the expected format"],
    [z.object({ a: z.union([z.string(), z.number()]) }), { a: true }, "a: is not valid"],
    [z.object({ a: z.string().refine((s) => s === "x") }), { a: "y" }, "a: is not valid"],
  ];
  for (const [schema, value, expected] of cases) assert.equal(described(schema, value), expected);
});

Deno.test("describeIssue(): a schema's own message is kept", () => {
  assert.equal(described(z.object({ a: z.string().min(1, "must not be blank") }), { a: "" }), "a: must not be blank");
  assert.equal(
    described(z.object({ a: z.string({ error: "must be text, please" }) }), { a: 1 }),
    "a: must be text, please",
  );
  assert.equal(described(z.object({ a: z.string().refine(() => false, "is taken") }), { a: "x" }), "a: is taken");
});

Deno.test("describeIssue(): never the caller's keys, in the message or in the path", () => {
  const marker = "LEAK-7f3a<script>";
  const strict = described(z.object({ a: z.string() }).strict(), { a: "x", [marker]: 1 });
  assert.equal(strict, "has a field it does not take");
  const nested = described(z.object({ o: z.object({}).strict() }), { o: { [marker]: 1 } });
  assert.equal(nested, "o: has a field it does not take");
  const record = described(z.object({ m: z.record(z.string(), z.number()) }), { m: { [marker]: "x", ok: 1 } });
  assert.equal(record, "m.[key]: must be a number");
  for (const text of [strict, nested, record]) assert.ok(!text.includes("LEAK"), text);
});

Deno.test("issueText(): the problem alone, for messages that name the field their own way", () => {
  const r = z.object({ ts: z.iso.datetime() }).safeParse({ ts: "yesterday" });
  assert.ok(!r.success);
  assert.equal(issueText(r.error.issues[0]!), "must be a date and time (ISO 8601)");
});
