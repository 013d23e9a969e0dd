/**
 * The refusal of an append on a read-only mirror, in one place: the store
 * gives it, and so does the HTTP door before it looks at a credential (a
 * mirror need not hold the agents' keys to say that it stores nothing).
 */
import { RelayError } from '../../errors.js';

export function readOnlyRefusal(primary: string | null | undefined): RelayError {
  const where = primary ? ` at ${primary}` : '';
  return new RelayError('read_only', `This relay is a read-only mirror; it stores nothing itself. Send the record to the primary${where} instead, and ` +
    `it will reach this mirror with the next sync.`, { primary: primary ?? null });
}
