// Typed CRI errors. Callers branch on the class (or `code`), never on message text.
import { status as GrpcStatus } from '@grpc/grpc-js';

export type CriErrorCode = 'NotFound' | 'Unavailable' | 'DeadlineExceeded' | 'Unimplemented' | 'InvalidArgument' | 'Unknown';

export class CriError extends Error {
  constructor(
    readonly code: CriErrorCode,
    readonly method: string,
    readonly endpoint: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CriError';
  }
}

/** The object (sandbox, container, image) the call names does not exist in the runtime. */
export class CriNotFoundError extends CriError {
  constructor(method: string, endpoint: string, detail: string, options?: { cause?: unknown }) {
    super('NotFound', method, endpoint, `${method}: not found: ${detail}`, options);
    this.name = 'CriNotFoundError';
  }
}

/** Nothing answers at the endpoint, or the connection broke. */
export class RuntimeUnavailableError extends CriError {
  constructor(method: string, endpoint: string, detail: string, options?: { cause?: unknown }) {
    super('Unavailable', method, endpoint, `container runtime is not reachable at ${endpoint} (${method}): ${detail}`, options);
    this.name = 'RuntimeUnavailableError';
  }
}

export class CriDeadlineExceededError extends CriError {
  constructor(method: string, endpoint: string, timeoutMs: number, options?: { cause?: unknown }) {
    super('DeadlineExceeded', method, endpoint, `${method} on ${endpoint} did not answer within ${timeoutMs} ms`, options);
    this.name = 'CriDeadlineExceededError';
  }
}

/** The runtime speaks a CRI API version the runtime manager does not support (the seed's ErrVersionNotSupported). */
export class VersionNotSupportedError extends Error {
  constructor(readonly runtimeApiVersion: string, readonly supported: string) {
    super(`runtime api version is not supported: runtime answered ${JSON.stringify(runtimeApiVersion)}, nodelet supports ${supported}`);
    this.name = 'VersionNotSupportedError';
  }
}

export function isNotFound(err: unknown): err is CriNotFoundError {
  return err instanceof CriError && err.code === 'NotFound';
}

export function isUnavailable(err: unknown): err is RuntimeUnavailableError {
  return err instanceof CriError && err.code === 'Unavailable';
}

interface GrpcLikeError {
  code?: number;
  details?: string;
  message?: string;
}

/** Shortens grpc-js's connection failure text ("No connection established. Last error: ...") to its cause. */
function connectionDetail(details: string): string {
  const m = /Last error: (?:Error: )?(.*?)(?: \(\d{4}-\d\d-\d\dT[^)]*\))?$/.exec(details);
  const cause = (m?.[1] ?? details).trim();
  if (/ENOENT/.test(cause)) return 'no socket at that path (is the runtime running?)';
  if (/ECONNREFUSED/.test(cause)) return 'connection refused (the socket exists but nothing listens)';
  if (/EACCES/.test(cause)) return 'permission denied on the socket';
  return cause || 'connection failed';
}

/** Maps a grpc-js error to a typed CriError naming the method and endpoint. */
export function fromGrpcError(err: unknown, method: string, endpoint: string, timeoutMs: number): CriError {
  const e = (err ?? {}) as GrpcLikeError;
  const details = e.details ?? e.message ?? String(err);
  switch (e.code) {
    case GrpcStatus.NOT_FOUND:
      return new CriNotFoundError(method, endpoint, details, { cause: err });
    case GrpcStatus.UNAVAILABLE:
      return new RuntimeUnavailableError(method, endpoint, connectionDetail(details), { cause: err });
    case GrpcStatus.DEADLINE_EXCEEDED:
      return new CriDeadlineExceededError(method, endpoint, timeoutMs, { cause: err });
    case GrpcStatus.UNIMPLEMENTED:
      return new CriError('Unimplemented', method, endpoint, `the runtime at ${endpoint} does not offer ${method}`, { cause: err });
    case GrpcStatus.INVALID_ARGUMENT:
      return new CriError('InvalidArgument', method, endpoint, `${method}: ${details}`, { cause: err });
    default:
      return new CriError('Unknown', method, endpoint, `${method}: ${details}`, { cause: err });
  }
}

/**
 * An error as the kubelet's messages quote a runtime's: `rpc error: code = NotFound desc = ...`
 * for what the runtime answered (users search for these texts), our own text for anything else.
 */
export function criErrorText(err: unknown): string {
  const cause = (err instanceof CriError ? err.cause : err) as GrpcLikeError | undefined;
  if (cause && typeof cause.code === 'number' && typeof cause.details === 'string' && cause.code !== GrpcStatus.UNAVAILABLE) {
    const name = (GrpcStatus[cause.code] ?? 'Unknown').toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
    return `rpc error: code = ${name === 'Ok' ? 'OK' : name} desc = ${cause.details}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * The runtime's own message (a gRPC status's description), as the kubelet quotes it in a container's
 * waiting message and its "Error: ..." events; our own text for anything the runtime did not answer.
 */
export function criStatusMessage(err: unknown): string {
  const cause = (err instanceof CriError ? err.cause : err) as GrpcLikeError | undefined;
  if (cause && typeof cause.code === 'number' && typeof cause.details === 'string' && cause.code !== GrpcStatus.UNAVAILABLE) return cause.details;
  return err instanceof Error ? err.message : String(err);
}
