/**
 * Logging goes to stderr, always: in stdio mode stdout is the MCP channel and
 * one stray line there breaks every client. Never pass a key or a full
 * signature to a logger.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(level: LogLevel | 'silent' = 'info', write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const floor = level === 'silent' ? Infinity : RANK[level];
  const at = (l: LogLevel) => (message: string) => {
    if (RANK[l] >= floor) write(`p-e-relay ${l}: ${message}\n`);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export const silentLogger: Logger = createLogger('silent');

/** The level from P_E_RELAY_LOG (debug, info, warn, error, silent), info when unset. */
export function levelFromEnv(env: NodeJS.ProcessEnv = process.env): LogLevel | 'silent' {
  const v = env.P_E_RELAY_LOG;
  return v === 'debug' || v === 'info' || v === 'warn' || v === 'error' || v === 'silent' ? v : 'info';
}
