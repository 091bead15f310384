/**
 * A lookup by a name a client or an upstream chose, in a table written as an object literal:
 * only the table's own entries, never what every object inherits. `table["constructor"]` is
 * Object itself and `table["__proto__"]` Object.prototype: a voice named "constructor" reached
 * the upstream with no voice, and a `Content-Encoding: constructor` was a 500.
 */
export function ownValue<T>(table: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}
