/** Reading the service's OpenAPI document in the security walks: operations, schemas, sample values. */

/** A JSON Schema of the document, read loosely. */
// deno-lint-ignore no-explicit-any
export type Schema = any;
/** A parameter of an operation, as the document declares it. */
export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema?: Schema;
}

/** An operation of the document: what the walks read of it. */
export interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  security?: Record<string, string[]>[];
}

/** `schema` with its `$ref`s followed into the document's components. */
export function resolved(schema: Schema, schemas: Record<string, Schema>): Schema {
  while (schema?.$ref) schema = schemas[schema.$ref.split("/").pop()];
  return schema;
}

/** A minimal valid value of `schema`: its example, default or first enum value, else required fields only. */
export function sampleOf(schema: Schema, schemas: Record<string, Schema>, depth = 0): unknown {
  schema = resolved(schema, schemas);
  if (!schema || depth > 6) return null;
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return sampleOf(alternatives[0], schemas, depth + 1);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s: Schema) => sampleOf(s, schemas, depth + 1)));
  switch (schema.type) {
    case "object":
      return Object.fromEntries(
        (schema.required ?? []).map((k: string) => [k, sampleOf(schema.properties?.[k], schemas, depth + 1)]),
      );
    case "array":
      return [];
    case "string":
      return "x";
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return true;
  }
  return null;
}
