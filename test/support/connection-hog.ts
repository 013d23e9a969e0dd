/**
 * An attacker that holds as many connections to a hub as it can from one
 * source address: silent sockets, headers trickled a line at a time, and
 * /mcp bodies that never finish (the slot attacks of docs/security.md).
 */
import net from 'node:net';

/**
 * Holds `count` connections to the hub from one source address, of three kinds in turn (a silent
 * socket, headers trickled a line at a time, a /mcp body that never finishes), reopening any the hub
 * closes until stopped. Resolves its counts on stop.
 */
export function connectionHog(port: number, localAddress: string, count: number): { open(): number; tried(): number; stop(): Promise<{ opened: number; refused: number }> } {
  // open(): how many it holds now.
  let stopped = false;
  let opened = 0;
  let refused = 0;
  /** Connected sockets and when they connected. */
  const live = new Map<net.Socket, number>();
  const timers = new Set<NodeJS.Timeout>();
  const one = (kind: number) => {
    if (stopped) return;
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    let connected = false;
    socket.on('error', () => {});
    socket.on('connect', () => {
      connected = true;
      opened++;
      live.set(socket, Date.now());
      const drip = (chunks: string[], i = 0) => {
        if (stopped || socket.destroyed) return;
        socket.write(chunks[i % chunks.length]!);
        const timer = setTimeout(() => { timers.delete(timer); drip(chunks, i + 1); }, 200);
        timers.add(timer);
      };
      if (kind === 1) {
        socket.write('POST /relays HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        drip(['X-Slow: 1\r\n']);
      } else if (kind === 2) {
        socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{');
        drip([' ']);
      }
    });
    socket.on('close', () => {
      live.delete(socket);
      const closedOnArrival = !connected || socket.bytesRead === 0;
      if (closedOnArrival) refused++;
      // Reopen, as an attacker would, to hold as many as it can: at once when the hub timed one out,
      // after a second when it was refused on arrival (a flood of connects is another attack).
      const timer = setTimeout(() => { timers.delete(timer); one(kind); }, closedOnArrival ? 1000 : 10);
      timers.add(timer);
    });
  };
  for (let i = 0; i < count; i++) one(i % 3);
  return {
    // Held: connected for over half a second (one closed on arrival is connected for a moment).
    open: () => [...live.values()].filter((at) => Date.now() - at > 500).length,
    // Connections it has opened or had closed on arrival: at least `count` once its first round is through.
    tried: () => opened + refused,
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      for (const socket of live.keys()) socket.destroy();
      return { opened, refused };
    },
  };
}
