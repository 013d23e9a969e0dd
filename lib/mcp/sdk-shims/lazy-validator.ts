/**
 * The v2 SDK's JSON Schema validator (ajv), loaded on first use instead of at
 * start.
 *
 * The SDK's Node shims import its ajv provider eagerly: ~290 KB of code whose
 * module bodies run in every process that loads the SDK, whether or not it
 * ever validates a JSON Schema. Measured on this project's machines, a bare
 * SDK stdio server spends ~30 ms of CPU and 1.7 MB of memory on it before
 * its first answer (docs/performance-tables.md, "Start"), and a swarm runs twenty.
 * Our stdio server never uses it (its tools take zod schemas, and it never
 * elicits); the bridge's client does, to check results against a tool's
 * outputSchema. scripts/build.mjs therefore points the SDK's `_shims`
 * imports at sdk-shims/server.ts and sdk-shims/client.ts, which hand out
 * this class: the same validator, required from the SDK's CommonJS build the
 * first time a schema is compiled.
 */
import { createRequire } from 'node:module';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/server';

type Provider = new () => jsonSchemaValidator;

export function lazyValidatorClass(module: string): Provider {
  let load: Provider | undefined;
  return class LazyJsonSchemaValidator implements jsonSchemaValidator {
    private inner: jsonSchemaValidator | undefined;

    getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
      load ??= (createRequire(import.meta.url)(module) as { AjvJsonSchemaValidator: Provider }).AjvJsonSchemaValidator;
      this.inner ??= new load();
      return this.inner.getValidator<T>(schema);
    }
  };
}
