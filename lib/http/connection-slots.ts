/**
 * Who gets a connection when the hub has none left to give.
 *
 * The hub holds at most `total` connections, and one client network at most
 * `perClient` of them: an IPv4 /24 or an IPv6 /64, since whoever has one
 * address there usually has the rest (on loopback, all of 127.0.0.x), so
 * counting by address let eight addresses take every slot. Counting alone
 * still lets an attacker's network crowd out an honest client on the same
 * network (the operator's agents on 127.0.0.1 beside an attacker on
 * 127.0.0.2), and the hub cannot tell who is who from an address.
 *
 * So a connection that has carried a request with a verified signature is
 * held for its agent: an agent is accountable, and its key can be revoked.
 * Every other connection (idle, trickling headers, a body that never ends,
 * an unsigned read) may be let go for a newcomer. One that arrives past a
 * cap closes an unsigned connection of the address holding the most of them
 * (in its own network, or, past the total, in the network holding the
 * most), oldest first. Attackers churning connections therefore close their
 * own: a client that holds one connection while it signs a request is never
 * the biggest holder, and once verified its connection is held. Only when
 * every connection is held for an agent is a newcomer closed on arrival.
 */
import { isIPv4 } from 'node:net';
import type { Socket } from 'node:net';

interface Address {
  /** Its open connections not yet held for an agent, oldest first. */
  unsigned: Set<Socket>;
}

interface Network {
  addresses: Map<string, Address>;
  count: number;
}

interface Slot {
  address: Address;
}

/** Where each admitted connection is counted, so a verified signature can move it out of reach. */
const slotOf = new WeakMap<Socket, Slot>();

/** Marks a connection as an agent's (a request on it carried a verified signature): never let go for a newcomer. */
export function heldForAgent(socket: Socket): void {
  slotOf.get(socket)?.address.unsigned.delete(socket);
}

export type ConnectionAdmission = 'admitted' | 'admitted_evicting' | 'refused';

export class ConnectionSlots {
  private readonly networks = new Map<string, Network>();
  private open = 0;

  constructor(
    readonly total: number,
    readonly perClient: number,
  ) {}

  get active(): number {
    return this.open;
  }

  /** Admits a new connection, closing an unsigned one to make room if it must; or refuses it. */
  admit(socket: Socket): ConnectionAdmission {
    const key = clientNetwork(socket.remoteAddress);
    const network = this.networks.get(key) ?? { addresses: new Map<string, Address>(), count: 0 };
    let evicted = false;
    if (network.count >= this.perClient) {
      if (!evictFrom(network)) return 'refused';
      evicted = true;
    } else if (this.open >= this.total) {
      const bySize = [...this.networks.values()].sort((a, b) => b.count - a.count);
      if (!bySize.some(evictFrom)) return 'refused';
      evicted = true;
    }
    this.networks.set(key, network);
    const remote = socket.remoteAddress ?? '';
    const address = network.addresses.get(remote) ?? { unsigned: new Set<Socket>() };
    network.addresses.set(remote, address);
    address.unsigned.add(socket);
    slotOf.set(socket, { address });
    network.count++;
    this.open++;
    socket.once('close', () => {
      address.unsigned.delete(socket);
      network.count--;
      this.open--;
      if (address.unsigned.size === 0 && network.addresses.get(remote) === address) network.addresses.delete(remote);
      if (network.count === 0 && this.networks.get(key) === network) this.networks.delete(key);
    });
    return evicted ? 'admitted_evicting' : 'admitted';
  }
}

/**
 * Closes the oldest unsigned connection of the network's address holding the
 * most of them; false when none is unsigned. Its count drops when it closes.
 */
function evictFrom(network: Network): boolean {
  let biggest: Address | null = null;
  for (const address of network.addresses.values()) {
    if (address.unsigned.size > (biggest?.unsigned.size ?? 0)) biggest = address;
  }
  const victim = biggest?.unsigned.values().next().value;
  if (victim === undefined) return false;
  biggest!.unsigned.delete(victim);
  victim.destroy();
  return true;
}

/** A client's network: the /24 of an IPv4 address (an IPv4 client over an IPv6 socket too), the /64 of an IPv6 one. */
export function clientNetwork(remote: string | undefined): string {
  if (remote === undefined) return '';
  const v4 = remote.startsWith('::ffff:') && isIPv4(remote.slice(7)) ? remote.slice(7) : remote;
  if (isIPv4(v4)) return `${v4.split('.').slice(0, 3).join('.')}.0/24`;
  return `${expandIPv6(remote).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, `::` filled in (a zone id dropped). */
function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => '0');
  return [...left, ...fill, ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}
