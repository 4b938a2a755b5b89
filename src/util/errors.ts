// Several errors as Go's aggregate error prints them, which the kubelet's messages carry: one
// alone, more in brackets joined by ", ", a repeated message once.
export function aggregateErrors(errors: string[]): string | undefined {
  const unique = [...new Set(errors)];
  if (unique.length === 0) return undefined;
  return unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
}
