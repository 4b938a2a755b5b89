// Reads Prometheus' text exposition (what /metrics serves) into numbers by series (pure).

/** Each sample by its series as written (`name{a="x"}`), and each metric name's sum over its series. */
export interface Scrape {
  series: Map<string, number>;
  /** Sum of every series of a name (a counter or gauge with labels, summed). */
  sum(name: string): number;
  /** One series' value, by name and labels (undefined when absent). */
  get(name: string, labels?: Record<string, string>): number | undefined;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/;

function labelText(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

export function parseProm(text: string): Scrape {
  const series = new Map<string, number>();
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (Number.isNaN(value)) continue;
    series.set(`${m[1]}${m[2] ?? ''}`, value);
    sums.set(m[1]!, (sums.get(m[1]!) ?? 0) + value);
  }
  return {
    series,
    sum: (name) => sums.get(name) ?? 0,
    get: (name, labels = {}) => series.get(`${name}${labelText(labels)}`),
  };
}
