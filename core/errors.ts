/**
 * FlowcatError: the one error type the runtime throws for expected faults.
 *
 * @example
 * ```ts
 * import { FlowcatError } from "@flowcat/flowcat";
 * throw new FlowcatError("config", "providers.llm.name: unknown provider");
 * ```
 * @module
 */

/** What kind of fault a {@link FlowcatError} is. */
export type FlowcatErrorKind =
  | "other"
  | "config"
  | "protocol"
  | "timeout"
  | "closed"
  | "auth"
  | "not_wired";

/** The runtime's error type. `kind` says what went wrong; the message never holds a secret. */
export class FlowcatError extends Error {
  /** What kind of fault this is. */
  readonly kind: FlowcatErrorKind;

  /** Make an error of `kind` with a user-readable message. */
  constructor(kind: FlowcatErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FlowcatError";
    this.kind = kind;
  }

  /** An error of kind `other`: none of the specific kinds applies. */
  static other(message: string): FlowcatError {
    return new FlowcatError("other", message);
  }

  /** The `'<provider>: not yet wired'` error for a provider named but not implemented. */
  static notWired(provider: string): FlowcatError {
    return new FlowcatError("not_wired", `${provider}: not yet wired`);
  }
}

/** The message of any thrown value, for logs and Error frames. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === "string" ? err : String(err);
}

/**
 * `err`'s message said by `name`: `name: message`, unless the message already starts with
 * `name: ` (provider errors name their provider themselves).
 *
 * @example
 * ```ts
 * namedMessage("whisper", new Error("whisper: HTTP 503")); // "whisper: HTTP 503"
 * namedMessage("whisper", new Error("socket closed")); // "whisper: socket closed"
 * ```
 */
export function namedMessage(name: string, err: unknown): string {
  const m = errorMessage(err);
  return m.startsWith(`${name}: `) ? m : `${name}: ${m}`;
}
