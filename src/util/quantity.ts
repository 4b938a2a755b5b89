// Kubernetes resource quantities ("100m", "1.5", "64Mi", "1G", "2e3") as numbers.

const binary: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const decimal: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

export class QuantityError extends Error {
  constructor(readonly input: string) {
    super(`invalid quantity ${JSON.stringify(input)}`);
    this.name = 'QuantityError';
  }
}

/** Parses a quantity to its value in base units (cores for cpu, bytes for memory). */
export function parseQuantity(input: string | number): number {
  if (typeof input === 'number') return input;
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/.exec(input.trim());
  if (!m) throw new QuantityError(input);
  const value = Number(m[1]);
  if (m[2]) return value * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? '';
  return value * (binary[suffix] ?? decimal[suffix]!);
}

/** CPU in millicores, rounded up as the kubelet's MilliValue does. */
export function milliCPU(input: string | number): number {
  return Math.ceil(parseQuantity(input) * 1000 - 1e-9);
}

/** Memory in bytes, rounded up. */
export function bytes(input: string | number): number {
  return Math.ceil(parseQuantity(input) - 1e-9);
}
