/** What `@modelcontextprotocol/client/_shims` exports on Node, with the validator loaded lazily (lazy-validator.ts says why). */
import { lazyValidatorClass } from './lazy-validator.js';

/** Node's fetch never fails for CORS (the SDK's own Node shim says the same). */
export const CORS_IS_POSSIBLE = false;
export const DefaultJsonSchemaValidator = lazyValidatorClass('@modelcontextprotocol/client/validators/ajv');
