// Environment files (env[].valueFrom.fileKeyRef, the EnvFiles feature): a variable read from a file
// in one of the pod's emptyDir volumes, typically written by an init container. The file's syntax
// is the kubelet's strict subset of the shell's: KEY='value', values in single quotes (taken
// literally, over several lines if need be), comments and blank lines skipped.

export class EnvFileSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvFileSyntaxError';
  }
}

/** The value of `key` in the file's text; '' when it is not there (as the kubelet's parser says it). */
export function envFileValue(text: string, key: string): string {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const lineNum = i + 1;
    const line = lines[i]!.replace(/^[ \t]+/, '');
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) throw new EnvFileSyntaxError(`invalid environment variable format at line ${lineNum}: missing '='`);
    const namePart = line.slice(0, eq);
    const name = namePart.replace(/[ \t]+$/, '');
    if (name === '') throw new EnvFileSyntaxError(`invalid environment variable format at line ${lineNum}: empty variable name`);
    if (name !== namePart) throw new EnvFileSyntaxError(`invalid environment variable format at line ${lineNum}: whitespace before '=' is not allowed`);
    const valuePart = line.slice(eq + 1);
    const trimmed = valuePart.replace(/^[ \t]+/, '');
    // KEY= 'v' assigns the empty string, as the shell does.
    if (trimmed !== valuePart) {
      if (name === key) return '';
      continue;
    }
    if (!trimmed.startsWith("'")) throw new EnvFileSyntaxError(`invalid environment variable format at line ${lineNum}: value must be enclosed in single quotes`);
    let rest = trimmed.slice(1);
    let value = '';
    const start = lineNum;
    for (;;) {
      const close = rest.indexOf("'");
      if (close >= 0) {
        value += rest.slice(0, close);
        const after = rest.slice(close + 1).replace(/^[ \t]+/, '');
        if (after !== '' && !after.startsWith('#')) throw new EnvFileSyntaxError(`invalid environment variable format at line ${i + 1}: unexpected content after closing quote`);
        if (name === key) return value;
        break;
      }
      value += `${rest}\n`;
      i++;
      if (i >= lines.length) throw new EnvFileSyntaxError(`invalid environment variable format starting at line ${start}: unclosed single quote`);
      rest = lines[i]!;
    }
  }
  return '';
}
