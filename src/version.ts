// nodelet's version, from package.json (one source of truth).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const NODELET_VERSION = (JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string }).version;
