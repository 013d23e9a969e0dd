/**
 * A tool schema as tools/list shows it, less the `$schema` line zod writes
 * into every converted schema (11 times per listing, 57 bytes each: 3.7 %
 * of the unnamed listing and 7 % of the named one).
 *
 * Dropping it changes no meaning. MCP (2025-11-25) says a schema without
 * `$schema` is JSON Schema 2020-12, which is the dialect zod names; and the
 * keywords ours use (type, properties, required, enum, const, anyOf, items,
 * minimum, multipleOf, additionalProperties) mean the same in draft-07, which
 * older clients assume. The zod schema itself is untouched: the SDK still
 * validates every call and result with it (`~standard.validate`); only the
 * JSON Schema it hands to tools/list (`~standard.jsonSchema`) is filtered.
 *
 * An output schema also leaves out `additionalProperties: false` (8 times,
 * 29 bytes each): the server still answers exactly the fields it lists, and
 * a client holding the listing need not refuse an answer that carries a
 * field added after it listed. Input schemas carry none: zod writes it only
 * for outputs.
 */
import type { z } from 'zod';

type Converted = Record<string, unknown>;
type Options = Parameters<z.ZodType['~standard']['jsonSchema']['input']>[0];

export function withoutDialect<T extends z.ZodType>(schema: T): T {
  const standard = schema['~standard'];
  const convert = standard.jsonSchema;
  const strip = ({ $schema: _dialect, ...rest }: Converted): Converted => rest;
  const jsonSchema = {
    input: (options: Options) => strip(convert.input(options)),
    output: (options: Options) => opened(strip(convert.output(options))) as Converted,
  };
  // The same object (zod's own methods still work on it), its standard face with one function replaced.
  return new Proxy(schema, {
    get: (target, key, receiver) => (key === '~standard' ? { ...standard, jsonSchema } : Reflect.get(target, key, receiver)),
  });
}

/** The schema less every `additionalProperties: false`, at any depth. */
function opened(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(opened);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Converted = {};
  for (const [key, value] of Object.entries(schema)) if (!(key === 'additionalProperties' && value === false)) out[key] = opened(value);
  return out;
}
