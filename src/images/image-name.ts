// Whether an image reference parses as the kubelet parses it (the distribution project's grammar,
// with Docker Hub's normalization) before anything is asked of the runtime: a reference that does
// not parse is InvalidImageName at once, with the parser's own words, and no pull is tried.

const ALNUM = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const PATH_COMPONENT = `${ALNUM}(?:${SEPARATOR}${ALNUM})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[(?:[a-fA-F0-9:]+)\\])`;
const DOMAIN = `${HOST}(?::[0-9]+)?`;
const NAME = `(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(`^(${NAME})(?::(${TAG}))?(?:@(${DIGEST}))?$`);
const DOMAIN_AND_PATH = new RegExp(`^(${DOMAIN})/(.*)$`);
/** Digest algorithms a registry client can verify, with their hex lengths. */
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

function digestProblem(digest: string): string | undefined {
  const i = digest.indexOf(':');
  const algorithm = digest.slice(0, i);
  const encoded = digest.slice(i + 1);
  const length = DIGEST_HEX_LENGTH[algorithm];
  if (length === undefined) return /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(digest) ? 'unsupported digest algorithm' : 'invalid checksum digest format';
  if (encoded.length !== length) return 'invalid checksum digest length';
  return /^[a-f0-9]+$/.test(encoded) ? undefined : 'invalid checksum digest format';
}

/** Splits off the registry as Docker Hub's normalization does: a first part with "." or ":", "localhost", or upper case. */
function splitDomain(image: string): { domain: string; remainder: string } {
  const slash = image.indexOf('/');
  if (slash < 0) return { domain: 'docker.io', remainder: `library/${image}` };
  const first = image.slice(0, slash);
  const rest = image.slice(slash + 1);
  if (first === 'localhost' || /[.:]/.test(first) || first.toLowerCase() !== first) return { domain: first === 'index.docker.io' ? 'docker.io' : first, remainder: rest };
  return { domain: 'docker.io', remainder: image };
}

/** What is wrong with an image reference, in the parser's words, or undefined when it parses. */
export function imageNameProblem(image: string): string | undefined {
  if (/^[a-f0-9]{64}$/.test(image)) return `invalid repository name (${image}), cannot specify 64-byte hexadecimal strings`;
  const { domain, remainder } = splitDomain(image);
  const colon = remainder.indexOf(':');
  const remote = colon >= 0 ? remainder.slice(0, colon) : remainder;
  if (remote.toLowerCase() !== remote) return `invalid reference format: repository name (${remote}) must be lowercase`;
  const full = `${domain}/${remainder}`;
  const m = REFERENCE.exec(full);
  if (!m) return REFERENCE.test(full.toLowerCase()) ? 'repository name must be lowercase' : 'invalid reference format';
  const path = DOMAIN_AND_PATH.exec(m[1]!)?.[2] ?? m[1]!;
  if (path.length > 255) return 'repository name must not be more than 255 characters';
  return m[3] ? digestProblem(m[3]) : undefined;
}

/** The kubelet's InvalidImageName message for a reference that does not parse, or undefined. */
export function invalidImageNameMessage(image: string): string | undefined {
  const problem = imageNameProblem(image);
  return problem === undefined ? undefined : `Failed to apply default image tag "${image}": couldn't parse image name "${image}": ${problem}`;
}
