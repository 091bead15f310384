/**
 * Gemini's `parameters` and `responseSchema` are an OpenAPI 3.0 schema subset with upper-case
 * types (`OBJECT`, `STRING`, as `@google/genai`'s `Type` writes them) and `nullable`; other
 * providers take JSON Schema. Types are lower-cased, `nullable` becomes a `null` type, and
 * Gemini's `propertyOrdering` is left out.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  const fields = schema as Record<string, unknown>;
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'propertyOrdering' || key === 'nullable') continue;
    if (key === 'type' && typeof value === 'string') out.type = value.toLowerCase();
    else if (key === 'properties' && value !== null && typeof value === 'object') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([name, inner]) => [name, jsonSchemaOf(inner)]));
    } else if (key === 'items' || key === 'anyOf' || key === 'additionalProperties') out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  if (fields.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}
