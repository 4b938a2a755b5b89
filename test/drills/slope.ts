// Least-squares lines through sampled figures (pure): the churn drill prints each figure's slope
// per minute, whose goal is flat, and compares a figure's level before and after.

export interface Point {
  /** Seconds. */
  t: number;
  y: number;
}

export interface Line {
  /** Units of y per second. */
  slope: number;
  intercept: number;
  /** How many points it was fitted to. */
  n: number;
}

/** The ordinary least-squares line through the points; slope 0 with fewer than two distinct times. */
export function fitLine(points: readonly Point[]): Line {
  const n = points.length;
  if (n === 0) return { slope: 0, intercept: 0, n };
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.t - mt) * (p.y - my);
    sxx += (p.t - mt) ** 2;
  }
  // All at one time: no direction to speak of.
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: my - slope * mt, n };
}

/** The slope per minute of the points from `fromT` on (after a warm-up). */
export function slopePerMinute(points: readonly Point[], fromT = -Infinity): number {
  return fitLine(points.filter((p) => p.t >= fromT)).slope * 60;
}

/** The mean of the points' values (NaN when there are none). */
export function mean(points: readonly Point[]): number {
  return points.length ? points.reduce((a, p) => a + p.y, 0) / points.length : NaN;
}
