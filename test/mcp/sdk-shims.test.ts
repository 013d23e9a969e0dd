/**
 * lib/mcp/sdk-shims: the SDK's JSON Schema validator is the same ajv
 * validator, loaded on first use; and the built bundle carries no copy of
 * ajv, so a stdio server never loads it (scripts/build.mjs).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { DefaultJsonSchemaValidator as ClientValidator } from '../../lib/mcp/sdk-shims/client.js';
import { DefaultJsonSchemaValidator as ServerValidator } from '../../lib/mcp/sdk-shims/server.js';
import { ROOT } from '../support/helpers.js';

const require = createRequire(import.meta.url);
const schema = { type: 'object', properties: { id: { type: 'string', pattern: '^relay-[0-9]{4,}$' } }, required: ['id'], additionalProperties: false };

test('the server shim validates with the SDK\'s ajv validator, loaded only when a first schema is compiled', () => {
  const ajvModule = require.resolve('@modelcontextprotocol/server/validators/ajv');
  const validator = new ServerValidator();
  assert.equal(require.cache[ajvModule], undefined, 'constructing the validator must not load ajv');
  const check = validator.getValidator<{ id: string }>(schema);
  assert.ok(require.cache[ajvModule], 'the first schema loads it');
  assert.deepEqual(check({ id: 'relay-0042' }), { valid: true, data: { id: 'relay-0042' }, errorMessage: undefined });
  const refused = check({ id: 'relay-42', extra: 1 });
  assert.equal(refused.valid, false);
  assert.match(refused.errorMessage ?? '', /pattern|additional/);
});

test('the client shim validates with the client SDK\'s ajv validator (what the bridge checks outputSchema with)', () => {
  const check = new ClientValidator().getValidator<{ id: string }>(schema);
  assert.equal(check({ id: 'relay-0042' }).valid, true);
  assert.equal(check({}).valid, false);
});

test('the built bundle in dist/ holds no copy of ajv: it names the SDK\'s validator module and nothing more of it', async () => {
  const dist = path.join(ROOT, 'dist');
  const chunks = (await readdir(dist)).filter((name) => name.endsWith('.js'));
  assert.ok(chunks.includes('cli.js'), 'npm run build has made dist/');
  for (const name of chunks) {
    const code = await readFile(path.join(dist, name), 'utf8');
    const mentions = code.match(/[\w@/.-]*ajv[\w@/.-]*/gi) ?? [];
    assert.deepEqual(mentions.filter((m) => !/^(@modelcontextprotocol\/(server|client)\/validators\/ajv|\.AjvJsonSchemaValidator)$/.test(m)), [], `${name} carries ajv's code`);
  }
});
