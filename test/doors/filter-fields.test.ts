/**
 * Every filter of the model's table (FILTER_FIELDS) is taken by every door
 * alike: the MCP tools' arguments, the query parameters of GET /relays and
 * /events, and the CLI options each give the same filter for the same
 * values, and a mark's filter key names it. A row added to the table is
 * checked here with no test of its own.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { FILTER_HELP, FILTER_OPTIONS, filterOption } from '../../lib/cli/filter-options.js';
import type { CommandContext } from '../../lib/cli/command.js';
import { isRelayError } from '../../lib/errors.js';
import { filterFromQuery } from '../../lib/http/filter-query.js';
import { filterParams } from '../../lib/mcp/tools/shared.js';
import { FILTER_FIELDS, parseFilter, type FilterValue } from '../../lib/model/filter.js';
import { idShape } from '../../lib/model/ids.js';
import { filterText } from '../../lib/store/agents/filter-key.js';

const shape = idShape(4);

/** Values a door may send for each kind of filter: several names, one id, one search. */
const SAMPLES: Record<FilterValue, string[]> = { names: ['scout-7', 'all'], id: ['relay-0003'], words: ['disk full'] };

/** The same filter through each door. */
function throughEachDoor(name: string, flag: string, values: string[]) {
  const schema = z.object(filterParams()).strict();
  const mcp = parseFilter(schema.parse({ [name]: values.length === 1 ? values[0] : values }), shape);
  const query = filterFromQuery(new URLSearchParams(values.map((value): [string, string] => [name, value])), shape);
  const args = values.flatMap((value) => [`--${flag}`, value]);
  const cli = filterOption({ values: parseArgs({ args, options: FILTER_OPTIONS, strict: true }).values } as CommandContext, shape);
  return { mcp, query, cli };
}

for (const field of FILTER_FIELDS) {
  test(`${field.name}: the MCP arguments, the query string and the CLI give the same filter, and its mark key names it`, () => {
    const { mcp, query, cli } = throughEachDoor(field.name, field.flag, SAMPLES[field.value]);
    assert.ok(mcp?.[field.key] !== undefined, `${field.name} reached the filter`);
    assert.deepEqual(query, mcp, 'query string');
    assert.deepEqual(cli, mcp, 'CLI');
    assert.match(filterText(mcp, shape), new RegExp(`^${field.name}=`));
    assert.match(FILTER_HELP, new RegExp(`^  --${field.flag} ${field.arg} `, 'm'));
  });
}

test('the tools list each filter once, and nothing else under the filters', () => {
  assert.deepEqual(Object.keys(filterParams()).sort(), FILTER_FIELDS.map((field) => field.name).sort());
  assert.deepEqual(Object.keys(FILTER_OPTIONS).sort(), FILTER_FIELDS.map((field) => field.flag).sort());
});

test('a filter that takes one value, sent twice in a query string, is refused bad_filter naming it', () => {
  for (const field of FILTER_FIELDS.filter((f) => f.value !== 'names')) {
    const twice = new URLSearchParams([[field.name, SAMPLES[field.value][0]!], [field.name, SAMPLES[field.value][0]!]]);
    assert.throws(() => filterFromQuery(twice, shape), (err) => isRelayError(err) && err.code === 'bad_filter' &&
      err.details?.param === field.name && /Send it once/.test(err.message), field.name);
  }
});
