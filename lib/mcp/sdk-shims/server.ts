/** What `@modelcontextprotocol/server/_shims` exports on Node, with the validator loaded lazily (lazy-validator.ts says why). */
import process from 'node:process';
import { lazyValidatorClass } from './lazy-validator.js';

export const DefaultJsonSchemaValidator = lazyValidatorClass('@modelcontextprotocol/server/validators/ajv');
export { process };
