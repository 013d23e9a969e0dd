/**
 * What one tool is, with no MCP SDK in it: its contract (name, title,
 * description, schemas, annotations), its door facts, and the handler that
 * calls the store. Each tool's file exports one such definition and
 * tools/index.ts lists them; lib/mcp/server.ts is the one place that hands
 * them to the SDK. The HTTP door, the bridge's signing and its call timeout
 * read the door facts from that table, so each fact is written once.
 */
import type { z } from 'zod';
import type { IdShape } from '../../model/ids.js';
import type { RelayStore } from '../../store/store.js';
import type { Admission, Grant } from '../../doors/door.js';

/**
 * What a tool's contract is built from: the store's id width, and nothing
 * else. Every door (stdio, named or not; the hub's /mcp; the bridge; a
 * replica) lists the same text, so a tool's words cannot depend on who is
 * calling or through which door; the agent's name lives in the server's
 * instructions (lib/mcp/instructions.ts).
 */
export interface ToolFacts {
  readonly shape: IdShape;
}

export interface ToolContract<Input extends z.ZodRawShape> {
  description: string;
  input: Input;
  output?: z.ZodRawShape;
}

/** MCP's behaviour hints (the title is added from the definition's own). */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** What the doors need to know about a tool, besides its contract. */
export interface DoorFacts extends Admission {
  /** What it takes from a hub's budget: an append from its agent's rate, or a wait slot held until it answers. */
  readonly spends: 'append' | 'wait' | null;
  /** Sends progress notifications while it runs when the call carries a progress token (so /mcp answers it as an event stream). */
  readonly progress: boolean;
  /**
   * The longest the hub may hold a call with these arguments before answering (`progress`: the call carries a
   * progress token); absent when it answers at once.
   */
  holdsMs?(args: Record<string, unknown> | undefined, progress: boolean): number;
  /** The arguments with the call's window cut to at most `ms` (a door that must answer sooner than the hub would hold it). */
  within?(args: Record<string, unknown> | undefined, ms: number): Record<string, unknown>;
}

export interface ToolCall {
  /** What the door granted: the deposited-by label, and a signal for a door that closes under the call. */
  grant: Grant;
  /** Aborts when the client cancels or goes away, or the door closes under the call. */
  signal: AbortSignal;
  /** Tells the caller how far along the call is; present only when the tool streams progress and the caller asked for it. */
  progress?: (progress: number, message: string) => void;
  /** The session the call names ('' for none): what a named agent is given is pending for that session alone. */
  session?: string;
}

/** A tool's answer: the text every door prints, and the structured content matching its output schema. */
export interface Answer {
  text: string;
  structured?: Record<string, unknown>;
}

export interface ToolDefinition<Input extends z.ZodRawShape = z.ZodRawShape> {
  readonly name: string;
  readonly title: string;
  readonly hints: ToolHints;
  readonly door: DoorFacts;
  contract(facts: ToolFacts): ToolContract<Input>;
  /** Runs the call against the store; a refusal is a thrown RelayError. */
  run(store: RelayStore, args: z.infer<z.ZodObject<Input>>, call: ToolCall): Promise<Answer>;
}

/** Checks a definition against the type while keeping its own input type for `run`. */
export function defineTool<Input extends z.ZodRawShape>(definition: ToolDefinition<Input>): ToolDefinition<Input> {
  return definition;
}

/** The door facts of a read: unsigned, spends nothing, answers at once. */
export const READ: DoorFacts = { signed: false, spends: null, progress: false };
