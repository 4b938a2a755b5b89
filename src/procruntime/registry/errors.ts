// Pull errors worded as containerd words them (users search for those texts), carrying the gRPC
// class of the runtime's errors so that the CRI status code says what kind of failure it was.
import { FailedPreconditionError, NotFoundError } from '../errors.js';

/** A NotFoundError with a message of our own (the base class appends " not found" itself). */
export function notFound(message: string): NotFoundError {
  const e = new NotFoundError('');
  e.message = message;
  return e;
}

/** containerd's wording for content whose digest or size is not the one asked for. */
export function unexpectedCommit(ref: string, what: 'digest' | 'size', got: string | number, want: string | number): FailedPreconditionError {
  return new FailedPreconditionError(`failed commit on ref "${ref}": ${what === 'size' ? 'commit failed: ' : ''}unexpected commit ${what} ${got}, expected ${want}: failed precondition`);
}

/** Puts context in front of an error's message, keeping its class (and so its gRPC code). */
export function withContext(err: unknown, context: string): Error {
  const e = err instanceof Error ? err : new Error(String(err));
  e.message = `${context}: ${e.message}`;
  return e;
}

/** An HTTP status the registry answered that the pull cannot go on from. */
export class UnexpectedStatusError extends Error {
  constructor(
    readonly method: string,
    readonly url: string,
    readonly status: number,
    readonly statusText: string,
    /** What the registry said, from its JSON `errors` (or the body's text). */
    readonly serverMessage: string,
  ) {
    super(`unexpected status from ${method} request to ${url}: ${status} ${statusText}${serverMessage ? `: ${serverMessage}` : ''}`);
    this.name = 'UnexpectedStatusError';
  }
}

interface RegistryErrorBody {
  errors?: Array<{ code?: unknown; message?: unknown }>;
  details?: unknown;
  error?: unknown;
  message?: unknown;
}

/**
 * The registry's own words from an error body: the distribution spec's `errors[]` as
 * `<code in lower case>: <message>` (as docker prints them), a token server's `details`/`error`,
 * or the text itself when it is short and not HTML.
 */
export function serverMessage(body: string): string {
  const text = body.trim();
  if (!text) return '';
  try {
    const parsed = JSON.parse(text) as RegistryErrorBody;
    if (Array.isArray(parsed.errors) && parsed.errors.length > 0) {
      return parsed.errors
        .map((e) => {
          const code = typeof e.code === 'string' ? e.code.toLowerCase().replace(/_/g, ' ') : '';
          const msg = typeof e.message === 'string' ? e.message : '';
          return code && msg && code !== msg.toLowerCase() ? `${code}: ${msg}` : msg || code;
        })
        .filter((s) => s)
        .join('; ');
    }
    for (const k of ['details', 'error', 'message'] as const) if (typeof parsed[k] === 'string' && parsed[k]) return parsed[k] as string;
    return '';
  } catch {
    return text.length <= 300 && !text.startsWith('<') ? text : '';
  }
}
