// Errors of the process runtime, each mapped to a gRPC status by the server.
export class NotFoundError extends Error {
  constructor(what: string) {
    super(`${what} not found`);
    this.name = 'NotFoundError';
  }
}

export class InvalidArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidArgumentError';
  }
}

export class FailedPreconditionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FailedPreconditionError';
  }
}

/** A call that ran out of its own time (ExecSync's timeout), as gRPC's DEADLINE_EXCEEDED. */
export class DeadlineExceededError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeadlineExceededError';
  }
}
