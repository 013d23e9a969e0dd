/**
 * stdin/stdout as an MCP transport for the SDK's `serveStdio`, used by both
 * stdio doors (`serve` and `bridge`). The SDK's own closes the moment input
 * ends and drops the answers to calls still in flight; this one reports the
 * end and goes on writing, so a door can let those calls finish.
 */
import { deserializeMessage, serializeMessage, STDIO_DEFAULT_MAX_BUFFER_SIZE, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/server';

/**
 * The longest line a client may send. The SDK's default (10 MiB) ends the
 * session on any longer line, but a record the store takes can be longer as
 * JSON: JSON.stringify writes a control character such as U+0001 as six
 * characters. So: six times the record limit, plus room for the envelope.
 */
export function maxLineBytes(maxRecordBytes: number): number {
  return Math.max(STDIO_DEFAULT_MAX_BUFFER_SIZE, 6 * maxRecordBytes + 64 * 1024);
}

/**
 * stdin/stdout as an MCP transport that, unlike the SDK's, does not close
 * when input ends: it reports the end (`onended`) and goes on writing until
 * every request it delivered has been answered or cancelled, so that the
 * door can let calls in flight finish (`drained`) before it closes.
 */
export class DrainingStdio implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Input ended (or stdout broke): nothing more will arrive. */
  onended?: () => void;

  private partial: Buffer[] = [];
  private partialBytes = 0;
  private readonly pending = new Set<string | number>();
  private ended = false;
  private closed = false;
  private broken = false;
  private wake = () => {};

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
    private readonly maxBufferSize: number,
  ) {}

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('error', this.onInputError);
    this.input.once('end', this.end);
    this.input.once('close', this.end);
    // A client that is gone cannot read its answers: writing to it fails with EPIPE.
    this.output.on('error', this.onOutputError);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message && !('method' in message)) this.settle(message.id as string | number);
    if (this.closed || this.broken) return;
    const json = serializeMessage(message);
    if (!this.output.write(json)) await new Promise<void>((resolve) => this.output.once('drain', resolve));
  }

  /** Resolves once every delivered request is answered or cancelled, stdout broke, or `timeoutMs` passed. */
  drained(timeoutMs: number): Promise<void> {
    if (this.pending.size === 0 || this.broken) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs).unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('error', this.onInputError);
    this.partial = [];
    this.end();
    this.onclose?.();
  }

  private readonly onData = (chunk: Buffer) => {
    // Pieces of a line not yet ended are kept apart and joined once, so a
    // 12 MiB line costs one copy, not one per 64 KiB chunk.
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a)) {
      if (!this.grow(nl)) return;
      const line = Buffer.concat([...this.partial, chunk.subarray(0, nl)]).toString('utf8').replace(/\r$/, '');
      this.partial = [];
      this.partialBytes = 0;
      chunk = chunk.subarray(nl + 1);
      this.deliver(line);
    }
    if (chunk.length > 0 && this.grow(chunk.length)) {
      this.partial.push(chunk);
      this.partialBytes += chunk.length;
    }
  };

  /** Whether a line may grow by `bytes`; past the limit the session cannot go on (the rest of the line would be read as new messages). */
  private grow(bytes: number): boolean {
    if (this.partialBytes + bytes <= this.maxBufferSize) return true;
    this.partial = [];
    this.partialBytes = 0;
    this.onerror?.(new Error(`a line exceeded maximum size of ${this.maxBufferSize} bytes; closing the session`));
    this.end();
    return false;
  }

  private deliver(line: string): void {
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line);
    } catch (err) {
      // Not JSON-RPC: say so where the operator looks, and read on.
      this.onerror?.(new Error(`ignored a line that is not a JSON-RPC message (${(err as Error).message.split('\n')[0]})`));
      return;
    }
    this.track(message);
    this.onmessage?.(message);
  }

  private track(message: JSONRPCMessage): void {
    if ('method' in message && 'id' in message) this.pending.add(message.id);
    else if ('method' in message && message.method === 'notifications/cancelled') this.settle((message.params as { requestId?: string | number } | undefined)?.requestId);
  }

  private settle(id: string | number | undefined): void {
    if (id !== undefined && this.pending.delete(id) && this.pending.size === 0) this.wake();
  }

  private readonly onInputError = (err: Error) => this.onerror?.(err);

  private readonly onOutputError = () => {
    this.broken = true;
    this.wake();
    this.end();
  };

  private readonly end = () => {
    if (this.ended) return;
    this.ended = true;
    this.input.off('data', this.onData);
    // Nothing more is read: let the process exit once its work is done (as the SDK's transport does).
    (this.input as NodeJS.ReadableStream & { pause(): void }).pause();
    this.onended?.();
  };
}
