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
