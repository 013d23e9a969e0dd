/**
 * Counters for GET /metrics, in the Prometheus text format. They count what
 * this hub process told its clients: appends it stored per door, refusals
 * per code (HTTP-level ones and tool refusals over /mcp alike), waits and
 * streams open now, slow subscribers dropped, ids lost to other writers.
 */

export class HubMetrics {
  private readonly appends = new Map<string, number>();
  private readonly refusals = new Map<string, number>();
  private dropped = 0;

  appended(door: 'mcp' | 'http'): void {
    this.appends.set(door, (this.appends.get(door) ?? 0) + 1);
  }

  refused(code: string): void {
    this.refusals.set(code, (this.refusals.get(code) ?? 0) + 1);
  }

  droppedSubscriber(): void {
    this.dropped++;
  }

  refusalCount(code: string): number {
    return this.refusals.get(code) ?? 0;
  }

  render(gauges: { records: number; waits: number; streams: number; ready: boolean; idsLost: number }): string {
    const lines: string[] = [];
    const metric = (name: string, type: 'gauge' | 'counter', help: string, samples: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`);
    };
    const labelled = (label: string, map: Map<string, number>, always: string[] = []) => {
      const keys = [...new Set([...always, ...map.keys()])].sort();
      return keys.map((k): [string, number] => [`{${label}="${k}"}`, map.get(k) ?? 0]);
    };
    metric('p_e_relay_records', 'gauge', 'Records held in this hub\'s index.', [['', gauges.records]]);
    metric('p_e_relay_ready', 'gauge', '1 once the start-up scan of the corpus is done.', [['', gauges.ready ? 1 : 0]]);
    metric('p_e_relay_appends_total', 'counter', 'Records this hub stored, by door (mcp: POST /mcp, http: POST /relays).', labelled('door', this.appends, ['http', 'mcp']));
    metric('p_e_relay_refusals_total', 'counter', 'Refusals this hub answered, by error code.', labelled('code', this.refusals));
    metric('p_e_relay_active_waits', 'gauge', 'wait_for_relay calls blocked right now.', [['', gauges.waits]]);
    metric('p_e_relay_active_streams', 'gauge', 'Open GET /events streams.', [['', gauges.streams]]);
    metric('p_e_relay_dropped_subscribers_total', 'counter', 'SSE subscribers dropped for reading too slowly.', [['', this.dropped]]);
    metric('p_e_relay_ids_lost_total', 'counter', 'Ids another writer on this corpus linked first while this hub tried them, each a failed link(): how contended appends are.', [['', gauges.idsLost]]);
    return lines.join('\n') + '\n';
  }
}
