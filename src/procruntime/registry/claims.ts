// Which blobs and layers pulls under way use: a failed pull removes what it fetched, and an image
// removal what it held, but never what another pull is about to use.
export type ContentKind = 'blob' | 'layer';

export class Claims {
  private readonly counts = new Map<string, number>();

  /** A pull's set of claims, released together when it ends. */
  session(): ClaimSession {
    return new ClaimSession(this.counts);
  }

  /** How many pulls claim it. */
  count(kind: ContentKind, id: string): number {
    return this.counts.get(`${kind}:${id}`) ?? 0;
  }
}

export class ClaimSession {
  readonly held = new Set<string>();

  constructor(private readonly counts: Map<string, number>) {}

  claim(kind: ContentKind, id: string): void {
    const key = `${kind}:${id}`;
    if (this.held.has(key)) return;
    this.held.add(key);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** Each claim as [kind, id]. */
  entries(): Array<[ContentKind, string]> {
    return [...this.held].map((k) => {
      const i = k.indexOf(':');
      return [k.slice(0, i) as ContentKind, k.slice(i + 1)];
    });
  }

  release(): void {
    for (const key of this.held) {
      const n = (this.counts.get(key) ?? 1) - 1;
      if (n > 0) this.counts.set(key, n);
      else this.counts.delete(key);
    }
    this.held.clear();
  }
}
