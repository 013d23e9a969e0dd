/**
 * Which machine, and which boot of it, this process runs on.
 *
 * A pid means something only on the host that issued it, and only until that
 * host reboots. Several hosts can share one corpus (NFS, sshfs), so anything
 * that judges another process by its pid (temp files in `verify --clean`, a
 * claim's liveness) must first ask whether that process ran here, in this
 * boot. Kept small and pure so other parts of the store can use it.
 *
 * - host: `P_E_RELAY_HOST` when set (containers that all call themselves
 *   `localhost`), else the hostname, reduced to [A-Za-z0-9_-].
 * - boot: the first 8 hex digits of the kernel's boot id (Linux), else a
 *   value derived from the boot time, so the same host after a reboot is told
 *   apart from the host before it.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface HostIdentity {
  /** The host's name, safe in a file name (no dots, so names split cleanly). */
  readonly host: string;
  /** This boot of it. */
  readonly boot: string;
}

let cached: HostIdentity | null = null;

export function hostIdentity(): HostIdentity {
  return (cached ??= { host: safe(process.env.P_E_RELAY_HOST || os.hostname()) || 'host', boot: bootId() });
}

/** `host.boot`, e.g. `build-7.18d580ac`: one token naming this boot of this host. */
export function hostTag(id: HostIdentity = hostIdentity()): string {
  return `${id.host}.${id.boot}`;
}

/** Where a process identified by (host, boot, pid) ran, as seen from here. */
export type Whereabouts = 'this-boot' | 'earlier-boot' | 'other-host';

export function whereabouts(host: string, boot: string, here: HostIdentity = hostIdentity()): Whereabouts {
  if (host !== here.host) return 'other-host';
  return boot === here.boot ? 'this-boot' : 'earlier-boot';
}

/**
 * Whether a process of this host and boot still runs. EPERM means it runs
 * under another user. Only meaningful for whereabouts 'this-boot'.
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function safe(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64);
}

function bootId(): string {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/[^0-9a-f]/g, '');
    if (id.length >= 8) return id.slice(0, 8);
  } catch {
    // not Linux: fall back to the boot time
  }
  // Boot time to the minute, so uptime's drift against the clock does not change it.
  const bootMinute = Math.round((Date.now() / 1000 - os.uptime()) / 60);
  return bootMinute.toString(16).padStart(8, '0').slice(-8);
}
