// winston logs: JSON in production, readable text on a terminal. Lines about a pod carry pod and uid.
import winston from 'winston';
import type { V1Pod } from '@kubernetes/client-node';

export type Logger = winston.Logger;
export type LogFormat = 'json' | 'text';
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export function createLogger(opts: { level?: LogLevel; format?: LogFormat; silent?: boolean } = {}): Logger {
  const format = opts.format ?? (process.stderr.isTTY ? 'text' : 'json');
  const text = winston.format.printf(({ level, message, timestamp, ...rest }) => {
    const fields = Object.entries(rest)
      .filter(([k]) => typeof k === 'string')
      .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`)
      .join(' ');
    return `${timestamp} ${level.toUpperCase().padEnd(5)} ${message}${fields ? ` ${fields}` : ''}`;
  });
  return winston.createLogger({
    level: opts.level ?? 'info',
    silent: opts.silent,
    format: winston.format.combine(winston.format.timestamp(), format === 'json' ? winston.format.json() : text),
    transports: [new winston.transports.Stream({ stream: process.stderr })],
  });
}

/** A logger for tests and tools that must stay quiet. */
export function silentLogger(): Logger {
  return createLogger({ silent: true });
}

/** `ns/name` as the kubelet prints pods (format.Pod). */
export function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

export function podFields(pod: V1Pod): { pod: string; uid: string } {
  return { pod: podKey(pod), uid: pod.metadata?.uid ?? '' };
}
